"""Live analysis: every source supervised on its own task, one bounded queue into one analyser.

Producers wait when the queue is full (a slow consumer pauses the sources; an SSH channel then stops
reading its remote ``tail``), so nothing is dropped. The diagnosis can be taken at any moment; stalls
then mean "no progress for N seconds".
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from sparktui.core.analysis import Analyzer
from sparktui.core.catalogue import Catalogue
from sparktui.core.diagnosis import Diagnosis
from sparktui.core.sources.base import LiveSource, Received, State, StateChange, supervise
from sparktui.core.spool import Spool

QUEUE_BATCHES = 256


@dataclass
class LiveSession:
    """Runs ``sources`` into an :class:`Analyzer`; ``on_state`` and ``on_lines`` let a front end watch."""

    catalogue: Catalogue
    sources: Sequence[LiveSource]
    on_state: Callable[[StateChange], None] = lambda change: None
    on_lines: Callable[[LiveSource, Received], None] = lambda source, received: None
    queue_batches: int = QUEUE_BATCHES
    spool: Spool | None = None
    states: dict[str, StateChange] = field(default_factory=dict)
    lines: int = 0

    def __post_init__(self) -> None:
        self.analyzer = Analyzer(self.catalogue)
        self._by_name = {s.name: s for s in self.sources}
        for source in self.sources:
            self.analyzer.add_source(source.name, source.node)
        self._start = 0.0

    def elapsed(self) -> float:
        return asyncio.get_running_loop().time() - self._start

    def diagnosis(self) -> Diagnosis:
        return self.analyzer.finish(now=self.elapsed())

    async def run(self, seconds: float | None = None) -> Diagnosis:
        """Stream until ``seconds`` have passed (or every source has ended), then return the diagnosis."""
        self._start = asyncio.get_running_loop().time()
        queue: asyncio.Queue[tuple[str, Received]] = asyncio.Queue(maxsize=self.queue_batches)

        async def deliver(name: str, received: Received) -> None:
            await queue.put((name, received))

        producers = [asyncio.create_task(supervise(s, deliver, self._report)) for s in self.sources]
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
        if change.state is State.FAILED:
            self.analyzer.source_failed(change.source, change.detail)
        self.on_state(change)
