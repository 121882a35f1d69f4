"""The contract every live source meets, and the supervisor that keeps one running.

A :class:`LiveSource` is one stream of log lines from one place (a file followed like ``tail -F``, a file
or container or journal over SSH, a local container, a Ray log). It knows how to connect, how to stream,
and how to resume from a :data:`Cursor` it handed out earlier; everything about retrying lives in
:func:`supervise`, once, for all of them.
"""

from __future__ import annotations

import asyncio
import random
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import TypeVar

from sparktui.core.errors import Refused, Unavailable
from sparktui.core.events import SourceNote, State, StateChange
from sparktui.core.text import Inert

#: Where to resume a stream: a byte offset, a Docker timestamp, a Ray log offset... opaque to the caller,
#: meaningful to the source that produced it.
Cursor = int | float | str
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Extent:
    """How much of a source has been read: bytes of it, and its size in bytes where it has one (a file; not
    a pipe or a remote stream). A followed file's size is what it holds now, so a file still being written
    can be read past the size it had when it was first looked at."""

    read: int
    size: int | None = None


@dataclass(frozen=True, slots=True)
class Received:
    """Complete, decoded lines in the order written, and the cursor just after the last of them; ``note``
    is news from the source that comes before those lines and is not a line of the log (lines lost to a
    rotation): the supervisor reports it as an event; ``kept`` lines come from the spool, not the source."""

    lines: tuple[str, ...]
    cursor: Cursor
    note: str = ""
    kept: bool = False  # the lines are the spool's already (read back on a resume): analysed, not kept again


class LiveSource(ABC):
    """One stream of log lines.

    ``stream(cursor)`` connects, then yields :class:`Received` batches of complete lines in order. With a
    cursor from an earlier batch it continues right after that batch, so nothing is lost or repeated
    across reconnects; with ``None`` it starts where the source starts (the beginning of a file, the
    container's first log line). It returns when the source has ended for good (a finished container
    whose logs are all read; never for a followed file), and raises :class:`Unavailable` or
    :class:`Refused`. It may yield empty batches to show it is alive. Undecodable bytes are
    replaced, never raised.
    """

    # Both are shown to the user as they are set (the text of a file's name, of a node a bundle or a log names):
    # :class:`Inert` makes them safe for a terminal where they are set, once for every front end.
    name = Inert()  # shown to the user, unique in a session
    node = Inert()  # the node the lines come from
    finite = False  # True for a source that ends by itself (a file read once, a replay)
    kind = "source"  # what sort of source it is, in a word or two, for a list of sources
    # True where a cursor it handed out means the same in another process, later (a file position, a
    # journal cursor, a time stamp): a new session resumes such a source from the spool's checkpoint.
    resumable = False

    @property
    def hosts(self) -> frozenset[str]:
        """The machine's own names, where the source could ask it (its lines are then known to be that
        node's: see :meth:`~sparktui.core.analysis.scan.Scan.home`); none by default."""
        return frozenset()

    @abstractmethod
    def stream(self, cursor: Cursor | None) -> AsyncIterator[Received]: ...

    def extent(self, cursor: Cursor | None) -> Extent | None:
        """How much of the source was read once the batch that handed out ``cursor`` was (None: before the
        first), for a source that knows (a file: a big one takes a while); None where it does not. Cheap
        enough to ask once per batch."""
        return None


class SourceGroup(ABC):
    """A name that stands for several sources found only once connected (every Ray log of a node, a
    container reached through a forwarded socket). ``expand`` returns them, or raises
    :class:`Unavailable` / :class:`Refused` like a source does."""

    name: str
    finite = False  # True when every source it finds ends by itself (Ray's logs read once)

    @abstractmethod
    async def expand(self) -> list[LiveSource]: ...

    async def later(self) -> AsyncIterator[LiveSource]:
        """The sources a followed group finds after :meth:`expand` returned (a Ray worker started since: its
        log file), each once, as they appear; none by default. Runs until cancelled: a listing that fails
        is tried again, and each source it found says its own trouble."""
        return
        yield  # an async generator that yields nothing


@dataclass(slots=True)
class Backoff:
    """Exponential back-off with full jitter, reset after a stream has run for a while."""

    first: float = 0.5
    limit: float = 30.0
    factor: float = 2.0
    attempt: int = 0
    rng: random.Random = field(default_factory=random.Random)

    def next_delay(self) -> float:
        ceiling = min(self.limit, self.first * self.factor**self.attempt)
        self.attempt += 1
        return self.rng.uniform(ceiling / 2, ceiling)

    def reset(self) -> None:
        self.attempt = 0


async def retrying(
    name: str,
    attempt: Callable[[], Awaitable[T]],
    report: Callable[[StateChange], None],
    backoff: Backoff | None = None,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ended: Callable[[T], str] = lambda _result: "",
) -> T | None:
    """The one retry loop: ``attempt`` again after each :class:`Unavailable`, with back-off, until it returns
    (its result) or is :class:`Refused` (None). Reports connecting, retrying (with the reason and the delay),
    failed and ended (with ``ended(result)`` as its detail) as ``name``."""
    backoff = backoff or Backoff()
    while True:
        report(StateChange(name, State.CONNECTING))
        try:
            result = await attempt()
        except Refused as exc:
            report(StateChange(name, State.FAILED, str(exc)))
            return None
        except Unavailable as exc:
            delay = backoff.next_delay()
            report(StateChange(name, State.RETRYING, f"{exc}; retrying in {delay:.1f} s"))
            await sleep(delay)
            continue
        report(StateChange(name, State.ENDED, ended(result)))
        return result


async def supervise(
    source: LiveSource,
    deliver: Callable[[str, Received], Awaitable[None]],
    report: Callable[[StateChange | SourceNote], None],
    backoff: Backoff | None = None,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> None:
    """Keep ``source`` streaming until it ends, is refused or the task is cancelled.

    Every batch goes to ``deliver`` (which may wait: that is how a slow consumer pauses the producer), and
    the cursor of the last delivered batch is where a reconnect resumes. State changes go to ``report``, and
    so does a batch's note (a :class:`SourceNote`), before its lines.
    """
    backoff = backoff or Backoff()
    cursor: Cursor | None = None

    async def stream() -> None:
        nonlocal cursor
        streaming = False
        async for received in source.stream(cursor):
            if not streaming:
                streaming = True
                report(StateChange(source.name, State.STREAMING))
                backoff.reset()
            if received.note:
                report(SourceNote(source.name, received.note))
            if received.lines:
                await deliver(source.name, received)
            cursor = received.cursor

    await retrying(source.name, stream, report, backoff, sleep)


async def expand(
    group: SourceGroup,
    report: Callable[[StateChange], None],
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> list[LiveSource]:
    """The sources of ``group``, retrying like a source until they are found (none when it is refused)."""
    found = await retrying(group.name, group.expand, report, sleep=sleep, ended=lambda s: f"{len(s)} sources")
    return found or []
