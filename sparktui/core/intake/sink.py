"""The contract between every input and the pipeline: a :class:`Producer` hands what it reads to a
:class:`Sink`.

An input reads its lines in one of two ways, and a producer may use both:

* here: it names a :class:`~sparktui.core.sources.base.LiveSource` to :meth:`Sink.read`, which supervises it
  (reconnects, resume) and scans its lines in this process (files, followed files, SSH, Docker, Ray's logs
  pulled, a replay);
* elsewhere: it lists its sources (:meth:`Sink.listed`), then hands over what a scan made of them
  (:meth:`Sink.scanned`: :class:`~sparktui.core.analysis.scan.Scanned` blocks, then a
  :class:`~sparktui.core.analysis.handover.Done` for each), as worker processes and a Ray cluster's nodes do.

A producer says whether it ends by itself (``finite``). Where it does and nobody is shown its lines, the
sink merges its sources one after another in the order they were listed or read, however their hand-overs
arrive, so the diagnosis does not depend on their timing; otherwise as they come. Kept apart from the
pipeline, so that an input (the Ray edge) imports neither the pipeline nor the other inputs.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

from sparktui.core.analysis.handover import Done
from sparktui.core.analysis.scan import Scanned
from sparktui.core.events import SourceNote, StateChange
from sparktui.core.sources.base import LiveSource


class Sink(ABC):
    """Where a producer hands over (the pipeline's intake)."""

    @abstractmethod
    def listed(self, sources: Sequence[tuple[str, str]]) -> None:
        """The sources (name, node) whose scans will be handed over, in order, before anything of them arrives;
        each is connecting until its first hand-over."""

    @abstractmethod
    def began(self, name: str) -> None:
        """The scan of a listed source has begun: it is being opened. One still connecting at the end was then
        tried and never read (a FIFO with no writer), not left for a stop that came first."""

    @abstractmethod
    def scanned(self, item: Scanned | Done) -> None:
        """A hand-over of a scan made elsewhere, or the end of one of its sources (with the error that ended
        it, where one did)."""

    @abstractmethod
    def report(self, change: StateChange | SourceNote) -> None:
        """What happened to a source (or to the producer as a whole, under its own name): a change of its
        state, or a note."""

    @abstractmethod
    async def read(self, source: LiveSource, after: Scanned | None = None) -> None:
        """Read ``source`` here, to its end (or until the run stops); its lines go on from ``after``, the last
        hand-over of a scan of it made elsewhere (that stopped), where there is one."""


class Producer(ABC):
    """An input of the pipeline: ``name`` names it in states (when it fails as a whole), ``finite`` is True
    when it ends by itself (then :meth:`run` returns when all it reads is read), ``ordered`` when its sources
    are to be merged one after another where it is finite and nobody is shown their lines."""

    name: str
    finite: bool
    ordered = True

    @abstractmethod
    async def run(self, sink: Sink) -> None:
        """Read, or have read elsewhere, every source of the input, handing over to ``sink``."""
