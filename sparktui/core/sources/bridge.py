"""The one way a blocking SDK's stream (the Docker engine's logs, Ray's log API) reaches the event loop.

A :class:`Bridge` runs a blocking iterator in a thread of its own. What it yields waits in a buffer of at
most ``limit`` items; while the buffer is full the thread stops reading, so the remote end stops sending.
The event loop takes everything buffered at once (:meth:`Bridge.take`), so a busy stream costs one wake-up
per batch, not one per item. The end of the stream, or what the SDK raised, comes after the last item.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterable
from typing import Generic, TypeVar

T = TypeVar("T")


class Bridge(Generic[T]):
    """Reads ``produce()`` in its own thread. ``interrupt`` (optional) unblocks a thread waiting inside the
    SDK when the bridge is closed (closing the SDK's stream); without it, a closed bridge's thread ends when
    its next item or its end arrives, and hands over nothing more."""

    def __init__(
        self,
        produce: Callable[[], Iterable[T]],
        *,
        limit: int,
        name: str,
        interrupt: Callable[[], None] | None = None,
    ) -> None:
        self._limit = limit
        self._interrupt = interrupt
        self._loop = asyncio.get_running_loop()
        self._ready = asyncio.Event()  # set (on the loop) when items or the end wait in the buffer
        self._room = threading.Condition()  # guards the three fields below
        self._items: list[T] = []
        self._end: BaseException | bool = False  # True at the end of the stream, or what the SDK raised
        self._closed = False
        threading.Thread(target=self._run, args=(produce,), name=name, daemon=True).start()

    def _run(self, produce: Callable[[], Iterable[T]]) -> None:
        try:
            for item in produce():
                if not self._put(item):
                    return
        except Exception as exc:  # whatever the SDK raised goes to the loop, after the items before it
            self._finish(exc)
            return
        self._finish(True)

    def _put(self, item: T) -> bool:
        with self._room:
            while len(self._items) >= self._limit and not self._closed:
                self._room.wait()
            if self._closed:
                return False
            wake = not self._items
            self._items.append(item)
        return self._wake() if wake else True

    def _finish(self, end: BaseException | bool) -> None:
        with self._room:
            self._end = end
        self._wake()

    def _wake(self) -> bool:
        try:
            self._loop.call_soon_threadsafe(self._ready.set)
        except RuntimeError:  # the event loop is closed
            return False
        return True

    async def take(self, wait: float | None = None) -> list[T] | None:
        """Every item waiting, after waiting (up to ``wait`` seconds, or for as long as it takes) for the
        first: an empty list after ``wait`` seconds of silence, None once the stream has ended and every
        item was taken. Raises what the SDK raised, once every item before it was taken."""
        deadline = None if wait is None else self._loop.time() + wait
        while True:
            remaining = None if deadline is None else deadline - self._loop.time()
            if remaining is not None and remaining <= 0:
                return []
            try:  # asyncio.timeout: wait_for can swallow a cancel that comes as the event is set
                async with asyncio.timeout(remaining):
                    await self._ready.wait()
            except TimeoutError:
                return []
            with self._room:
                items, self._items = self._items, []
                end = self._end
                if not end:
                    self._ready.clear()
                self._room.notify()
            if items:
                return items
            if isinstance(end, BaseException):
                raise end
            if end:
                return None

    def close(self) -> None:
        with self._room:
            self._closed = True
            self._room.notify()
        if self._interrupt is not None:
            self._interrupt()
