"""Live analysis: every source supervised on its own task, one bounded queue into one analyser.

Producers wait when the queue is full (a slow consumer pauses the sources; an SSH channel then stops
reading its remote ``tail``), so nothing is dropped. The diagnosis can be taken at any moment; stalls
then mean "no progress for N seconds".
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace

from sparktui.core.analysis.analyzer import Analyzer
from sparktui.core.analysis.diagnosis import Diagnosis
from sparktui.core.catalogue import Catalogue
from sparktui.core.errors import Refused, Unavailable
from sparktui.core.events import SourceSummary, State, StateChange
from sparktui.core.sources.base import Backoff, LiveSource, Received, SourceGroup, supervise
from sparktui.core.sources.spool import Spool

QUEUE_BATCHES = 256


@dataclass
class LiveSession:
    """Runs ``sources`` into an :class:`Analyzer`; ``on_state`` and ``on_lines`` let a front end watch."""

    catalogue: Catalogue
    sources: Sequence[LiveSource | SourceGroup]
    on_state: Callable[[StateChange], None] = lambda change: None
    on_lines: Callable[[LiveSource, Received], None] = lambda source, received: None
    queue_batches: int = QUEUE_BATCHES
    spool: Spool | None = None
    states: dict[str, StateChange] = field(default_factory=dict)
    lines: int = 0

    def __post_init__(self) -> None:
        self.analyzer = Analyzer(self.catalogue)
        self._by_name: dict[str, LiveSource] = {}
        self._expanded: set[str] = set()
        for source in self.sources:
            if isinstance(source, LiveSource):
                self._add(source)
        self._start = 0.0

    def _add(self, source: LiveSource) -> None:
        self._by_name[source.name] = source
        self.analyzer.add_source(source.name, source.node)

    def elapsed(self) -> float:
        return asyncio.get_running_loop().time() - self._start

    def diagnosis(self) -> Diagnosis:
        diagnosis = self.analyzer.finish(now=self.elapsed())
        extra = []
        for group in self.sources:  # a group that never found its sources still says why
            change = self.states.get(group.name)
            if isinstance(group, SourceGroup) and group.name not in self._expanded and change is not None:
                extra.append(SourceSummary(group.name, "", 0, f"{change.state.value}: {change.detail}"))
        return replace(diagnosis, sources=(*diagnosis.sources, *extra))

    async def run(self, seconds: float | None = None) -> Diagnosis:
        """Stream until ``seconds`` have passed (or every source has ended), then return the diagnosis."""
        self._start = asyncio.get_running_loop().time()
        queue: asyncio.Queue[tuple[str, Received]] = asyncio.Queue(maxsize=self.queue_batches)

        async def deliver(name: str, received: Received) -> None:
            await queue.put((name, received))

        producers = [asyncio.create_task(supervise(s, deliver, self._report)) for s in self._by_name.values()]
        producers += [asyncio.create_task(self._group(g, deliver)) for g in self.sources if isinstance(g, SourceGroup)]
        consumer = asyncio.create_task(self._consume(queue))
        try:
            await asyncio.wait(producers, timeout=seconds)
        finally:
            for task in producers:
                task.cancel()
            await asyncio.gather(*producers, return_exceptions=True)
            await queue.join()
            consumer.cancel()
            await asyncio.gather(consumer, return_exceptions=True)
            if self.spool is not None:
                self.spool.close()
        return self.diagnosis()

    async def _group(self, group: SourceGroup, deliver: Callable[[str, Received], Awaitable[None]]) -> None:
        """Expand a group (retrying like a source until it is refused), then supervise what it found."""
        backoff = Backoff()
        while True:
            self._report(StateChange(group.name, State.CONNECTING))
            try:
                found = await group.expand()
                break
            except Refused as exc:
                self._report(StateChange(group.name, State.FAILED, str(exc)))
                return
            except Unavailable as exc:
                delay = backoff.next_delay()
                self._report(StateChange(group.name, State.RETRYING, f"{exc}; retrying in {delay:.1f} s"))
                await asyncio.sleep(delay)
        self._expanded.add(group.name)
        self._report(StateChange(group.name, State.ENDED, f"{len(found)} sources"))
        for source in found:
            self._add(source)
        await asyncio.gather(*(supervise(s, deliver, self._report) for s in found))

    async def _consume(self, queue: asyncio.Queue[tuple[str, Received]]) -> None:
        while True:
            name, received = await queue.get()
            try:
                source = self._by_name[name]
                if source.node != self.analyzer.node_of(name):
                    self.analyzer.set_node(name, source.node)  # the content named the node
                self.analyzer.feed(name, "\n".join(received.lines), now=self.elapsed())
                if self.spool is not None:
                    self.spool.write(name, source.node, received.lines)
                self.lines += len(received.lines)
                self.on_lines(source, received)
            finally:
                queue.task_done()

    def _report(self, change: StateChange) -> None:
        if change.state is not State.EVENT:
            self.states[change.source] = change
        if change.state is State.FAILED and change.source in self._by_name:
            self.analyzer.source_failed(change.source, change.detail)
        self.on_state(change)
