"""Serving health from a server's readings: how it serves now, per endpoint, and the metric signatures that
fire when its readings stand still.

A metrics source writes one line per reading of ``/metrics`` (:mod:`sparktui.core.serving.record`); a scan
hands each over as a :class:`ReadingEvent`, and the :class:`ServingWatch` of the correlation keeps, per
endpoint, the last two readings (for tokens per second and the time to first token between them) and, per
metric signature, the first reading of the current run in which its gauge was above zero and its counter
had not moved. A run lasting the signature's ``still_for`` seconds is a hit; a reading in which the counter
moved or the gauge fell to zero ends the run, and the finding with it.

Time is the reading's own (the time its line carries), so the same readings give the same answer live,
replayed or read after the fact; a line without one falls back to when it was read. Only readings count:
a server that stops answering is a source that is retrying, not a stall.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from sparktui.core.catalogue import Signature
from sparktui.core.events import Position
from sparktui.core.serving.metrics import Reading


@dataclass(frozen=True, slots=True)
class ReadingEvent:
    """A reading's line, as a scan found it: the node and endpoint, the reading, where the line is, its text,
    when it was read (``at``, the reader's clock) and the time it says (``time``, where it says one)."""

    node: str
    endpoint: str
    reading: Reading
    position: Position
    text: str
    at: float
    time: float | None

    @property
    def when(self) -> float:
        return self.time if self.time is not None else self.at


@dataclass(frozen=True, slots=True)
class Serving:
    """How an endpoint serves, from its latest reading and the one before: ``tokens_per_s`` generated
    between the two (None with one reading, or when the counter went back: the server restarted), and
    ``ttft_s`` the mean time to first token of the requests that started between them (None when none
    did)."""

    node: str
    endpoint: str
    model: str
    running: float
    waiting: float
    kv_cache_usage: float | None
    tokens_per_s: float | None
    ttft_s: float | None

    @property
    def short(self) -> str:
        """The few words a status bar has room for: ``12.3 tok/s · 1 running · KV 4%``."""
        rate = "? tok/s" if self.tokens_per_s is None else f"{self.tokens_per_s:.1f} tok/s"
        parts = [rate, f"{self.running:g} running"]
        if self.waiting:
            parts.append(f"{self.waiting:g} waiting")
        if self.kv_cache_usage is not None:
            parts.append(f"KV {self.kv_cache_usage * 100:.0f}%")
        return " · ".join(parts)


@dataclass(frozen=True, slots=True)
class MetricHit:
    """A metric signature's run that lasted: its first reading and the latest."""

    signature: Signature
    since: ReadingEvent
    last: ReadingEvent

    @property
    def lasted(self) -> float:
        return self.last.when - self.since.when


@dataclass(slots=True)
class _Endpoint:
    latest: ReadingEvent
    previous: ReadingEvent | None = None


class ServingWatch:
    """Readings in, serving health and metric hits out; pure, fed in line order per source."""

    def __init__(self, signatures: Iterable[Signature]) -> None:
        self.signatures = tuple(s for s in signatures if s.metric is not None)
        self._endpoints: dict[tuple[str, str], _Endpoint] = {}
        self._since: dict[tuple[str, str, str], ReadingEvent] = {}  # (node, endpoint, signature) -> run start

    def add(self, event: ReadingEvent) -> None:
        key = (event.node, event.endpoint)
        known = self._endpoints.get(key)
        self._endpoints[key] = _Endpoint(event, known.latest if known is not None else None)
        for sig in self.signatures:
            rule = sig.metric
            assert rule is not None
            slot = (*key, sig.id)
            since = self._since.get(slot)
            if getattr(event.reading, rule.busy) <= 0:
                self._since.pop(slot, None)
            elif since is None or getattr(since.reading, rule.still) != getattr(event.reading, rule.still):
                self._since[slot] = event

    def health(self) -> tuple[Serving, ...]:
        """Every endpoint's health, in the order first read."""
        return tuple(_health(e) for e in self._endpoints.values())

    def hits(self) -> Iterator[MetricHit]:
        """Each run of a metric signature that has lasted its ``still_for`` seconds."""
        for sig in self.signatures:
            rule = sig.metric
            assert rule is not None
            for (node, endpoint), known in self._endpoints.items():
                since = self._since.get((node, endpoint, sig.id))
                last = known.latest
                if since is None or last.when - since.when < rule.still_for:
                    continue
                yield MetricHit(sig, since, last)


def _health(endpoint: _Endpoint) -> Serving:
    last, before = endpoint.latest, endpoint.previous
    reading = last.reading
    rate: float | None = None
    ttft: float | None = None
    if before is not None and last.when > before.when:
        generated = reading.generation_tokens - before.reading.generation_tokens
        rate = generated / (last.when - before.when) if generated >= 0 else None
        started = reading.ttft_count - before.reading.ttft_count
        if started > 0:
            ttft = (reading.ttft_sum - before.reading.ttft_sum) / started
    return Serving(
        last.node,
        last.endpoint,
        reading.model,
        reading.running,
        reading.waiting,
        reading.kv_cache_usage,
        rate,
        ttft,
    )
