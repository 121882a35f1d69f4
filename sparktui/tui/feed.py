"""Feeding the app: a bundle replayed at its own pace on a worker thread (:class:`Feeder`) or live sources
on the app's event loop (:class:`LiveFeeder`), analysed by the core and handed to the interface in
batches. Nothing here imports Textual."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

from sparktui.core.analysis.analyzer import Analyzer
from sparktui.core.analysis.diagnosis import Diagnosis
from sparktui.core.catalogue import Catalogue
from sparktui.core.classify import Classification, classify
from sparktui.core.events import State, StateChange
from sparktui.core.live import LiveSession
from sparktui.core.sources.base import LiveSource, Received, SourceGroup
from sparktui.core.sources.bundle import Bundle
from sparktui.core.sources.spool import Spool
from sparktui.core.text import display

BATCH_SECONDS = 0.1
DIAGNOSE_SECONDS = 0.5


@dataclass(frozen=True, slots=True)
class ShownLine:
    source: str
    number: int
    node: str
    text: str  # safe to display
    kind: Classification


@dataclass(slots=True)
class Batch:
    lines: list[ShownLine] = field(default_factory=list)
    diagnosis: Diagnosis | None = None
    clock: float = 0.0  # seconds since the start of the incident
    states: dict[str, str] = field(default_factory=dict)  # source -> state
    done: bool = False
    received_at: float = 0.0  # time.perf_counter() when its first line came in (for latency measurements)


Timeline = Iterator[tuple[int, str, str, str]]  # (milliseconds, source name, node, line)


def bundle_timeline(bundle: Bundle) -> Timeline:
    for ms, src, line in bundle.timeline():
        yield ms, src.name, src.node, line


class Feeder:
    """Plays a timeline into an analyser at ``speed`` times real time (0: as fast as possible) and calls
    ``post`` with a batch every :data:`BATCH_SECONDS` of wall time."""

    def __init__(self, catalogue: Catalogue, speed: float, post: Callable[[Batch], None]) -> None:
        self.analyzer = Analyzer(catalogue)
        self.speed = speed
        self.post = post
        self.paused = threading.Event()
        self.stopped = threading.Event()
        self._numbers: dict[str, int] = {}
        self._states: dict[str, str] = {}
        self._pending: dict[str, list[str]] = {}
        self._batch = Batch()
        self._last_post = self._last_diagnosis = 0.0

    def run(self, timeline: Timeline, duration: float = 0.0) -> None:
        """Play ``timeline``; with a pace, keep the clock running until ``duration`` seconds (a hang's
        silence after the last line is part of the incident)."""
        start = time.monotonic()
        self._last_diagnosis = start
        clock = 0.0
        for ms, source, node, line in timeline:
            if self.stopped.is_set():
                return
            clock = ms / 1000
            if self.speed > 0:
                start = self._wait_until(start, clock)
            if source not in self._numbers:
                self.analyzer.add_source(source, node)
                self._states[source] = "streaming"
            self._numbers[source] = self._numbers.get(source, 0) + 1
            self._batch.lines.append(shown(source, self._numbers[source], node, line))
            self._pending.setdefault(source, []).append(line)
            if time.monotonic() - self._last_post >= BATCH_SECONDS:
                self._post(clock)
        if self.speed > 0 and duration > clock and not self.stopped.is_set():
            start = self._wait_until(start, duration)
            clock = duration
        self._flush(clock)
        for source, state in self._states.items():
            if state == "streaming":
                self._states[source] = "ended"
        self._batch.diagnosis = self.analyzer.finish()
        self._batch.done = True
        self._send(clock)

    def _post(self, clock: float) -> None:
        """Hand over the lines so far, with a fresh diagnosis every :data:`DIAGNOSE_SECONDS`."""
        self._flush(clock)
        now = time.monotonic()
        if now - self._last_diagnosis >= DIAGNOSE_SECONDS:
            self._batch.diagnosis = self.analyzer.finish(now=clock)
            self._last_diagnosis = now
        self._send(clock)

    def _flush(self, clock: float) -> None:
        for source, lines in self._pending.items():
            self.analyzer.feed(source, "\n".join(lines), now=clock)
        self._pending.clear()

    def _send(self, clock: float) -> None:
        batch, self._batch = self._batch, Batch()
        batch.clock = clock
        batch.states = dict(self._states)
        self.post(batch)
        self._last_post = time.monotonic()

    def _wait_until(self, start: float, clock: float) -> float:
        """Sleep until the incident's ``clock`` is due; time spent paused moves the start later. A long
        quiet gap is exactly when a hang shows, so the diagnosis keeps being refreshed while waiting."""
        while True:
            if self.paused.is_set():
                paused_at = time.monotonic()
                while self.paused.is_set() and not self.stopped.is_set():
                    time.sleep(0.05)
                start += time.monotonic() - paused_at
            now = time.monotonic()
            delay = start + clock / self.speed - now
            if delay <= 0 or self.stopped.is_set():
                return start
            if now - self._last_post >= BATCH_SECONDS:
                self._post((now - start) * self.speed)
            time.sleep(min(delay, 0.05))


def shown(source: str, number: int, node: str, line: str) -> ShownLine:
    kind = classify(line)
    return ShownLine(source, number, kind.node or node, display(line), kind)


class LiveFeeder:
    """Runs a :class:`LiveSession` and posts what arrived every :data:`BATCH_SECONDS`, with a fresh
    diagnosis every :data:`DIAGNOSE_SECONDS` (stalls then read "no progress for N seconds")."""

    def __init__(
        self,
        catalogue: Catalogue,
        sources: Sequence[LiveSource | SourceGroup],
        post: Callable[[Batch], None],
        spool: Spool | None = None,
    ) -> None:
        self.session = LiveSession(catalogue, sources, on_state=self._state, on_lines=self._lines, spool=spool)
        self.post = post
        self.paused = threading.Event()  # the view stops following; the sources keep streaming
        self.stopped = threading.Event()
        self._batch = Batch()
        self._numbers: dict[str, int] = {}
        self._states: dict[str, str] = {s.name: "connecting" for s in sources}

    async def run(self, seconds: float | None = None) -> None:
        ticker = asyncio.create_task(self._tick())
        try:
            await self.session.run(seconds)
        finally:
            ticker.cancel()
            self._batch.diagnosis = self.session.diagnosis()
            self._batch.done = True
            self._send()

    async def _tick(self) -> None:
        last_diagnosis = 0.0
        while True:
            await asyncio.sleep(BATCH_SECONDS)
            now = time.monotonic()
            if now - last_diagnosis >= DIAGNOSE_SECONDS:
                self._batch.diagnosis = self.session.diagnosis()
                last_diagnosis = now
            self._send()

    def _send(self) -> None:
        batch, self._batch = self._batch, Batch()
        batch.clock = self.session.elapsed()
        batch.states = dict(self._states)
        self.post(batch)

    def _lines(self, source: LiveSource, received: Received) -> None:
        number = self._numbers.get(source.name, 0)
        if not self._batch.lines:
            self._batch.received_at = time.perf_counter()
        for line in received.lines:
            number += 1
            self._batch.lines.append(shown(source.name, number, source.node, line))
        self._numbers[source.name] = number

    def _state(self, change: StateChange) -> None:
        if change.state is State.EVENT:
            return
        self._states[change.source] = f"{change.state.value} {change.detail}".strip()
