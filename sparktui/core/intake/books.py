"""The pipeline's intake: every source's books, kept once, and the one way into the correlation.

:class:`Books` takes what every producer hands over through its :class:`Port` (the
:class:`~sparktui.core.intake.sink.Sink` a producer holds): the lines of sources read here, through one
bounded queue (a consumer that falls behind pauses the sources instead of losing lines), scanned here; and the
hand-overs of scans made elsewhere. Both reach the correlation by :meth:`Books.merge`, held back by the
producer's :class:`~sparktui.core.analysis.handover.InOrder` where it has one. Beside that it keeps, per
source: its state (and the outages of one that had streamed), the lines it handed over, its tally for the
front end, the numbers of its lines shown, and the spool.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import replace

from sparktui.core.analysis.analyzer import Analyzer
from sparktui.core.analysis.handover import Done, InOrder
from sparktui.core.analysis.scan import Scanned
from sparktui.core.analysis.stages import Outage
from sparktui.core.classify import classify
from sparktui.core.events import SourceNote, State, StateChange
from sparktui.core.intake.resume import resumed
from sparktui.core.intake.sink import Sink
from sparktui.core.outbox import Line, Outbox, Tally
from sparktui.core.sources.base import Extent, LiveSource, Received, supervise
from sparktui.core.sources.spool import Spool
from sparktui.core.text import DISPLAY_LIMIT, display

#: Batches of lines waiting between the sources read here and the consumer; beyond it the sources wait.
QUEUE_BATCHES = 256


class Books:
    """Every source's books and the merge into ``analyzer``'s correlation. ``now`` is the time stalls are
    measured on; ``spool`` keeps every line read here; ``show`` makes :class:`Line` values for a front end."""

    def __init__(
        self,
        analyzer: Analyzer,
        outbox: Outbox,
        now: Callable[[], float],
        *,
        spool: Spool | None = None,
        show: bool = True,
        queue_batches: int = QUEUE_BATCHES,
    ) -> None:
        self.analyzer, self.outbox, self.now = analyzer, outbox, now
        self.spool, self.show = spool, show
        self.lines = 0  # lines received, from every source
        self.fresh = asyncio.Event()  # the correlation changed: time for a diagnosis
        # Each source's outages after it had streamed (disconnected, retrying), on the clock of ``now``: its
        # units' stall clocks do not count them; and why it was last down (its last retry's reason).
        self.down: dict[str, list[Outage]] = {}
        self._why_down: dict[str, str] = {}
        self._ended: set[str] = set()  # the sources read here that ended by themselves, not failed
        self._queue: asyncio.Queue[tuple[LiveSource, Received | Done]] = asyncio.Queue(maxsize=queue_batches)
        self._here: dict[str, LiveSource] = {}  # the sources read here
        self._elsewhere: set[str] = set()  # the sources listed to be scanned elsewhere, and not read here since
        self._tallies: dict[str, Tally] = {}
        self._numbers: dict[str, int] = {}  # lines of each source shown so far
        self._handed: dict[str, int] = {}  # lines of each source scanned elsewhere, so far
        self._orders: dict[str, InOrder] = {}  # a source merged in order -> the order it is merged in
        self._streamed: set[str] = set()  # the sources that were streamed (opened, connected) at least once
        self._begun: set[str] = set()  # the sources scanned elsewhere whose scan began (they were being opened)

    # -- what producers hand over (through their ports) ---------------------------------------------

    def add(self, source: LiveSource) -> None:
        """Know ``source``, to be read here: its tally (with its size, where it has one) goes out at once."""
        if self._here.get(source.name) is source:
            return
        self._here[source.name] = source
        self._elsewhere.discard(source.name)
        self.analyzer.add_source(source.name, source.node)
        tally = Tally(node=source.node, kind=source.kind, extent=source.extent(None))
        self._tallies[source.name] = tally
        self.outbox.set(tally=(source.name, tally))

    def expect(self, name: str, node: str, order: InOrder | None) -> None:
        """Know a source whose scan is made elsewhere; it is connecting until its first hand-over."""
        self.analyzer.add_source(name, node)
        self._elsewhere.add(name)
        self._place(name, order)
        self.report(StateChange(name, State.CONNECTING))

    def began(self, name: str) -> None:
        """The scan of ``name``, made elsewhere, has begun (see :meth:`Sink.began`)."""
        self._begun.add(name)

    async def read(self, source: LiveSource, order: InOrder | None, after: Scanned | None) -> None:
        """Supervise ``source`` here to its end, which is marked behind its last batch (see :meth:`consume`). A
        source the spool's resumed session read goes on from there (:mod:`sparktui.core.intake.resume`)."""
        source = resumed(source, self.spool)
        self.add(source)
        if after is not None:
            self.analyzer.continue_from(after)
        self._place(source.name, order)
        await supervise(source, self._deliver, self.report)
        await self._queue.put((source, Done(source.name)))

    def handed(self, item: Scanned | Done, order: InOrder | None) -> None:
        """A hand-over of a scan made elsewhere: its source's state, lines and tally, then the merge."""
        name = item.source
        was = self._tallies.get(name)
        size = was.extent.size if was is not None and was.extent is not None else None
        tally = None
        if isinstance(item, Done):  # its failure, where it failed, goes into the diagnosis with its state
            if not item.error and was is not None:
                tally = replace(was, bytes=size or 0, extent=Extent(size or 0, size))
            self.report(StateChange(name, State.FAILED if item.error else State.ENDED, item.error))
        else:
            if name not in self._handed:
                self.report(StateChange(name, State.STREAMING))
            self.lines += item.lines - self._handed.get(name, 0)
            self._handed[name] = item.lines
            if order is None and item.stages:  # merged as it comes: each stage marker timed at its arrival here
                now = self.now()
                item = replace(item, stages=tuple(e._replace(at=now) for e in item.stages))
            if was is not None:
                at = item.read_bytes
                tally = Tally(node=item.node, kind=was.kind, lines=item.lines, bytes=at, extent=Extent(at, size))
        self.merge(item, order)
        if tally is not None:
            self._tallies[name] = tally
            self.outbox.set(tally=(name, tally))
        else:
            self.outbox.wake()

    def merge(self, item: Scanned | Done, order: InOrder | None) -> None:
        """The one way into the correlation: ``item`` now, or once its turn comes in ``order``."""
        for ready in [item] if order is None else order.add(item):
            if isinstance(ready, Scanned):
                self.analyzer.merge(ready)
        if self.analyzer.correlation.changed:
            self.fresh.set()

    def report(self, change: StateChange | SourceNote) -> None:
        """A source's state (its outages, whether it ever streamed, its failure in the diagnosis) or note (in
        the diagnosis too)."""
        known = change.source in self._here or change.source in self._elsewhere
        if isinstance(change, SourceNote):
            if known:
                self.analyzer.source_noted(change.source, change.text)
                self.fresh.set()
            self.outbox.set(note=change)
            return
        self._went(change)
        if change.state in (State.STREAMING, State.ENDED):
            self._streamed.add(change.source)
        if change.state is State.ENDED:
            self._ended.add(change.source)
        if change.state is State.FAILED and known:
            self.analyzer.source_failed(change.source, change.detail)
            self.fresh.set()
        self.outbox.set(state=change)

    # -- the consumer of the lines read here ---------------------------------------------------------

    async def consume(self) -> None:
        """Scan and merge each batch of lines read here, in the order they arrive; runs until cancelled."""
        while True:
            source, received = await self._queue.get()
            try:
                if isinstance(received, Done):
                    order = self._orders.get(source.name)
                    if source.finite and source.name in self._ended:  # read to its end: what the end leaves open
                        self.merge(self.analyzer.scan_end(source.name), order)
                    self.merge(received, order)
                else:
                    self._take(source, received)
            finally:
                self._queue.task_done()
            # A get from a queue that holds batches does not wait: let the sources' reads and the ticker
            # run between batches, so that a backlog does not hold back the next diagnosis.
            await asyncio.sleep(0)

    async def drained(self) -> None:
        """Return once every batch delivered so far was taken."""
        await self._queue.join()

    async def _deliver(self, name: str, received: Received) -> None:
        await self._queue.put((self._here[name], received))

    def _take(self, source: LiveSource, received: Received) -> None:
        name = source.name
        if source.node != self.analyzer.node_of(name):
            self.analyzer.set_node(name, source.node)  # the content named the node
        if source.hosts:
            self.analyzer.know_hosts(name, source.hosts)  # the machine said its names
        text = "\n".join(received.lines)
        order = self._orders.get(name)
        self.merge(self.analyzer.scan(name, text, now=0.0 if order is not None else self.now()), order)
        if self.spool is not None and not received.kept:
            stopped = self.spool.stopped
            self.spool.write(name, source.node, received.lines, cursor=received.cursor)
            if self.spool.stopped and not stopped:  # a full disk: the analysis goes on, the next diagnosis says so
                self.fresh.set()
        self.lines += len(received.lines)
        was = self._tallies[name]
        tally = self._tallies[name] = Tally(
            node=source.node,
            kind=was.kind,
            lines=was.lines + len(received.lines),
            bytes=was.bytes + len(text.encode()) + 1,
            extent=source.extent(received.cursor),
        )
        if not self.show:
            self.outbox.set(tally=(name, tally))
            return
        number = self._numbers.get(name, 0)
        shown = []
        for line in received.lines:
            number += 1
            kind = classify(line[:DISPLAY_LIMIT])  # what is shown of it: a line of megabytes costs no more
            shown.append(Line(name, number, self.analyzer.home(name, kind), display(line), kind))
        self._numbers[name] = number
        self.outbox.add_lines(shown, name, tally)

    def _place(self, name: str, order: InOrder | None) -> None:
        if order is not None:
            order.extend([name])
            self._orders[name] = order

    # -- the end of the session ------------------------------------------------------------------------

    def close(self) -> None:
        """Say what was never read, or lost for good, in the diagnosis (see :meth:`_never_read`, :meth:`_lost`)."""
        states = self.outbox.states()
        self._never_read(states)
        self._lost(states)

    def _never_read(self, states: dict[str, StateChange]) -> None:
        """Each source read here that is still connecting or retrying at the end and was never opened or
        connected in the whole session fails with why: an input that could not be read is said, never taken
        for a quiet one. A source whose scan was to be made elsewhere and never began was not tried (a stop came
        first): it did not fail; one whose scan began and never got past its opening (a FIFO with no writer) was
        tried, and is said."""
        for name in [*self._here, *sorted(self._begun - self._here.keys())]:
            last = states.get(name)
            if name in self._streamed or last is None or last.state not in (State.CONNECTING, State.RETRYING):
                continue
            if last.state is State.CONNECTING and name in self._elsewhere and name not in self._begun:
                continue
            why = last.detail.partition("; retrying in ")[0] if last.state is State.RETRYING else ""
            if not why and name in self._begun:
                why = "it never opened (a FIFO or a pipe whose writer never came?)"
            reason = f"never read: {why}" if why else "never read: it did not answer (still connecting)"
            self.analyzer.source_failed(name, f"{name}: {reason}")

    def _lost(self, states: dict[str, StateChange]) -> None:
        """Each source that was read, then went down (disconnected, retrying) and stayed down to the end fails
        with how long and why: its node's log went unread for the rest of the session, which is said, never
        taken for a node that went quiet."""
        now = self.now()
        for name, outages in self.down.items():
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
        outages = self.down.setdefault(name, [])
        down = bool(outages) and outages[-1][1] is None
        if change.state is State.RETRYING:
            self._why_down[name] = change.detail.partition("; retrying in ")[0]
        if change.state in (State.CONNECTING, State.RETRYING, State.FAILED):
            if name in self._streamed and not down:
                outages.append((self.now(), None))
        elif change.state in (State.STREAMING, State.ENDED) and down:
            outages[-1] = (outages[-1][0], self.now())


class Port(Sink):
    """The sink one producer holds: the pipeline's :class:`Books`, with the producer's order where its
    sources are merged one after another (``ordered``)."""

    def __init__(self, books: Books, ordered: bool) -> None:
        self.books = books
        self.order = InOrder() if ordered else None
        self.used = False  # whether the producer listed or read any source

    def listed(self, sources: Sequence[tuple[str, str]]) -> None:
        self.used = True
        for name, node in sources:
            self.books.expect(name, node, self.order)

    def began(self, name: str) -> None:
        self.books.began(name)

    def scanned(self, item: Scanned | Done) -> None:
        self.books.handed(item, self.order)

    def report(self, change: StateChange | SourceNote) -> None:
        self.books.report(change)

    async def read(self, source: LiveSource, after: Scanned | None = None) -> None:
        self.used = True
        await self.books.read(source, self.order, after)
