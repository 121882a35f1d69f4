"""The hand-over protocol of a scan made elsewhere (a worker process, a node): what it hands over, how its
end is marked, and how hand-overs of many sources are let through in a given order.

A scan hands over :class:`~sparktui.core.analysis.scan.Scanned` values block after block, then one
:class:`Done` per source; :class:`InOrder` holds them back so that a correlation sees the sources one after
another, however they were scanned.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

from sparktui.core.analysis.scan import Scanned


@dataclass(frozen=True, slots=True)
class Done:
    """A source was scanned to its end, or stopped with ``error`` (what was read of it before stays)."""

    source: str
    error: str = ""


class InOrder:
    """Hand-overs of many sources, scanned side by side, let through source after source in a given order:
    what a source hands over waits here until every source before it is done. The correlation then sees
    what one scan of the sources one after another would have shown it, so a diagnosis does not depend on
    how many scanned them (workers, nodes) or on their timing: the first evidence kept of a signature seen
    in several sources, and where it was first seen, are those of the earliest source. Sources can be added
    at the end while it runs (:meth:`extend`)."""

    def __init__(self, names: Sequence[str] = ()) -> None:
        self._order: list[str] = []
        self._waiting: dict[str, deque[Scanned | Done]] = {}
        self._at = 0
        self.extend(names)

    def extend(self, names: Sequence[str]) -> None:
        for name in names:
            if name not in self._waiting:
                self._order.append(name)
                self._waiting[name] = deque()

    @property
    def complete(self) -> bool:
        """Whether every source is done and all it handed over was let through."""
        return self._at >= len(self._order)

    def unfinished(self) -> list[str]:
        """The sources not done yet."""
        return [n for n in self._order[self._at :] if not any(isinstance(i, Done) for i in self._waiting[n])]

    def add(self, item: Scanned | Done) -> list[Scanned | Done]:
        """Take one source's next hand-over (or its end); returns what may be merged now, in order."""
        self.extend([item.source])
        self._waiting[item.source].append(item)
        ready: list[Scanned | Done] = []
        while self._at < len(self._order) and (backlog := self._waiting[self._order[self._at]]):
            while backlog:
                ready.append(backlog.popleft())
                if isinstance(ready[-1], Done):
                    self._at += 1
                    break
        return ready
