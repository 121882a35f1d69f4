"""Every node's Ray logs through Ray's own log API: the ``ray://head[:port]`` source.

:func:`ray_log_sources` (or :class:`RayLogs`, the same as a source group) asks the cluster's state API
which nodes are alive and which log files each one holds, and makes one :class:`RayLogSource` per
(node, file). Each source follows its file with ``ray.util.state.get_log(follow=True)``: the head's
dashboard relays the bytes from the node's agent, so only the head's GCS port (6379 by default) and its
dashboard need to be reachable. The Ray SDK blocks, so every stream is read through a
:class:`~sparktui.core.sources.bridge.Bridge`; a slow consumer stops the thread reading, and the head stops
relaying.

Ray is an optional extra (``pip install 'sparktui[ray]'``): it is imported when a source is listed or
read, never when this module is imported.

Resuming. Ray's log API cannot start a stream at an offset: it streams a file from its start (or its last
N lines, which cannot be mapped to a position). The cursor is therefore the byte offset just after the
last delivered line, and a resumed stream reads the file from its start again and drops that many bytes
before splitting lines, so nothing is lost or repeated; the cost is reading the delivered part of the
file again on each reconnect. Ray's own rotation of a file past ``RAY_ROTATION_MAX_BYTES`` (512 MiB by
default) is not followed: the stream then waits for the new file to pass the old offset.
"""

from __future__ import annotations

import asyncio
import fnmatch
import ipaddress
import re
import socket
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from glob import escape
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, cast
from urllib.parse import urlsplit

from sparktui.core.errors import Refused, Unavailable
from sparktui.core.lines import LineSplitter
from sparktui.core.sources.base import Cursor, LiveSource, Received, SourceGroup
from sparktui.core.sources.bridge import Bridge

if TYPE_CHECKING:
    from ray.util.state.common import NodeState

#: The head's GCS port when the address names none (``ray start --head`` uses it by default).
DEFAULT_PORT = 6379
#: The files that matter for bringing up a deployment, when no glob is given.
DEFAULT_GLOBS = (
    "raylet.out",
    "raylet.err",
    "gcs_server.out",
    "gcs_server.err",
    "worker-*.out",
    "worker-*.err",
    "python-core-driver-*",
    "monitor*",
    "job-driver-*",
)
#: The log file every node has, followed even when the node's agent cannot list its files.
ALWAYS_THERE = "raylet.out"
#: Seconds the node's agent waits at the end of a followed file before looking for new bytes.
FOLLOW_INTERVAL = 0.2
#: Seconds of silence after which a stream checks that its node is still alive.
PROBE_SECONDS = 30.0
#: Seconds for the head to answer one check (Ray itself waits up to 40 s for an unresponsive GCS).
CHECK_SECONDS = 15.0
#: Seconds to open a TCP connection to the head's GCS port before asking Ray anything.
REACH_SECONDS = 5.0
#: Seconds the state API may take for one listing.
STATE_TIMEOUT = 10
#: The most nodes one listing returns.
MAX_NODES = 10_000
#: Chunks in flight between a reading thread and the event loop.
QUEUE_CHUNKS = 64
#: Seconds between two listings of a followed cluster, for the log files written since (a new worker's) and
#: the nodes that joined; at least :data:`RELIST_SHARE` times as long as the last listing took.
RELIST_SECONDS = 2.0
#: How many times the time a listing took the next one waits, at the least: a big cluster is listed less often.
RELIST_SHARE = 4

_HOST = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?")
_ERRNO = re.compile(r"\[Errno -?\d+\] [^'\")\]]+")
_GRPC_DETAILS = re.compile(r'details = "([^"\n]+)"')


@dataclass(frozen=True, slots=True)
class RayAddress:
    """A Ray head's GCS address, as Ray's own ``--address`` takes it."""

    host: str
    port: int = DEFAULT_PORT

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"


