"""How the cockpit lets Python's garbage collector run.

A full collection walks every object the process holds and stops both threads while it does (the
pipeline's and the screen's); a cockpit filling its panes under a flood holds a few hundred thousand
(lines, their classifications, Textual's rendered strips) and grows by a quarter every few seconds,
which is what makes Python run one: 100 to 300 ms each on a shared two-core machine, several in the
first ten seconds of a flood and one every few seconds after, each a stall of the screen and of every
line waiting for it. While the cockpit runs, what exists when it starts (the catalogue, the compiled
patterns, Textual itself) is frozen out of collections, the young generations are collected as
usual (they catch most cycles), and a full collection runs once every :data:`FULL_EVERY` seconds
instead of whenever the heap has grown; everything is as it was when the cockpit stops.
"""

from __future__ import annotations

import gc

#: Seconds between two full collections while the cockpit runs.
FULL_EVERY = 60.0
#: A threshold the count of young collections never reaches: no full collection by itself.
NEVER = 2**31 - 1


class Collector:
    """When the cockpit lets Python's garbage collector run (see the module's docstring)."""

    def __init__(self) -> None:
        self.saved: tuple[int, int, int] | None = None

    def hold(self) -> None:
        if self.saved is None:
            self.saved = gc.get_threshold()
            gc.freeze()
            gc.set_threshold(self.saved[0], self.saved[1], NEVER)

    def release(self) -> None:
        if self.saved is not None:
            gc.set_threshold(*self.saved)
            gc.unfreeze()
            self.saved = None

    @staticmethod
    def full() -> None:
        gc.collect()
