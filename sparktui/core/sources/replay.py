"""An incident bundle replayed as if live: each of its logs a source that hands over its lines at the times
they first arrived, on the incident's own clock.

All the logs of a bundle share one :class:`~sparktui.core.clock.ReplayClock`, so their lines interleave as
they did; pausing the clock pauses the replay. After its last line a log waits until the incident's
``duration`` (a hang's silence after the last line is part of the incident), then ends.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from sparktui.core.clock import ReplayClock
from sparktui.core.errors import Refused
from sparktui.core.sources.base import Cursor, LiveSource, Received
from sparktui.core.sources.bundle import Bundle, BundleSource
from sparktui.core.sources.files import SourceError

#: The most lines handed over at once when many come due together (a replay at speed 0).
BATCH = 4096


class ReplayedLog(LiveSource):
    """One log of a bundle, at its recorded pace. The cursor is the number of lines handed over."""

    finite = True
    kind = "replayed log"

    def __init__(self, log: BundleSource, clock: ReplayClock, duration_ms: int = 0) -> None:
        self.log, self.clock, self.duration_ms = log, clock, duration_ms
        self.name, self.node = log.name, log.node

    async def stream(self, cursor: Cursor | None) -> AsyncIterator[Received]:
        skip = int(cursor) if isinstance(cursor, int) else 0
        done = 0
        batch: list[str] = []
        due = 0
        try:
            for ms, line in self.log.timed_lines():
                done += 1
                if done <= skip:
                    continue
                if ms > due or len(batch) >= BATCH:
                    if batch:
                        yield Received(tuple(batch), done - 1)
                        batch = []
                    due = ms
                    await self.clock.until(ms / 1000)
                batch.append(line)
        except SourceError as exc:
            raise Refused(str(exc)) from None
        if batch:
            yield Received(tuple(batch), done)
        await self.clock.until(self.duration_ms / 1000)


def replay(bundle: Bundle, clock: ReplayClock) -> list[LiveSource]:
    """Every log of ``bundle`` as a source, all on ``clock``."""
    return [ReplayedLog(log, clock, bundle.duration_ms) for log in bundle.sources]
