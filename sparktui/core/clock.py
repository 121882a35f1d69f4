"""The time an analysis runs on: the wall clock for live sources, or an incident's own time for a replay.

Stalls are "no progress for N seconds", so the analysis asks its clock for ``now``; a replay's sources wait on
the same clock for each line's time, so pausing the clock pauses the whole replay and a replay at ten times
real time names a hang ten times sooner.
"""

from __future__ import annotations

import asyncio
import threading
import time
from abc import ABC, abstractmethod

#: The longest a replay source sleeps before looking at the clock again (a pause, or a change of speed).
WAKE = 0.05


class Clock(ABC):
    """Seconds since the start of what is being analysed."""

    @abstractmethod
    def start(self) -> None:
        """Start counting (when the sources start)."""

    @abstractmethod
    def now(self) -> float: ...


class WallClock(Clock):
    """Seconds of real time since :meth:`start`."""

    def __init__(self) -> None:
        self._start = time.monotonic()

    def start(self) -> None:
        self._start = time.monotonic()

    def now(self) -> float:
        return time.monotonic() - self._start


class ReplayClock(Clock):
    """An incident's time, running at ``speed`` times real time and stopping while paused. At speed 0 it
    runs as fast as the lines can be read: its time is then that of the latest line read
    (:meth:`reached`). Safe to pause from another thread."""

    def __init__(self, speed: float) -> None:
        self.speed = speed
        self._lock = threading.Lock()
        self._start = time.monotonic()
        self._paused_at: float | None = None
        self._reached = 0.0

    def start(self) -> None:
        with self._lock:
            self._start = time.monotonic()

    def now(self) -> float:
        with self._lock:
            if self.speed <= 0:
                return self._reached
            at = self._paused_at if self._paused_at is not None else time.monotonic()
            return (at - self._start) * self.speed

    @property
    def paused(self) -> bool:
        return self._paused_at is not None

    def pause(self) -> None:
        with self._lock:
            if self._paused_at is None:
                self._paused_at = time.monotonic()

    def resume(self) -> None:
        with self._lock:
            if self._paused_at is not None:
                self._start += time.monotonic() - self._paused_at  # the pause does not count
                self._paused_at = None

    def reached(self, moment: float) -> None:
        """A line of time ``moment`` was read (what ``now`` is at speed 0)."""
        with self._lock:
            self._reached = max(self._reached, moment)

    async def until(self, moment: float) -> None:
        """Wait until the incident's time is ``moment``."""
        self.reached(moment)
        while self.speed > 0 and self.now() < moment:
            await asyncio.sleep(min(WAKE, (moment - self.now()) / self.speed))
