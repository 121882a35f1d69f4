"""The one driver: sources → scan → correlate, for files read once, live sources and replays alike.

:func:`run` starts a :class:`Pipeline` on a thread of its own, with its own event loop: every source is
supervised on its own task (reconnects, resume) and delivers batches of complete lines into one bounded
queue, so a consumer that falls behind pauses the producers instead of losing lines. One consumer scans
each batch, keeps the spool and correlates. The front ends (``sparktui diagnose``, the cockpit, the tests)
read :meth:`Pipeline.updates`: one :class:`Update` per frame, with the lines that arrived (classified and
made safe to show), a new diagnosis when there is one, and every source's state. Nothing here knows about
a user interface; the analysis never runs on a front end's thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from sparktui.core.analysis.analyzer import Analyzer
from sparktui.core.analysis.diagnosis import Diagnosis
from sparktui.core.analysis.pool import Done, InOrder, ScanPool, Task, scan_file, workers_for
from sparktui.core.analysis.scan import Scanned
from sparktui.core.analysis.stages import Outage
from sparktui.core.catalogue import Catalogue
from sparktui.core.classify import Classification, classify
from sparktui.core.clock import Clock, WallClock
from sparktui.core.edge.sink import EdgeScan
from sparktui.core.events import SourceSummary, State, StateChange
from sparktui.core.sources.base import Extent, LiveSource, Received, SourceGroup, expand, supervise
from sparktui.core.sources.files import DaemonNext, FileRead, FileSource
from sparktui.core.sources.spool import Spool
from sparktui.core.text import DISPLAY_LIMIT, display

#: Batches of lines waiting between the sources and the consumer; beyond it the sources wait.
QUEUE_BATCHES = 256
#: Seconds a front end's updates are apart at least, so that lines arriving meanwhile come together.
FRAME = 0.1
#: Seconds between two looks at whether the diagnosis changed (new hits, new stage markers).
REFRESH = 0.1
#: While live sources run, the diagnosis is made again at least this often: a stall is a matter of time.
TICK = 1.0
#: State changes kept for a front end that does not take them (the latest state of each source is always kept).
MAX_CHANGES = 1000
#: Hands a batch of a source's lines to the consumer (waiting while the queue is full).
Deliver = Callable[[str, Received], Awaitable[None]]
#: What the pipeline reads: sources, groups of them, and scans made on a Ray cluster's nodes.
Input = LiveSource | SourceGroup | EdgeScan
#: Lines kept for a front end that does not take them; beyond it the oldest are dropped from view (and
#: counted), never from the analysis.
MAX_PENDING_LINES = 100_000


@dataclass(frozen=True, slots=True)
class Line:
    """A line as a front end shows it: its source, its number there, its node, the text made inert, and
    what the classifier says of it."""

    source: str
    number: int
    node: str
    text: str
    kind: Classification


@dataclass(frozen=True, slots=True)
class Tally:
    """What one source has handed over so far: its node and kind, its lines and the bytes of their text,
    and how much of the source that is, where it knows (a file: bytes read of its size)."""

    node: str
    kind: str
    lines: int = 0
    bytes: int = 0
    extent: Extent | None = None


@dataclass(frozen=True, slots=True)
class Update:
    """What changed since the previous update."""

    lines: tuple[Line, ...] = ()
    diagnosis: Diagnosis | None = None  # a new one, when it changed
    states: Mapping[str, StateChange] = field(default_factory=dict)  # every source's latest state
    tallies: Mapping[str, Tally] = field(default_factory=dict)  # what every source has handed over
    changes: tuple[StateChange, ...] = ()  # every state change since the previous update, in order
    clock: float = 0.0  # seconds since the start (the incident's time, for a replay)
    read: int = 0  # lines received so far, from every source
    dropped: int = 0  # lines a slow front end was never shown (the analysis saw them all)
    received_at: float = 0.0  # time.perf_counter() when the oldest of ``lines`` arrived
    done: bool = False  # the last update: every source ended, or the pipeline was stopped
    error: str = ""  # why the pipeline stopped, when it broke


class _Outbox:
    """What waits for the front end, coalesced: lines in order, the latest diagnosis, the latest states."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.lines: list[Line] = []
        self.received_at = 0.0
        self.dropped = 0
        self.diagnosis: Diagnosis | None = None
        self.states: dict[str, StateChange] = {}
        self.tallies: dict[str, Tally] = {}
        self.changes: list[StateChange] = []
        self.changed = False
        self.done = False
        self.error = ""

    def add_lines(self, lines: list[Line], source: str, tally: Tally) -> None:
        with self.cond:
            if not self.lines:
                self.received_at = time.perf_counter()
            self.tallies[source] = tally
            self.lines += lines
            excess = len(self.lines) - MAX_PENDING_LINES
            if excess > 0:
                del self.lines[:excess]
                self.dropped += excess
            self.changed = True
            self.cond.notify()

    def set(
        self,
        *,
        diagnosis: Diagnosis | None = None,
        state: StateChange | None = None,
        tally: tuple[str, Tally] | None = None,
    ) -> None:
        with self.cond:
            if diagnosis is not None:
                self.diagnosis = diagnosis
            if tally is not None:
                self.tallies[tally[0]] = tally[1]
            if state is not None:
                if state.state is not State.EVENT:
                    self.states[state.source] = state
                self.changes = [*self.changes[-(MAX_CHANGES - 1) :], state]
            self.changed = True
            self.cond.notify()

    def finish(self, diagnosis: Diagnosis | None, error: str = "") -> None:
        with self.cond:
            if diagnosis is not None:
                self.diagnosis = diagnosis
            self.done, self.error, self.changed = True, error, True
            self.cond.notify()


