"""The contract between a scan run on the nodes and the pipeline that correlates what it finds.

An :class:`EdgeScan` is an input of the pipeline that reads its logs elsewhere (``RayEdge``: as Ray actors on
the cluster's nodes) and hands over what the scan half of the analysis made of them, through a :class:`Sink`.
Kept apart from the Ray edge itself, so that the pipeline imports neither Ray nor the edge's machinery.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Protocol

from sparktui.core.analysis.pool import Done
from sparktui.core.analysis.scan import Scanned
from sparktui.core.events import StateChange
from sparktui.core.sources.base import LiveSource


class Sink(Protocol):
    """Where an edge scan's results go (the pipeline)."""

    def listed(self, sources: Sequence[tuple[str, str]]) -> None:
        """The sources (name, node) the nodes will scan, in order, before anything of them arrives."""

    def scanned(self, item: Scanned | Done) -> None:
        """A hand-over from a node's scan, or the end of one of its files."""

    def report(self, change: StateChange) -> None:
        """What happened to a source (or to the edge as a whole, under its own name)."""

    async def fall_back(self, source: LiveSource, after: Scanned | None) -> None:
        """Read ``source`` here instead, to its end (or until the run stops), its lines going on from
        ``after``, the last hand-over of the node's scan of it, where there is one."""


class EdgeScan(ABC):
    """Logs scanned where they are: ``name`` names the input in states, ``finite`` is True when it is read once
    (then :meth:`run` returns when every log is read)."""

    name: str
    finite: bool

    @abstractmethod
    async def run(self, sink: Sink) -> None:
        """List the logs, scan them where they are and hand over what the scans make, to ``sink``."""
