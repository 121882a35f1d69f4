"""The producers of the sources this process reaches itself: a source or a group of them read here
(:class:`Local`), and files nobody is shown, scanned in worker processes (:class:`Pool`). The Ray edge
(:class:`~sparktui.core.edge.head.RayEdge`) is the third kind, built on the same contract.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from sparktui.core.analysis.handover import Done
from sparktui.core.analysis.pool import ScanPool, Task, scan_file, workers_for
from sparktui.core.analysis.scan import Rules
from sparktui.core.catalogue import Catalogue
from sparktui.core.events import State, StateChange
from sparktui.core.intake.sink import Producer, Sink
from sparktui.core.sources.base import LiveSource, SourceGroup, expand
from sparktui.core.sources.files import DaemonNext, FileRead


class Local(Producer):
    """A source, or a group of sources found once connected (retried like a source), each read here.

    A group's sources are merged one after another when it ends by itself and nobody is shown them; a single
    source has nothing to order, and its lines keep the time they arrived."""

    def __init__(self, source: LiveSource | SourceGroup) -> None:
        self.source = source
        self.name = source.name
        self.finite = source.finite
        self.ordered = isinstance(source, SourceGroup)

    async def run(self, sink: Sink) -> None:
        if isinstance(self.source, LiveSource):
            await sink.read(self.source)
            return
        found = await expand(self.source, sink.report)
        if found:
            await asyncio.gather(*(sink.read(s) for s in found), self._later(self.source, sink))

    async def _later(self, group: SourceGroup, sink: Sink) -> None:
        """Read each source a followed group finds after its first listing (a new Ray worker's log). A listing
        that breaks fails the group, with the reason, and ends what it found."""
        reads: list[asyncio.Task[None]] = []
        try:
            async for source in group.later():
                reads.append(asyncio.create_task(sink.read(source)))
            await asyncio.gather(*reads)
        except Exception as exc:
            sink.report(StateChange(group.name, State.FAILED, f"{type(exc).__name__}: {exc}"))
        finally:
            for task in reads:
                task.cancel()
            await asyncio.gather(*reads, return_exceptions=True)


class Pool(Producer):
    """Files whose lines nobody is shown: each is scanned on its own, file after file in the order given,
    in this process (``rules``) or in worker processes (``workers``, None: one per core, at most one per
    file), with the same diagnosis either way."""

    finite = True

    def __init__(self, files: Sequence[FileRead], catalogue: Catalogue, rules: Rules, workers: int | None) -> None:
        self.name = "scan"
        self.files = list(files)
        self.catalogue, self.rules, self.workers = catalogue, rules, workers

    async def run(self, sink: Sink) -> None:
        tasks = [Task(f.file, f.node) for f in self.files]
        workers = workers_for([f.file.size() for f in self.files], self.workers)
        if any(f.file.stream for f in self.files):
            workers = 0  # a stream is this process's own (stdin, a pipe): it cannot be opened elsewhere
        pool = ScanPool(self.catalogue, tasks, workers) if workers else None
        results = pool.results() if pool is not None else (r for t in tasks for r in scan_file(self.rules, t))
        sink.listed([(f.name, f.node) for f in self.files])
        handed = DaemonNext(results, "scan")
        # Scanned here, the files are taken one after another, in order: the first not yet done is being read.
        waiting = [f.name for f in self.files] if pool is None else []
        try:
            # Each next hand-over is waited for on a daemon thread: a worker's, or a block read and scanned there
            # (a FIFO with no writer keeps that thread waiting, not the loop nor the exit, and a stop is heard).
            while True:
                if waiting:
                    sink.began(waiting[0])
                if (item := await handed.next()) is None:
                    break
                sink.scanned(item)
                if isinstance(item, Done) and waiting and item.source == waiting[0]:
                    waiting.pop(0)
        finally:
            handed.close()
            if pool is not None:
                await asyncio.to_thread(pool.close)
