"""The core, in the order of the pipeline: ``sources/`` (where lines come from) → ``classify`` → ``analysis/``
(scan per source, correlate in one place) → ``remedy/`` and ``report/``, driven by ``pipeline``; ``remote/`` is
the only way to a node. Nothing in this package imports a user interface toolkit.
"""