def parse_address(address: str) -> RayAddress:
    """``ray://head[:port]`` or ``head[:port]`` as a :class:`RayAddress`; :class:`Refused` with a
    one-line reason for anything else (another scheme, a path, a bad host or port)."""
    rest = address.strip().removeprefix("ray://")
    if "://" in rest:
        raise Refused(f"{address}: not a Ray head address (expected ray://head[:port])")
    try:
        parts = urlsplit(f"ray://{rest}")
        port = parts.port
    except ValueError as exc:
        raise Refused(f"{address}: {exc}") from None
    if parts.path.strip("/") or parts.query or parts.fragment or parts.username or parts.password:
        raise Refused(f"{address}: expected ray://head[:port] and nothing more")
    host = parts.hostname or ""
    if not (_HOST.fullmatch(host) or _is_ip(host)):
        raise Refused(f"{address}: no valid head host name in it (expected ray://head[:port])")
    if port == 0:
        raise Refused(f"{address}: port 0 is not a port a Ray head listens on")
    return RayAddress(host, port or DEFAULT_PORT)


def ray_log_sources(
    address: str, glob: str | None = None, *, node_filter: str | None = None, follow: bool = True
) -> list[RayLogSource]:
    """One source per log file matching ``glob`` on every alive node of the cluster at ``address``, each
    followed, or read once to its end without ``follow``.

    ``glob`` is matched by each node's agent against paths relative to its Ray log directory (``*.out``,
    ``events/*``); without one, only the files in :data:`DEFAULT_GLOBS`. ``node_filter`` is a shell
    pattern matched against each node's name, IP address and id. Blocks while it asks the head. Raises
    :class:`Refused` for an address or glob that cannot work and :class:`Unavailable` when
    the head cannot be reached or does not answer. A node whose files cannot be listed (its agent has
    not registered yet, or stopped) gets a source for :data:`ALWAYS_THERE` if the glob matches it, whose
    state then says what is wrong. Files written after the call (a new worker's log) are not included:
    list again to see them (:meth:`RayLogs.later` does, while it follows).
    """
    target = parse_address(address)
    if glob is not None and (not glob or PurePosixPath(glob).is_absolute() or ".." in PurePosixPath(glob).parts):
        raise Refused(f"glob {glob!r}: must name files inside the Ray log directory")
    _reach(target)
    from ray.util.state import list_logs, list_nodes

    try:
        nodes = list_nodes(
            address=str(target),
            filters=[("state", "=", "ALIVE")],
            limit=MAX_NODES,
            timeout=STATE_TIMEOUT,
            raise_on_missing_output=False,
        )
    except Exception as exc:  # Ray raises many kinds (RpcError, ConnectionError, requests' errors...)
        raise _unavailable(exc, f"listing the nodes of the Ray cluster at {target}") from None
    chosen = [n for n in nodes if node_filter is None or _node_matches(n, node_filter)]
    sources: list[RayLogSource] = []
    for node in sorted(chosen, key=lambda n: (not n.is_head_node, n.node_name, n.node_id)):
        try:
            groups = list_logs(
                address=str(target), node_id=node.node_id, glob_filter=glob or "*", timeout=STATE_TIMEOUT
            )
        except Exception:  # its agent is not answering (yet): its raylet.out will say why, as it streams
            groups = {"raylet": [ALWAYS_THERE]}
        files = sorted({f for names in groups.values() for f in names if not f.endswith("/")})
        files = [f for f in files if any(fnmatch.fnmatchcase(f, g) for g in ([glob] if glob else DEFAULT_GLOBS))]
        sources += [RayLogSource(address, node.node_id, f, node_name=node.node_name, follow=follow) for f in files]
    return sources


