"""Where every rank of a hung job is: its stacks gathered from the nodes (``gather``), read (``dump``),
placed by the wait kinds of ``diagnostics/stacks/`` (``kinds``) and compared across the ranks of a group
(``compare``); and PyTorch's flight-recorder dumps, read without torch (``flight``)."""