class Pipeline:
    """Runs ``sources`` through one analysis. ``clock`` is the time stalls are measured on (the wall clock
    unless a replay gives its own); ``spool`` keeps every line received; ``seconds`` ends a live run after
    that long; ``show`` makes :class:`Line` values for a front end to show (a headless run needs none);
    ``refresh`` makes diagnoses while it runs (a headless run needs only the last); ``workers`` scan the
    files nobody is shown in that many processes (None: one per core, at most one per file).

    Sources that end by themselves and that nobody is shown (files, Ray's logs read once, an edge scan read
    once) are merged source after source in the order they were listed (:class:`InOrder`), however their
    lines arrive, so the diagnosis does not depend on their timing; the others as they come."""

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
        self.show = show
        self.refresh = refresh
        self.queue_batches = queue_batches
        self.workers = workers
        self.analyzer = Analyzer(catalogue)
        self.lines = 0
        self.result: Diagnosis | None = None
        self._outbox = _Outbox()
        self._by_name: dict[str, LiveSource] = {}
        self._tallies: dict[str, Tally] = {}
        self._numbers: dict[str, int] = {}
        self._expanded: set[str] = set()
        self._orders: dict[str, InOrder] = {}  # a source merged in order -> the order it is merged in
        self._remote: set[str] = set()  # sources scanned on a node
        self._queue: asyncio.Queue[tuple[str, Received | Done]] | None = None
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._fresh = asyncio.Event()
        self._stopping = threading.Event()
        self._read: set[str] = set()  # the sources that were streamed (opened, connected) at least once
        # Each source's outages after it had streamed (disconnected, retrying), on ``clock``: its units' stall
        # clocks do not count them; and why it was last down (its last retry's reason).
        self._down: dict[str, list[Outage]] = {}
        self._why_down: dict[str, str] = {}
        for source in self.sources:
            if isinstance(source, LiveSource):
                self._add(source)

    @property
    def finite(self) -> bool:
        """Whether every source ends by itself (files, a replay): then the last diagnosis judges stalls as
        "stopped at", not as "no progress for N seconds"."""
        return all(s.finite for s in self.sources)

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
        box = self._outbox
        last = 0.0
        while True:
            with box.cond:
                while not box.changed:
                    box.cond.wait()
            wait = last + FRAME - time.monotonic()
            if wait > 0 and box.diagnosis is None:  # what arrives meanwhile comes in the same update; a
                time.sleep(wait)  # new diagnosis goes at once (a finding shown as soon as it is made)
            last = time.monotonic()
            with box.cond:
                lines, box.lines = box.lines, []
                changes, box.changes = box.changes, []
                update = Update(
                    tuple(lines),
                    box.diagnosis,
                    dict(box.states),
                    dict(box.tallies),
                    tuple(changes),
                    self.clock.now(),
                    self.lines,
                    box.dropped,
                    box.received_at,
                    box.done,
                    box.error,
                )
                box.diagnosis, box.changed = None, False
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
        self._fresh = asyncio.Event()  # a batch changed the correlation: the ticker makes a diagnosis
        if self._stopping.is_set():
            self._stop.set()
        self.clock.start()
        queue: asyncio.Queue[tuple[str, Received | Done]] = asyncio.Queue(maxsize=self.queue_batches)
        self._queue = queue

        async def deliver(name: str, received: Received) -> None:
            await queue.put((name, received))

        for source in list(self._by_name.values()):
            self._measure(source)  # a big file says how big before its first batch
        files = self._read_after_the_fact()
        producers = [
            asyncio.create_task(self._guard(s.name, supervise(s, deliver, self._report)))
            for s in self._live()
            if s not in files
        ]
        if files:
            producers.append(asyncio.create_task(self._guard("scan", self._scan_files(files))))
        producers += [asyncio.create_task(self._guard(g.name, self._group(g, deliver))) for g in self._groups()]
        producers += [
            asyncio.create_task(self._guard(e.name, e.run(_EdgeSink(self, e, deliver)))) for e in self._edges()
        ]
        consumer = asyncio.create_task(self._consume(queue))
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
            drained = asyncio.create_task(queue.join())
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
        self._never_read()
        self._lost()
        self.result = self._final()
        self._outbox.finish(self.result)

    def _live(self) -> list[LiveSource]:
        return [s for s in self.sources if isinstance(s, LiveSource)]

    @property
    def _headless(self) -> bool:
        """Whether nobody is shown the lines and nothing keeps them: they are only analysed."""
        return not self.show and self.spool is None

    def _read_after_the_fact(self) -> list[FileRead]:
        """The files whose lines nobody is shown: each is scanned on its own, file after file in the order
        given, in this process or in worker processes, with the same diagnosis either way."""
        if not self._headless:
            return []
        return [s for s in self._live() if isinstance(s, FileRead)]

    async def _scan_files(self, files: list[FileRead]) -> None:
        """Scan ``files`` (see :meth:`_read_after_the_fact`), merging each hand-over here as it comes."""
        tasks = [Task(f.file, f.node) for f in files]
        workers = workers_for([f.file.size() for f in files], self.workers)
        if any(f.file.stream for f in files):
            workers = 0  # a stream is this process's own (stdin, a pipe): it cannot be opened elsewhere
        pool = ScanPool(self.catalogue, tasks, workers) if workers else None
        results = pool.results() if pool is not None else (r for t in tasks for r in scan_file(self.analyzer.rules, t))
        read: dict[str, int] = {}
        sizes = {f.name: f.size for f in files}
        for f in files:
            self._report(StateChange(f.name, State.CONNECTING))
        handed = DaemonNext(results, "scan")
        try:
            # Each next hand-over is waited for on a daemon thread: a worker's, or a block read and scanned there
            # (a FIFO with no writer keeps that thread waiting, not the loop nor the exit, and a stop is heard).
            while (item := await handed.next()) is not None:
                if isinstance(item, Done):
                    if not item.error:
                        self._scanned(item.source, read.get(item.source, 0), sizes[item.source] or 0, sizes)
                    if item.error:
                        self.analyzer.source_failed(item.source, item.error)
                    self._report(StateChange(item.source, State.FAILED if item.error else State.ENDED, item.error))
                    continue
                if item.source not in read:
                    self._report(StateChange(item.source, State.STREAMING))
                self.lines += item.lines - read.get(item.source, 0)
                read[item.source] = item.lines
                self.analyzer.merge(item)
                if self.analyzer.correlation.changed:
                    self._fresh.set()
                self._scanned(item.source, item.lines, item.read_bytes, sizes)
        finally:
            handed.close()
            if pool is not None:
                await asyncio.to_thread(pool.close)

    def _scanned(self, source: str, lines: int, at: int, sizes: Mapping[str, int | None]) -> None:
        """Tally a file scanned after the fact: ``lines`` read of it, to byte ``at`` of it as stored."""
        tally = self._tallies[source] = replace(
            self._tallies[source],
            node=self.analyzer.node_of(source),
            lines=lines,
            bytes=at,
            extent=Extent(at, sizes[source]),
        )
        self._outbox.set(tally=(source, tally))

    def _groups(self) -> list[SourceGroup]:
        return [g for g in self.sources if isinstance(g, SourceGroup)]

    def _edges(self) -> list[EdgeScan]:
        return [e for e in self.sources if isinstance(e, EdgeScan)]

    async def _guard(self, name: str, run: Awaitable[None]) -> None:
        """A source that breaks (a bug in it, not a connection: those are retried) fails with the reason."""
        try:
            await run
        except Exception as exc:
            self._report(StateChange(name, State.FAILED, f"{type(exc).__name__}: {exc}"))

    async def _group(self, group: SourceGroup, deliver: Deliver) -> None:
        """Find a group's sources (retrying like a source), then supervise each of them."""
        found = await expand(group, self._report)
        if not found:
            return
        self._expanded.add(group.name)
        for source in found:
            self._add(source)
            self._measure(source)
        if not (group.finite and self._headless):
            later = self._guard(group.name, self._later(group, deliver))
            await asyncio.gather(later, *(supervise(s, deliver, self._report) for s in found))
            return
        order = InOrder([s.name for s in found])
        for source in found:
            self._orders[source.name] = order
        await asyncio.gather(*(self._to_its_end(s, deliver) for s in found))

    async def _later(self, group: SourceGroup, deliver: Deliver) -> None:
        """Supervise each source a followed group finds after its first listing (a new Ray worker's log)."""
        tasks: list[asyncio.Task[None]] = []
        try:
            async for source in group.later():
                self._add(source)
                self._measure(source)
                tasks.append(asyncio.create_task(supervise(source, deliver, self._report)))
            await asyncio.gather(*tasks)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    async def _to_its_end(self, source: LiveSource, deliver: Deliver) -> None:
        """Supervise a source merged in order, then mark its end behind its last batch."""
        await supervise(source, deliver, self._report)
        assert self._queue is not None
        await self._queue.put((source.name, Done(source.name)))

    def _add(self, source: LiveSource) -> None:
        self._by_name[source.name] = source
        self._tallies[source.name] = Tally(source.node, source.kind)
        self.analyzer.add_source(source.name, source.node)

    def _measure(self, source: LiveSource) -> None:
        tally = replace(self._tallies[source.name], extent=source.extent(None))
        self._tallies[source.name] = tally
        self._outbox.set(tally=(source.name, tally))

    async def _consume(self, queue: asyncio.Queue[tuple[str, Received | Done]]) -> None:
        while True:
            name, received = await queue.get()
            try:
                if isinstance(received, Done):
                    self._let_through(self._orders[name].add(received))
                else:
                    self._take(self._by_name[name], received)
            finally:
                queue.task_done()
            # A get from a queue that holds batches does not wait: let the sources' reads and the ticker
            # run between batches, so that a backlog does not hold back the next diagnosis.
            await asyncio.sleep(0)

    def _take(self, source: LiveSource, received: Received) -> None:
        if source.node != self.analyzer.node_of(source.name):
            self.analyzer.set_node(source.name, source.node)  # the content named the node
        if source.hosts:
            self.analyzer.know_hosts(source.name, source.hosts)  # the machine said its names
        text = "\n".join(received.lines)
        order = self._orders.get(source.name)
        if order is None:
            self.analyzer.feed(source.name, text, now=self.clock.now())
        else:
            self._let_through(order.add(self.analyzer.scan(source.name, text)))
        if self.analyzer.correlation.changed:
            self._fresh.set()
        if self.spool is not None:
            stopped = self.spool.stopped
            self.spool.write(source.name, source.node, received.lines)
            if self.spool.stopped and not stopped:  # a full disk: the analysis goes on, the next diagnosis says so
                self._fresh.set()
        self.lines += len(received.lines)
        was = self._tallies[source.name]
        tally = self._tallies[source.name] = Tally(
            source.node,
            was.kind,
            was.lines + len(received.lines),
            was.bytes + len(text.encode()) + 1,
            source.extent(received.cursor),
        )
        if self.show:
            number = self._numbers.get(source.name, 0)
            shown = []
            for text in received.lines:
                number += 1
                kind = classify(text[:DISPLAY_LIMIT])  # what is shown of it: a line of megabytes costs no more
                shown.append(Line(source.name, number, self.analyzer.home(source.name, kind), display(text), kind))
            self._numbers[source.name] = number
            self._outbox.add_lines(shown, source.name, tally)
        else:
            self._outbox.set(tally=(source.name, tally))

    def _let_through(self, items: list[Scanned | Done]) -> None:
        """Merge the hand-overs whose turn came (see :class:`InOrder`)."""
        for item in items:
            if isinstance(item, Scanned):
                self.analyzer.merge(item)
        if self.analyzer.correlation.changed:
            self._fresh.set()

    async def _tick(self) -> None:
        """A new diagnosis as soon as a batch changed what is known (at most one per :data:`REFRESH`
        seconds), and at least every :data:`TICK` seconds while sources run, for the stalls that time alone
        makes."""
        last = made = 0.0
        while True:
            # asyncio.timeout, not wait_for: wait_for can swallow the cancel that ends the run when the
            # event it waits for is set at the same moment, and this loop would then never end
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(TICK):
                    await self._fresh.wait()
            self._fresh.clear()
            if not self.refresh:
                continue
            wait = made + REFRESH - time.monotonic()
            if wait > 0:  # what changes meanwhile goes into the same diagnosis
                await asyncio.sleep(wait)
            now = time.monotonic()
            if self.analyzer.correlation.changed or now - last >= TICK:
                last = made = now
                at = self.clock.now()
                self._outbox.set(diagnosis=self._with_groups(self.analyzer.finish(now=at, down=self._down)))
                made = time.monotonic()

    def _final(self) -> Diagnosis:
        now = None if self.finite and not self._stopping.is_set() else self.clock.now()
        return self._with_groups(self.analyzer.finish(now=now, down=self._down))

    def _with_groups(self, diagnosis: Diagnosis) -> Diagnosis:
        """A group that never found its sources still says why, among the sources; a spool that stopped
        (a full disk) says so among the warnings."""
        if self.spool is not None and self.spool.stopped:
            diagnosis = replace(diagnosis, warnings=(*diagnosis.warnings, self.spool.warning))
        states = self._outbox.states
        missing = [
            SourceSummary(g.name, "", 0, f"{states[g.name].state.value}: {states[g.name].detail}")
            for g in self.sources
            if isinstance(g, SourceGroup | EdgeScan) and g.name not in self._expanded and g.name in states
        ]
        return replace(diagnosis, sources=(*diagnosis.sources, *missing)) if missing else diagnosis

    def _never_read(self) -> None:
        """Each source still connecting or retrying at the end that was never opened or connected in the
        whole session fails with why: an input that could not be read is said, never taken for a quiet one."""
        states = self._outbox.states
        queued = {f.name for f in self._read_after_the_fact()}  # files a stop came before: not tried, not failed
        for name in self._by_name:
            last = states.get(name)
            if name in self._read or last is None or last.state not in (State.CONNECTING, State.RETRYING):
                continue
            if last.state is State.CONNECTING and name in queued:
                continue
            why = last.detail.partition("; retrying in ")[0] if last.state is State.RETRYING else ""
            reason = f"never read: {why}" if why else "never read: it did not answer (still connecting)"
            self.analyzer.source_failed(name, f"{name}: {reason}")

    def _lost(self) -> None:
        """Each source that was read, then went down (disconnected, retrying) and stayed down to the end fails
        with how long and why: its node's log went unread for the rest of the session, which is said, never
        taken for a node that went quiet."""
        now = self.clock.now()
        states = self._outbox.states
        for name, outages in self._down.items():
            if not outages or outages[-1][1] is not None or name not in states:
                continue
            if states[name].state is State.FAILED:
                continue  # its error says why already
            since = outages[-1][0]
            why = self._why_down.get(name, "")
            reason = f"unreadable for the last {now - since:.0f} s of the session (disconnected, never back)"
            self.analyzer.source_failed(name, f"{name}: {reason}{f': {why}' if why else ''}")

    def _went(self, change: StateChange) -> None:
        """Keep each source's outages: from when a source that had streamed stops streaming (connecting
        again, retrying, failed) until it streams again or ends."""
        name = change.source
        outages = self._down.setdefault(name, [])
        down = bool(outages) and outages[-1][1] is None
        if change.state is State.RETRYING:
            self._why_down[name] = change.detail.partition("; retrying in ")[0]
        if change.state in (State.CONNECTING, State.RETRYING, State.FAILED):
            if name in self._read and not down:
                outages.append((self.clock.now(), None))
        elif change.state in (State.STREAMING, State.ENDED) and down:
            outages[-1] = (outages[-1][0], self.clock.now())

    def _report(self, change: StateChange) -> None:
        self._went(change)
        if change.state in (State.STREAMING, State.ENDED):
            self._read.add(change.source)
        known = change.source in self._by_name or change.source in self._remote
        if change.state is State.FAILED and known:
            self.analyzer.source_failed(change.source, change.detail)
            self._fresh.set()
        elif change.state is State.EVENT and known:
            self.analyzer.source_noted(change.source, change.detail)
            self._fresh.set()
        self._outbox.set(state=change)