class RayLogs(SourceGroup):
    """Every log of a Ray cluster, as :func:`ray_log_sources` lists them, once the head answers; followed
    (and listed again every ``relist_every`` seconds, for the files and nodes that appear later), or read
    once to their end (``follow=False``: then the group ends by itself)."""

    def __init__(
        self,
        address: str,
        glob: str | None = None,
        *,
        node_filter: str | None = None,
        follow: bool = True,
        relist_every: float = RELIST_SECONDS,
    ) -> None:
        self.name, self.glob, self.node_filter, self.follow = address, glob, node_filter, follow
        self.finite = not follow
        self.relist_every = relist_every
        self._listed: set[str] = set()  # the names of the sources found so far

    async def expand(self) -> list[LiveSource]:
        """Read once, a head that cannot be reached is the end of it (refused, with the reason): nobody is
        there to wait for it."""
        try:
            found: list[LiveSource] = list(
                await asyncio.to_thread(
                    ray_log_sources, self.name, self.glob, node_filter=self.node_filter, follow=self.follow
                )
            )
        except Unavailable as exc:
            if self.follow:
                raise
            raise Refused(str(exc)) from None
        self._listed.update(s.name for s in found)
        return found

    async def later(self) -> AsyncIterator[LiveSource]:
        """Followed, each log file that a listing finds and none before it did (a worker started since, a
        node that joined), followed from its start, so its first lines are read too. The cluster is listed
        on a daemon thread of its own (a head that hangs holds neither the loop nor the exit); a listing that
        fails is tried again at the next turn: meanwhile the sources already found say what is wrong."""
        if not self.follow:
            return
        listings = Bridge(self._listings, limit=1, name=f"ray listing {self.name}")
        try:
            while (found := await listings.take()) is not None:
                for source in (s for listing in found for s in listing):
                    if source.name not in self._listed:
                        self._listed.add(source.name)
                        yield source
        finally:
            listings.close()

    def _listings(self) -> Iterator[list[RayLogSource]]:
        """A listing of the cluster every :attr:`relist_every` seconds or more (empty when it failed)."""
        took = 0.0
        while True:
            time.sleep(max(self.relist_every, RELIST_SHARE * took))
            began = time.monotonic()
            try:
                found = ray_log_sources(self.name, self.glob, node_filter=self.node_filter, follow=True)
            except (Unavailable, Refused):
                found = []
            took = time.monotonic() - began
            yield found


class RayLogSource(LiveSource):
    """The log file ``filename`` of node ``node_id`` in the Ray cluster at ``address``, followed, or with
    ``follow=False`` read once to its end as it is when the node's agent reaches it (then the source ends;
    a partial last line, still being written, is left out as it would be while following). ``start`` is
    where a stream with no cursor begins: the byte offset after the lines someone else already read
    (a node's own scan that stopped part-way).

    Yields batches of complete lines (decoded, escape sequences removed, undecodable bytes replaced, a
    line that grows past :data:`MAX_LINE` bytes delivered in pieces); a partial last line waits for its
    newline. The cursor is a byte offset into the file (see the module's note on resuming). Before each
    stream it checks that the head answers, says the node is alive, and relays the node's listing of
    the file; then it yields an empty batch. It checks again, and yields another, after every
    ``probe_every`` seconds of silence.

    Raises :class:`Refused` for an address that cannot be a Ray head and :class:`Unavailable`
    when the head cannot be reached or does not answer, when the node is dead, gone or unreachable, when
    the file is not there, or when the stream breaks; each with a one-line message. Never returns: a
    followed file can always grow.
    """

    kind = "ray log"

    def __init__(
        self,
        address: str,
        node_id: str,
        filename: str,
        *,
        node_name: str,
        probe_every: float = PROBE_SECONDS,
        follow: bool = True,
        start: int = 0,
    ) -> None:
        self.address, self.node_id, self.filename = address, node_id, filename
        self.node = node_name
        self.name = source_name(address, node_name, filename)
        self.probe_every = probe_every
        self.follow, self.start = follow, start
        self.finite = not follow
        self.resumable = follow  # an offset in the node's file, followed

    async def stream(self, cursor: Cursor | None) -> AsyncIterator[Received]:
        """Followed, a break is retried (:class:`Unavailable`); read once, it ends the source with the reason
        (:class:`Refused`): what was read stays, and the diagnosis says the file was not read to its end."""
        try:
            async for received in self._stream(cursor):
                yield received
        except Unavailable as exc:
            if self.follow:
                raise
            raise Refused(str(exc)) from None

    async def _stream(self, cursor: Cursor | None) -> AsyncIterator[Received]:
        target = parse_address(self.address)
        lines = LineSplitter(int(cursor) if isinstance(cursor, int | float) else self.start)
        await self._check(target)
        yield Received((), lines.offset)
        reader = Bridge(lambda: self._follow(target), limit=QUEUE_CHUNKS, name=f"ray log {self.name}")
        try:
            while True:
                try:
                    chunks = await reader.take(self.probe_every)
                except Exception as exc:
                    raise _unavailable(exc, f"reading {self.filename} on node {self.node}") from None
                if chunks is None:
                    if not self.follow:
                        return
                    raise Unavailable(f"the Ray head closed the stream of {self.filename} on node {self.node}")
                if not chunks:  # silence: is the node still there?
                    await self._check(target)
                    yield Received((), lines.offset)
                    continue
                got = [line for chunk in chunks for line in lines.feed(chunk)]
                if got:
                    yield Received(tuple(got), lines.offset)
        finally:
            reader.close()

    async def _check(self, target: RayAddress) -> None:
        """Raise :class:`Unavailable` unless, in time, the head says the node is alive and relays its
        agent's listing of the file."""
        try:
            await asyncio.wait_for(asyncio.to_thread(self._ask_node, target), CHECK_SECONDS)
        except TimeoutError:
            raise Unavailable(
                f"the Ray head at {target} did not answer within {CHECK_SECONDS:.0f} s "
                f"(is {target.port} its GCS port? the dashboard's port does not work here)"
            ) from None

    def _ask_node(self, target: RayAddress) -> None:
        _reach(target)
        from ray.util.state import list_logs, list_nodes

        try:
            nodes = list_nodes(
                address=str(target),
                filters=[("node_id", "=", self.node_id)],
                timeout=STATE_TIMEOUT,
                raise_on_missing_output=False,
            )
        except Exception as exc:
            raise _unavailable(exc, f"asking the Ray head at {target} about node {self.node}") from None
        if not nodes:
            raise Unavailable(f"node {self.node} ({self.node_id[:12]}) is not in the Ray cluster at {target}")
        if nodes[0].state != "ALIVE":
            why = _first_line(nodes[0].state_message or "")
            raise Unavailable(f"node {self.node} is {str(nodes[0].state).lower()}" + (f": {why}" if why else ""))
        # The head may not have noticed yet that the node stopped: ask its agent, through the head.
        try:
            groups = list_logs(
                address=str(target), node_id=self.node_id, glob_filter=escape(self.filename), timeout=STATE_TIMEOUT
            )
        except Exception as exc:
            raise _unavailable(exc, f"asking node {self.node} for {self.filename}") from None
        if not any(self.filename in names for names in groups.values()):
            raise Unavailable(f"node {self.node} has no log file {self.filename}")

    def _follow(self, target: RayAddress) -> Iterator[bytes]:
        from ray.util.state import get_log

        # `_interval` is get_log's own (underscored) knob for how long the agent sleeps at the end of the
        # file; its default of 1 s would be most of the delay between a line written and a line shown. A
        # file read once takes none.
        return cast(
            Iterator[bytes],
            get_log(
                address=str(target),
                node_id=self.node_id,
                filename=self.filename,
                follow=self.follow,
                tail=-1,
                encoding=None,
                _interval=FOLLOW_INTERVAL if self.follow else None,
            ),
        )


