"""How the cockpit writes what its sources have read: sizes, and how far a big file has got."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass

from sparktui.core.events import State, StateChange
from sparktui.core.pipeline import Tally
from sparktui.core.sources.base import Extent
from sparktui.core.words import size, unit

#: A source is shown as being read while this many bytes of it or more are still to read (a followed file
#: being written is always a few lines ahead of what was read: that is not worth a per cent).
BEHIND = 64 << 10


def progress(extent: Extent | None) -> str | None:
    """How far a source has been read, while a good part of its size is still to read; else None."""
    if extent is None or extent.size is None or extent.size - extent.read < BEHIND:
        return None
    return reading(extent.read, extent.size)


def reading(read: int, total: int) -> str:
    """``12.5 of 64.0 MiB read (19%)``: both in the unit of the total."""
    percent = min(100 * read // total, 100) if total else 100
    scale, _ = unit(total)
    done = str(read) if scale == 1 else f"{read / scale:.1f}"
    return f"{done} of {size(total)} read ({percent}%)"


def share(read: int, total: int) -> str:
    """``19% of 64.0 MiB``."""
    return f"{min(100 * read // total, 100) if total else 100}% of {size(total)}"


@dataclass(frozen=True, slots=True)
class Census:
    """All the sources at a glance: how many are in each state (most first), and the bytes read of those
    with a size, of their sizes. Made on the cockpit's worker thread: a pass over thousands of sources
    each frame is not for the screen's."""

    states: tuple[tuple[State, int], ...] = ()
    read: int = 0
    size: int = 0

    @classmethod
    def of(cls, states: Mapping[str, StateChange], tallies: Mapping[str, Tally]) -> Census:
        read = size = 0
        for tally in tallies.values():
            extent = tally.extent
            if extent is not None and extent.size:
                read, size = read + min(extent.read, extent.size), size + extent.size
        return cls(tuple(Counter(change.state for change in states.values()).most_common()), read, size)

    def count(self, *states: State) -> int:
        return sum(n for state, n in self.states if state in states)
