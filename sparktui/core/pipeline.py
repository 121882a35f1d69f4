"""The one driver: sources → scan → correlate, for files read once, live sources and replays alike.

:func:`run` starts a :class:`Pipeline` on a thread of its own, with its own event loop. Every input is a
:class:`~sparktui.core.intake.sink.Producer` running on its own task: a source or a group of them read here
(supervised: reconnects, resume), files nobody is shown scanned in worker processes, a Ray cluster's nodes
scanning their own logs. Each hands what it reads to the one intake (:class:`~sparktui.core.intake.books.Books`),
which keeps every source's books and merges into one correlation; a ticker makes the diagnoses. The front
ends (``sparktui diagnose``, the cockpit, the tests) read :meth:`Pipeline.updates`: one
:class:`~sparktui.core.outbox.Update` per frame, with the lines that arrived (classified and made safe to
show), a new diagnosis when there is one, and every source's state. Nothing here knows about a user
interface; the analysis never runs on a front end's thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Awaitable, Iterator, Sequence
from dataclasses import replace
from typing import Any

from sparktui.core.analysis.analyzer import Analyzer
from sparktui.core.analysis.diagnosis import Diagnosis
from sparktui.core.catalogue import Catalogue
from sparktui.core.clock import Clock, WallClock
from sparktui.core.events import SourceSummary, State, StateChange
from sparktui.core.intake.books import QUEUE_BATCHES, Books, Port
from sparktui.core.intake.producers import Local, Pool
from sparktui.core.intake.sink import Producer
from sparktui.core.outbox import Line, Outbox, Tally, Update
from sparktui.core.sources.base import LiveSource, SourceGroup
from sparktui.core.sources.files import FileRead, FileSource
from sparktui.core.sources.spool import Spool

__all__ = ["Input", "Line", "Pipeline", "PipelineError", "Tally", "Update", "diagnose_files", "run"]

#: Seconds a front end's updates are apart at least, so that lines arriving meanwhile come together.
FRAME = 0.1
#: Seconds between two looks at whether the diagnosis changed (new hits, new stage markers).
REFRESH = 0.1
#: While live sources run, the diagnosis is made again at least this often: a stall is a matter of time.
TICK = 1.0
#: What the pipeline reads: sources, groups of them, and producers of their own (a Ray cluster's nodes).
Input = LiveSource | SourceGroup | Producer


class Pipeline:
    """Runs ``sources`` through one analysis. ``clock`` is the time stalls are measured on (the wall clock
    unless a replay gives its own); ``spool`` keeps every line received; ``seconds`` ends a live run after
    that long; ``show`` makes :class:`Line` values for a front end to show (a headless run needs none);
    ``refresh`` makes diagnoses while it runs (a headless run needs only the last); ``workers`` scan the
    files nobody is shown in that many processes (None: one per core, at most one per file).

    The sources of a producer that ends by itself and that nobody is shown (files, Ray's logs read once, an
    edge scan read once) are merged source after source in the order they were listed
    (:class:`~sparktui.core.analysis.handover.InOrder`), however their lines arrive, so the diagnosis does
    not depend on their timing; the others as they come."""

    def __init__(
        self,
        catalogue: Catalogue,
        sources: Sequence[Input],
        *,
        clock: Clock | None = None,
        spool: Spool | None = None,
        seconds: float | None = None,
        show: bool = True,
        refresh: bool = True,
        queue_batches: int = QUEUE_BATCHES,
        workers: int | None = 1,
    ) -> None:
        self.catalogue = catalogue
        self.sources = tuple(sources)
        self.clock = clock or WallClock()
        self.spool = spool
        self.seconds = seconds
        self.refresh = refresh
        self.analyzer = Analyzer(catalogue)
        self.result: Diagnosis | None = None
        self._outbox = Outbox()
        self.books = Books(
            self.analyzer, self._outbox, self.clock.now, spool=spool, show=show, queue_batches=queue_batches
        )
        # Nobody is shown the lines and nothing keeps them: they are only analysed.
        self._headless = not show and spool is None
        # Each input's producer, with the port it hands over through: merged one after another where the
        # producer ends by itself and nobody is shown its lines.
        self._inputs = [
            (p, Port(self.books, p.finite and p.ordered and self._headless)) for p in self._producers(workers)
        ]
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._stopping = threading.Event()

    def _producers(self, workers: int | None) -> list[Producer]:
        """One producer per input, but the files nobody is shown: one producer scans them all."""
        local = [s for s in self.sources if isinstance(s, LiveSource)]
        for source in local:
            self.books.add(source)  # listed in the diagnosis, and a big file says how big, before any line
        files = [s for s in local if isinstance(s, FileRead)] if self._headless else []
        producers: list[Producer] = [Local(s) for s in local if s not in files]
        if files:
            producers.append(Pool(files, self.catalogue, self.analyzer.rules, workers))
        producers += [Local(g) for g in self.sources if isinstance(g, SourceGroup)]
        return producers + [p for p in self.sources if isinstance(p, Producer)]

    @property
    def finite(self) -> bool:
        """Whether every source ends by itself (files, a replay): then the last diagnosis judges stalls as
        "stopped at", not as "no progress for N seconds"."""
        return all(s.finite for s in self.sources)

    @property
    def lines(self) -> int:
        """Lines received so far, from every source."""
        return self.books.lines

    # -- the front end's side ------------------------------------------------------------------------

    def start(self) -> Pipeline:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="sparktui pipeline", daemon=True)
            self._thread.start()
        return self

    def updates(self) -> Iterator[Update]:
        """Every update until the last one (``done``), at most one per :data:`FRAME` seconds unless it
        brings a new diagnosis; blocks in between. Starts the pipeline if it was not started."""
        self.start()
        last = 0.0
        while True:
            diagnosed = self._outbox.wait()
            wait = last + FRAME - time.monotonic()
            if wait > 0 and not diagnosed:  # what arrives meanwhile comes in the same update; a new
                time.sleep(wait)  # diagnosis goes at once (a finding shown as soon as it is made)
            last = time.monotonic()
            update = self._outbox.take(clock=self.clock.now(), read=self.lines)
            yield update
            if update.done:
                return

    def wait(self) -> Diagnosis:
        """Run to the end (for a headless front end); the last diagnosis."""
        for update in self.updates():
            if update.error:
                raise PipelineError(update.error)
        assert self.result is not None
        return self.result

    def stop(self) -> None:
        """End the run: the sources stop, what they delivered is analysed, a last update follows."""
        self._stopping.set()
        if self._loop is not None and self._stop is not None:
            with contextlib.suppress(RuntimeError):  # its loop already ended
                self._loop.call_soon_threadsafe(self._stop.set)

    # -- the pipeline's own thread ---------------------------------------------------------------------

    def _run(self) -> None:
        try:
            asyncio.run(self._main())
        except Exception as exc:  # a broken pipeline says why; the front end carries on
            self._outbox.finish(None, f"{type(exc).__name__}: {exc}")

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        if self._stopping.is_set():
            self._stop.set()
        self.clock.start()
        producers = [asyncio.create_task(self._guard(p.name, p.run(port))) for p, port in self._inputs]
        consumer = asyncio.create_task(self.books.consume())
        ticker = asyncio.create_task(self._tick())
        stop = asyncio.create_task(self._stop.wait())
        every = asyncio.create_task(asyncio.wait(producers)) if producers else None
        try:
            if every is not None:
                await asyncio.wait([every, stop], timeout=self.seconds, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (*producers, stop):
                task.cancel()
            await asyncio.gather(*producers, stop, *([every] if every else []), return_exceptions=True)
            drained = asyncio.create_task(self.books.drained())
            await asyncio.wait([drained, consumer], return_when=asyncio.FIRST_COMPLETED)
            drained.cancel()
            broke = consumer.exception() if consumer.done() and not consumer.cancelled() else None
            if broke is not None:
                raise broke  # the analysis broke: said, not waited for forever
            for task in (consumer, ticker):
                task.cancel()
            await asyncio.gather(consumer, ticker, return_exceptions=True)
            if self.spool is not None:
                self.spool.close()
        self.books.close()
        self.result = self._final()
        self._outbox.finish(self.result)

    async def _guard(self, name: str, run: Awaitable[None]) -> None:
        """An input that breaks (a bug in it, not a connection: those are retried) fails with the reason."""
        try:
            await run
        except Exception as exc:
            self.books.report(StateChange(name, State.FAILED, f"{type(exc).__name__}: {exc}"))

    async def _tick(self) -> None:
        """A new diagnosis as soon as a batch changed what is known (at most one per :data:`REFRESH`
        seconds), and at least every :data:`TICK` seconds while sources run, for the stalls that time alone
        makes."""
        fresh = self.books.fresh
        last = made = 0.0
        while True:
            # asyncio.timeout, not wait_for: wait_for can swallow the cancel that ends the run when the
            # event it waits for is set at the same moment, and this loop would then never end
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(TICK):
                    await fresh.wait()
            fresh.clear()
            if not self.refresh:
                continue
            wait = made + REFRESH - time.monotonic()
            if wait > 0:  # what changes meanwhile goes into the same diagnosis
                await asyncio.sleep(wait)
            now = time.monotonic()
            if self.analyzer.correlation.changed or now - last >= TICK:
                last = made = now
                at = self.clock.now()
                self._outbox.set(diagnosis=self._with_inputs(self.analyzer.finish(now=at, down=self.books.down)))
                made = time.monotonic()

    def _final(self) -> Diagnosis:
        now = None if self.finite and not self._stopping.is_set() else self.clock.now()
        return self._with_inputs(self.analyzer.finish(now=now, down=self.books.down))

    def _with_inputs(self, diagnosis: Diagnosis) -> Diagnosis:
        """An input that never found its sources (a group, an edge) still says why, among the sources; a
        spool that stopped (a full disk) says so among the warnings."""
        if self.spool is not None and self.spool.stopped:
            diagnosis = replace(diagnosis, warnings=(*diagnosis.warnings, self.spool.warning))
        states = self._outbox.states()
        missing = [
            SourceSummary(p.name, "", 0, f"{states[p.name].state.value}: {states[p.name].detail}")
            for p, port in self._inputs
            if not port.used and p.name in states
        ]
        return replace(diagnosis, sources=(*diagnosis.sources, *missing)) if missing else diagnosis


class PipelineError(Exception):
    """The pipeline broke (a bug, not bad input: that is always a source's state); one line."""


def run(catalogue: Catalogue, sources: Sequence[Input], **options: Any) -> Pipeline:
    """A started :class:`Pipeline` over ``sources`` (see its options)."""
    return Pipeline(catalogue, sources, **options).start()


def diagnose_files(files: Sequence[FileSource], catalogue: Catalogue) -> Diagnosis:
    """Read every file to its end through the pipeline and return the diagnosis. A file that fails part-way
    keeps what was read from it and is reported in the diagnosis' sources with its error."""
    return run(catalogue, [FileRead(f) for f in files], show=False, refresh=False).wait()