def source_name(address: str, node_name: str, filename: str) -> str:
    """The name of the source of a node's log file: ``ray://head:port/<node>/<file>`` as the address was given."""
    return f"ray://{address.strip().removeprefix('ray://').rstrip('/')}/{node_name}/{filename}"


def _reach(target: RayAddress) -> None:
    """Raise :class:`Unavailable` unless a TCP connection to the head's GCS port opens: Ray itself
    would try for 40 s before saying the head is not there."""
    try:
        socket.create_connection((target.host, target.port), timeout=REACH_SECONDS).close()
    except OSError as exc:
        raise Unavailable(f"cannot reach the Ray head at {target}: {exc.strerror or exc}") from None


def _node_matches(node: NodeState, pattern: str) -> bool:
    return any(fnmatch.fnmatchcase(value, pattern) for value in (node.node_name, node.node_ip, node.node_id))


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def _unavailable(exc: BaseException, doing: str) -> Unavailable:
    """A one-line :class:`Unavailable` for an error of Ray, gRPC, requests or the network."""
    text = str(exc)
    response = getattr(exc, "response", None)  # requests' HTTPError: the body says nothing more
    if response is not None:
        reason = f"the head's dashboard answered {response.status_code} {response.reason}"
    elif details := _GRPC_DETAILS.search(text):
        reason = details[1]
    elif errno := _ERRNO.search(text):
        reason = errno.group().strip()
    else:
        reason = _first_line(text) or type(exc).__name__
    return Unavailable(f"{doing}: {reason}")


def _first_line(text: str) -> str:
    lines = text.strip().splitlines()
    return lines[0][:300] if lines else ""