class _EdgeSink:
    """Where an edge scan's results meet the pipeline's analysis (see :class:`~sparktui.core.edge.sink.Sink`):
    read once, in the order the sources were listed; followed, as they come, each stage marker timed at its
    arrival here, as a pulled line would be."""

    def __init__(self, pipeline: Pipeline, edge: EdgeScan, deliver: Deliver) -> None:
        self.pipeline, self.edge, self.deliver = pipeline, edge, deliver
        self.order = InOrder() if edge.finite else None
        self.lines: dict[str, int] = {}  # lines of each source scanned so far

    def listed(self, sources: Sequence[tuple[str, str]]) -> None:
        p = self.pipeline
        p._expanded.add(self.edge.name)
        for name, node in sources:
            p.analyzer.add_source(name, node)
            p._remote.add(name)
            if self.order is not None:
                self.order.extend([name])
                p._orders[name] = self.order
            p._report(StateChange(name, State.CONNECTING))

    def scanned(self, item: Scanned | Done) -> None:
        p = self.pipeline
        if isinstance(item, Done):
            if item.error:
                p.analyzer.source_failed(item.source, item.error)
            p._report(StateChange(item.source, State.FAILED if item.error else State.ENDED, item.error))
        else:
            if item.source not in self.lines:
                p._report(StateChange(item.source, State.STREAMING))
            p.lines += item.lines - self.lines.get(item.source, 0)
            self.lines[item.source] = item.lines
            if self.order is None and item.stages:
                now = p.clock.now()
                item = replace(item, stages=tuple(e._replace(at=now) for e in item.stages))
        if self.order is not None:
            p._let_through(self.order.add(item))
        elif isinstance(item, Scanned):
            p.analyzer.merge(item)
        p._outbox.set()

    def report(self, change: StateChange) -> None:
        self.pipeline._report(change)

    async def fall_back(self, source: LiveSource, after: Scanned | None) -> None:
        p = self.pipeline
        p._add(source)
        if after is not None:
            p.analyzer.continue_from(after)
        if self.order is None:
            await supervise(source, self.deliver, p._report)
            return
        self.order.extend([source.name])
        p._orders[source.name] = self.order
        await p._to_its_end(source, self.deliver)


class PipelineError(Exception):
    """The pipeline broke (a bug, not bad input: that is always a source's state); one line."""


def run(catalogue: Catalogue, sources: Sequence[Input], **options: Any) -> Pipeline:
    """A started :class:`Pipeline` over ``sources`` (see its options)."""
    return Pipeline(catalogue, sources, **options).start()


def diagnose_files(files: Sequence[FileSource], catalogue: Catalogue) -> Diagnosis:
    """Read every file to its end through the pipeline and return the diagnosis. A file that fails part-way
    keeps what was read from it and is reported in the diagnosis' sources with its error."""
    return run(catalogue, [FileRead(f) for f in files], show=False, refresh=False).wait()
