"""Container logs through the Docker engine API (the ``docker`` SDK).

:class:`DockerSource` follows one container by name, on the local engine or on any engine the SDK can
reach (``unix://`` a socket forwarded from another node, ``tcp://``, ``ssh://``). The SDK blocks, so each
log stream is read through a :class:`~sparktui.core.sources.bridge.Bridge`: a slow consumer stops the
thread reading, and the engine waits. Short calls (inspect, events) run in the event loop's default
executor.

Resuming. Docker stamps every log message with the time its copier read it, but the stamps are not in
file order: the parts of a line longer than 16 KiB all carry the stamp of the first part, even when the
other stream (stdout / stderr) wrote lines in between, and the two streams' copiers race by microseconds.
``logs(since=...)`` drops every message stamped before ``since``, so resuming right after the last line
delivered could lose a message written later with an earlier stamp. The cursor therefore names a
``since`` that trails the newest delivered stamp by :data:`MARGIN` (and stays at or before the first part
of any line still being written in parts) and the number of messages from ``since`` on that were already
delivered: a resume asks for ``since`` and skips exactly those, so nothing is lost or repeated. The cursor
also names the container id: a container recreated under the same name is read from its beginning.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncGenerator, AsyncIterator, Iterator
from contextlib import aclosing, suppress
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any

import docker
from docker.errors import NotFound

from sparktui.core.errors import Refused, Unavailable
from sparktui.core.remote.docker import SDK_ERRORS, connect, engine_name, problem
from sparktui.core.sources.base import Cursor, LiveSource, Received
from sparktui.core.sources.bridge import Bridge
from sparktui.core.text import decode

#: How far (nanoseconds) a resume reaches back before the newest delivered message.
MARGIN = 2 * 10**9
#: How long (nanoseconds) a line still being written in parts holds the resume point back.
PARTIAL_HOLD = 600 * 10**9
#: Seconds between looks at a container that is not running, while waiting for it to run again.
POLL = 0.5
#: The engine's log buffer: a longer line is logged in parts of this many bytes, all with the first stamp.
PART = 16 * 1024
#: Log messages (a line each, mostly) a log thread buffers before it waits for the event loop to take them.
BUFFERED_LINES = 4096

_STAMP = re.compile(rb"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?Z")
_STAMP_AHEAD = re.compile(rb"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,9})?Z ")
_RUNNING = frozenset({"running", "paused"})


def nanoseconds(stamp: bytes) -> int:
    """Nanoseconds since the epoch of a Docker (RFC 3339, UTC) time stamp; ValueError if it is not one."""
    m = _STAMP.fullmatch(stamp)
    if m is None:
        raise ValueError(f"not a Docker time stamp: {stamp[:40]!r}")
    return _seconds(m[1]) * 10**9 + int((m[2] or b"").ljust(9, b"0"))


@lru_cache(maxsize=256)
def _seconds(stamp: bytes) -> int:
    return int(datetime.fromisoformat(stamp.decode()).replace(tzinfo=UTC).timestamp())


@dataclass(frozen=True, slots=True)
class Resume:
    """Where a log stream continues: in container ``container``, the messages stamped at or after
    ``since`` (whole seconds; 0 for the container's first message) less the first ``skip`` of them."""

    container: str
    since: int = 0
    skip: int = 0

    def encode(self) -> str:
        return f"{self.container}:{self.since}:{self.skip}"

    @classmethod
    def decode(cls, cursor: Cursor) -> Resume:
        container, since, skip = str(cursor).split(":")
        return cls(container, int(since), int(skip))


class LogReader:
    """Turns timestamped log messages (``b"<stamp> <text>"``, as the engine sends them) into lines and
    the cursor after them.

    The parts of a long line are joined when they arrive one after the other; when the other stream cut
    in between, each run of parts is a line of its own (nothing is lost, the line arrives in pieces). A
    line still being written in parts is held back and not counted in the cursor until it ends, another
    message follows, or the stream ends. Not thread-safe: one reader belongs to one stream.
    """

    def __init__(self, resume: Resume) -> None:
        self.container = resume.container
        self.since = resume.since
        self._skip = resume.skip
        self._per_second: dict[int, int] = {}  # delivered messages per second, from `since` on
        self._newest = 0
        self._open: set[int] = set()  # first-part stamps of lines still being written in parts
        self._held: list[tuple[int, bytes]] = []

    def feed(self, message: bytes) -> list[str]:
        """The lines completed by one message (often one, none while skipping or holding a part)."""
        head, _, text = message.partition(b" ")
        try:
            stamp = nanoseconds(head)
        except ValueError:  # never sent by an engine; keep the bytes, count them with the newest
            stamp, text = self._newest, message
        if self._skip:
            self._skip -= 1
            self._commit(stamp, text)
            return []
        lines = []
        if self._held and self._held[0][0] != stamp:
            lines.append(self._release())
        self._held.append((stamp, text))
        if text.endswith(b"\n"):
            lines.append(self._release())
        return lines

    def finish(self) -> list[str]:
        """The stream ended: a line still held in parts is complete as it is."""
        return [self._release()] if self._held else []

    def cursor(self) -> str:
        """The cursor after every line returned so far."""
        self._open = {s for s in self._open if s > self._newest - PARTIAL_HOLD}
        reach = min(self._newest - MARGIN, *self._open) if self._open else self._newest - MARGIN
        since = reach // 10**9
        if since > self.since:
            self.since = since
            self._per_second = {s: n for s, n in self._per_second.items() if s >= since}
        return Resume(self.container, self.since, sum(self._per_second.values())).encode()

    def _release(self) -> str:
        parts, self._held = self._held, []
        for stamp, text in parts:
            self._commit(stamp, text)
        line = decode(b"".join(t for _, t in parts))
        return line.removesuffix("\n").rstrip("\r")

    def _commit(self, stamp: int, text: bytes) -> None:
        second = stamp // 10**9
        if second >= self.since:
            self._per_second[second] = self._per_second.get(second, 0) + 1
        self._newest = max(self._newest, stamp)
        if text.endswith(b"\n"):
            self._open.discard(stamp)
        else:
            self._open.add(stamp)


def tty_messages(chunks: Iterator[bytes]) -> Iterator[bytes]:
    """The messages of a container with a terminal, whose logs come as one byte stream: one per line
    (each starts with its stamp), the last one possibly without its newline. A line longer than the
    engine's :data:`PART` bytes came as several messages; they are told apart by the stamp that follows
    each full part."""
    pending = bytearray()
    for chunk in chunks:
        pending += chunk
        if b"\n" not in chunk:
            continue
        *complete, rest = bytes(pending).split(b"\n")
        for line in complete:
            yield from _parts(line + b"\n")
        pending = bytearray(rest)
    if pending:
        yield from _parts(bytes(pending))


def _parts(message: bytes) -> Iterator[bytes]:
    while True:
        cut = message.find(b" ") + 1 + PART
        if len(message) <= cut or not _STAMP_AHEAD.match(message, cut):
            yield message
            return
        yield message[:cut]
        message = message[cut:]


@dataclass(frozen=True, slots=True)
class _Look:
    """One inspection of a container."""

    id: str
    status: str  # created, running, paused, restarting, removing, exited, dead
    exit_code: int
    oom_killed: bool
    started_at: str
    finished_at: str
    tty: bool

    @classmethod
    def of(cls, attrs: dict[str, Any]) -> _Look:
        state = attrs["State"]
        return cls(
            attrs["Id"],
            state["Status"],
            state["ExitCode"],
            state["OOMKilled"],
            state["StartedAt"],
            state["FinishedAt"],
            bool(attrs["Config"].get("Tty")),
        )

    @property
    def running(self) -> bool:
        return self.status in _RUNNING

    @property
    def key(self) -> tuple[str, ...]:
        return (self.id, self.status, self.finished_at)

    def describe(self, name: str) -> str:
        """Why this (not running) container has no live logs, in one line."""
        code = f"code {self.exit_code}" + (" (OOM killed)" if self.oom_killed else "")
        match self.status:
            case "exited":
                return f"container {name} exited with {code}"
            case "restarting":
                return f"container {name} exited with {code}; Docker is restarting it"
            case "dead":
                return f"container {name} is dead (exit {code})"
            case "created":
                return f"container {name} has not been started"
            case "removing":
                return f"container {name} is being removed"
            case _:
                return f"container {name} is {self.status}"


_MISSING = ("missing",)


class DockerSource(LiveSource):
    """The logs of the container named ``container`` (stdout and stderr, in the order written, without
    Docker's time stamps), followed through restarts and recreations.

    Yields batches of lines; the cursor is a :class:`Resume`. Raises :class:`Unavailable` when the
    engine cannot be reached or the connection drops, and once for each new reason the container has
    no live logs: it is missing, it exited (``container vllm exited with code 137 (OOM killed)``), it
    was restarted or removed. After reporting a reason, the next ``stream`` waits quietly (connecting,
    looking every :data:`POLL` seconds) until the container runs again, then continues where it left
    off; a container recreated under the same name is read from its first line. Raises
    :class:`Refused` when retrying cannot help: permission denied on the engine's socket, or a
    logging driver that cannot be read back. Never returns: a container can always come back.

    Read once (``follow=False``), it reads what the container wrote until now and ends; an engine that
    cannot be reached or a container that does not exist is refused, since waiting cannot help a read
    that ends. ``start`` is where a first stream begins (a cursor an earlier reader of it ended at).
    """

    kind = "container"
    resumable = True  # the container's id and a time stamp

    def __init__(
        self,
        container: str,
        *,
        base_url: str | None = None,
        name: str | None = None,
        node: str = "localhost",
        engine: str | None = None,
        follow: bool = True,
        start: Cursor | None = None,
    ) -> None:
        """``engine`` names the engine in errors (default: by ``base_url``)."""
        self.container = container
        self.follow = follow
        self.finite = not follow
        self.start = start
        self.base_url = base_url
        self.name = name or f"docker://{container}"
        self.node = node
        self.engine = engine or engine_name(base_url)
        self._reported: tuple[str, ...] | None = None  # the last reason raised
        self._drained: tuple[str, ...] | None = None  # the stopped container whose logs were read to the end

    async def stream(self, cursor: Cursor | None) -> AsyncIterator[Received]:
        cursor = cursor if cursor is not None else self.start
        if not self.follow:
            async with aclosing(self._once(cursor)) as batches:
                async for received in batches:
                    yield received
            return
        client = await asyncio.to_thread(connect, self.base_url, self.engine)
        try:
            while True:
                look = await self._look(client)
                if look is None:
                    self._report(_MISSING, f"no container named {self.container} on {self.engine}")
                    await asyncio.sleep(POLL)
                    continue
                resume = _resume(cursor, look)
                if not look.running:
                    if look.key != self._drained:  # first read what it wrote before it stopped
                        async with aclosing(self._read(client, look, resume, follow=False)) as batches:
                            async for received in batches:
                                cursor = received.cursor
                                yield received
                        self._drained = look.key
                    self._report(look.key, look.describe(self.container))
                    await asyncio.sleep(POLL)
                    continue
                async with aclosing(self._read(client, look, resume, follow=True)) as batches:
                    async for received in batches:
                        cursor = received.cursor
                        yield received
                await self._stopped(client, look)
        finally:
            client.close()

    async def _once(self, cursor: Cursor | None) -> AsyncGenerator[Received]:
        """What the container wrote until now, from ``cursor`` on (read once)."""
        try:
            client = await asyncio.to_thread(connect, self.base_url, self.engine)
            try:
                look = await self._look(client)
                if look is None:
                    raise Refused(f"no container named {self.container} on {self.engine}")
                async with aclosing(self._read(client, look, _resume(cursor, look), follow=False)) as batches:
                    async for received in batches:
                        yield received
            finally:
                client.close()
        except Unavailable as exc:
            raise Refused(str(exc)) from None

    def _report(self, key: tuple[str, ...], reason: str) -> None:
        """Raise ``reason`` once per new ``key``; after that, the caller waits."""
        if key != self._reported:
            self._reported = key
            raise Unavailable(reason)

    async def _look(self, client: docker.DockerClient) -> _Look | None:
        try:
            attrs = await asyncio.to_thread(client.api.inspect_container, self.container)
        except NotFound:
            return None
        except SDK_ERRORS as exc:
            raise problem(exc, self.engine) from None
        return _Look.of(attrs)

    async def _read(
        self, client: docker.DockerClient, look: _Look, resume: Resume, *, follow: bool
    ) -> AsyncGenerator[Received]:
        try:
            logs = await asyncio.to_thread(
                client.api.logs,
                look.id,
                stream=True,
                follow=follow,
                timestamps=True,
                since=resume.since or None,
            )
        except NotFound:
            raise Unavailable(f"container {self.container} was removed") from None
        except SDK_ERRORS as exc:
            raise problem(exc, self.engine, self.container) from None
        reader = LogReader(resume)

        def produce() -> Iterator[tuple[list[str], str]]:
            for message in tty_messages(logs) if look.tty else logs:
                lines = reader.feed(message)
                if lines:
                    yield lines, reader.cursor()
            lines = reader.finish()
            if lines:
                yield lines, reader.cursor()

        def interrupt() -> None:
            with suppress(*SDK_ERRORS):  # already closed by the engine
                logs.close()

        bridge = Bridge(produce, limit=BUFFERED_LINES, name=f"docker logs {self.name}", interrupt=interrupt)
        try:
            yield Received((), resume.encode())  # attached: streaming, though nothing new may come for a while
            while (items := await bridge.take()) is not None:
                yield Received(tuple(line for lines, _ in items for line in lines), items[-1][1])
        except SDK_ERRORS as exc:
            raise problem(exc, self.engine, self.container, "lost the connection to") from None
        finally:
            bridge.close()

    async def _stopped(self, client: docker.DockerClient, before: _Look) -> None:
        """The log stream of a running container ended: say why (always raises)."""
        after = await self._look(client)
        if after is None:
            self._reported = _MISSING
            raise Unavailable(f"container {self.container} was removed")
        if not after.running:
            self._reported = after.key
            raise Unavailable(after.describe(self.container))
        if after.id != before.id:
            raise Unavailable(f"container {self.container} was replaced by a new container of that name")
        if after.started_at == before.started_at:
            raise Unavailable(f"{self.engine} closed the log stream of container {self.container}")
        died = await asyncio.to_thread(_exit_between, client, before, after)
        how = f" after exiting with {died}" if died else ""
        raise Unavailable(f"container {self.container} restarted{how}")


def _resume(cursor: Cursor | None, look: _Look) -> Resume:
    """Where reading ``look``'s container goes on: the cursor's place, or its first line for a container
    the cursor does not name (a new one under the same name)."""
    resume = Resume.decode(cursor) if cursor is not None else None
    return resume if resume is not None and resume.container == look.id else Resume(look.id)


def _exit_between(client: docker.DockerClient, before: _Look, after: _Look) -> str:
    """How the container exited between two starts (``code 137 (OOM killed)``), from the engine's
    events; empty when the events are gone."""
    since = nanoseconds(before.started_at.encode()) // 10**9
    until = nanoseconds(after.started_at.encode()) // 10**9 + 1
    code, oom = "", False
    try:
        events = client.api.events(
            since=since, until=until, filters={"container": before.id, "event": ["die", "oom"]}, decode=True
        )
        for event in events:
            if event.get("Action") == "oom":
                oom = True
            elif event.get("Action") == "die":
                code = str(event.get("Actor", {}).get("Attributes", {}).get("exitCode", ""))
    except SDK_ERRORS:
        return ""
    if not code:
        return ""
    return f"code {code}" + (" (OOM killed)" if oom else "")
