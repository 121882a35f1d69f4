"""The scan half of the analysis run on the nodes themselves, next to their logs, as Ray actors.

``shipment`` packs sparktui's core and the catalogue into the Ray runtime environment that reaches every node;
``scanner`` is what runs there (one actor per node); ``nodes`` places the actors, streams back what they
found, and falls back to pulling a node's logs when its actor cannot run.
"""
