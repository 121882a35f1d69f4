"""Every wait the tests do, bounded and in one place.

A test waits for a condition, never for a time: :func:`wait_until` (a thread) and :func:`until` (a coroutine)
ask ``condition`` again every :data:`POLL` seconds until it gives something true, which they return, and fail
naming what was waited for once ``timeout`` seconds have passed. :func:`settle` is the only duration: it lets a
Textual app handle what is pending and paint, for a test that looks at the screen or shows that a key did
nothing.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from textual.pilot import Pilot

T = TypeVar("T")

#: Seconds between two looks at a condition.
POLL = 0.02
#: Seconds a Textual app is given to handle what is pending and paint it (:func:`settle`).
SETTLE = 0.3


def wait_until(condition: Callable[[], T], timeout: float, what: str) -> T:
    """``condition()`` once it is true, asked until ``timeout`` seconds have passed; then fails naming ``what``."""
    deadline = time.monotonic() + timeout
    while not (value := condition()):
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout} s")
        time.sleep(POLL)
    return value


async def until(condition: Callable[[], T], timeout: float, what: str) -> T:
    """:func:`wait_until` for a coroutine: the event loop runs while it waits."""
    deadline = time.monotonic() + timeout
    while not (value := condition()):
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout} s")
        await asyncio.sleep(POLL)
    return value


async def settle(pilot: Pilot[Any]) -> None:
    """Let a Textual app (run by ``pilot``) handle the messages pending, end its animations and paint."""
    await pilot.wait_for_scheduled_animations()
    await pilot.pause(SETTLE)
