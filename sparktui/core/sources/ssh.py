"""Sources over SSH: files followed like ``tail -F``, journald units and a node's Ray session logs, all
carried by the node's one connection (:class:`~sparktui.core.remote.ssh.SshNode`).
"""

from __future__ import annotations

import json
import secrets
import shlex
from collections.abc import AsyncIterator

from sparktui.core.errors import Refused
from sparktui.core.lines import LineSplitter
from sparktui.core.remote.ssh import SshNode
from sparktui.core.sources.base import Cursor, LiveSource, Received
from sparktui.core.text import decode

RAY_LOGS = "/tmp/ray/session_latest/logs"
#: Ray log files worth following, by name prefix (with a ``.out``, ``.err`` or ``.log`` suffix).
RAY_FOLLOWED = ("raylet", "gcs_server", "worker-", "python-core-", "monitor", "dashboard")
_RAY_SUFFIXES = (".out", ".err", ".log")
#: Seconds between two looks of the remote ``tail`` at its file: the most a line waits on the node before
#: it is sent. A look costs the node one ``stat`` and a read; a finding shown within a quarter of a second
#: of the line being written leaves no more than this to the node.
POLL_SECONDS = 0.05
# $0 is a random marker, $1 the path, $2 the offset to start from, $3 the seconds between looks. tail runs
# under the marker as its name, so its notices ("<marker>: ... following new file") cannot be forged by the
# file's content, and they arrive in order with the data (2>&1). Polling (---disable-inotify) also sees a
# file that appears after tail started. A file shorter than the offset was truncated or replaced
# meanwhile: start at 0.
_FOLLOW = (
    'o=$2; s=$(wc -c 2>/dev/null < "$1") || s=0; [ "${s:-0}" -ge "$o" ] || o=0; '
    'printf "%s start %s\\n" "$0" "$o"; '
    'exec -a "$0" tail ---disable-inotify -s "$3" -c "+$((o + 1))" -F -- "$1" 2>&1'
)
_SWITCHED = (b"following new file", b": file truncated")


class SshFileSource(LiveSource):
    """A file on a node, followed like ``tail -F``: it survives rotation (the file replaced), truncation
    and the file not existing yet.

    Yields complete lines (decoded, CRLF made LF; a line of more than :data:`MAX_LINE` bytes comes in
    pieces); the cursor is the byte offset just after the last line delivered, in the file as it is now
    (0 again after a rotation or truncation), and resuming re-reads a partial last line. A file found
    shorter than the cursor on resume was truncated or replaced meanwhile and is read from its start.
    Raises :class:`Unavailable` when the connection drops or ``tail`` stops, and
    :class:`Refused` when the node refuses us or has no ``bash``/``tail``.
    """

    kind = "file over ssh"

    def __init__(self, node: SshNode, path: str, name: str | None = None) -> None:
        self.ssh = node
        self.path = path
        self.name = name or f"{node.name}:{path}"
        self.node = node.name

    async def stream(self, cursor: Cursor | None) -> AsyncIterator[Received]:
        offset = _offset(cursor)
        marker = f"sparktui-{secrets.token_hex(8)}"
        command = f"bash -c {shlex.quote(_FOLLOW)} {marker} {shlex.quote(self.path)} {offset} {POLL_SECONDS}"
        async with self.ssh.session(command, self.name) as session:
            header = await session.readline()
            prefix = f"{marker} start ".encode()
            if not header.startswith(prefix) or not header.endswith(b"\n"):
                raise await session.ended(decode(header).strip())
            reader = _TailReader(f"{marker}: ".encode(), int(header[len(prefix) :]))
            yield Received((), reader.offset)
            while chunk := await session.read():
                before = reader.offset
                lines = reader.feed(chunk)
                if lines or reader.offset != before:
                    yield Received(tuple(lines), reader.offset)
            raise await session.ended(reader.notice)


def _offset(cursor: Cursor | None) -> int:
    if cursor is None:
        return 0
    if isinstance(cursor, bool) or not isinstance(cursor, int) or cursor < 0:
        raise Refused(f"not a file offset: {cursor!r}")
    return cursor


class _TailReader:
    """The output of the remote ``tail`` as complete lines, and the file offset after them.

    ``tail``'s notices start with the marker and may come in the middle of a line (after a last line
    with no newline): a notice that the file was replaced or truncated ends that line and restarts the
    offset at 0; other notices (the file is missing for now) are kept as :attr:`notice`. Everything else
    is the file's bytes, cut into lines by one :class:`~sparktui.core.lines.LineSplitter`.
    """

    def __init__(self, marker: bytes, offset: int) -> None:
        self.marker = marker
        self.notice = ""
        self._base = offset  # where the file's bytes fed to the splitter start
        self._lines = LineSplitter()
        self._held = b""  # what may be the start of a notice

    @property
    def offset(self) -> int:
        return self._base + self._lines.offset

    def feed(self, data: bytes) -> list[str]:
        lines: list[str] = []
        buf, self._held = self._held + data, b""
        while True:
            at = buf.find(self.marker)
            end = buf.find(b"\n", at) if at >= 0 else -1
            if end < 0:
                keep = len(buf) - at if at >= 0 else _marker_start(buf, self.marker)
                lines += self._lines.feed(buf[: len(buf) - keep])
                self._held = buf[len(buf) - keep :]
                return lines
            lines += self._lines.feed(buf[:at])
            message, buf = buf[at + len(self.marker) : end], buf[end + 1 :]
            self.notice = decode(message)
            if message.endswith(_SWITCHED):  # the partial line before the notice ends there
                lines += self._lines.rest()
                self._base, self._lines = 0, LineSplitter()


def _marker_start(buf: bytes, marker: bytes) -> int:
    """How many bytes at the end of ``buf`` could be the start of ``marker`` (the most, where several
    could). Only the places in the last ``len(marker) - 1`` bytes that hold the marker's first byte are
    tried, so a chunk costs a search or two, not one comparison per byte of the marker."""
    first = marker[:1]
    at = buf.find(first, max(0, len(buf) - len(marker) + 1))
    while at >= 0:
        if marker.startswith(buf[at:]):
            return len(buf) - at
        at = buf.find(first, at + 1)
    return 0


def _line(raw: bytes) -> str:
    return decode(raw[:-1] if raw.endswith(b"\r") else raw)


class SshJournalSource(LiveSource):
    """The journal of a systemd unit on a node (``journalctl -u UNIT -f -o json``), from its first
    entry; the cursor is the journal's ``__CURSOR`` of the last entry delivered and resuming starts
    just after it (``--after-cursor``).

    Yields each entry's MESSAGE as lines (binary messages decoded with replacement; a line that is not
    a JSON entry is passed on as it is). Raises :class:`Unavailable` when the connection drops or
    ``journalctl`` stops, :class:`Refused` when the node refuses us or has no ``journalctl``.
    """

    kind = "journal over ssh"

    def __init__(self, node: SshNode, unit: str, name: str | None = None) -> None:
        self.ssh = node
        self.unit = unit
        self.name = name or f"{node.name}:journal/{unit}"
        self.node = node.name

    async def stream(self, cursor: Cursor | None) -> AsyncIterator[Received]:
        args = ["journalctl", "-u", self.unit, "-f", "-o", "json", "--all", "--no-tail", "--quiet"]
        if cursor:
            args.append(f"--after-cursor={cursor}")
        position = str(cursor or "")
        async with self.ssh.session(shlex.join(args), self.name) as session:
            yield Received((), position)
            pending = b""
            while chunk := await session.read():
                *entries, pending = (pending + chunk).split(b"\n")
                lines: list[str] = []
                for entry in entries:
                    position = _entry(entry, lines) or position
                if entries:
                    yield Received(tuple(lines), position)
            raise await session.ended()


def _entry(raw: bytes, lines: list[str]) -> str | None:
    """Adds the lines of one ``journalctl -o json`` entry; returns its cursor."""
    try:
        entry = json.loads(raw)
    except ValueError:
        entry = None
    if not isinstance(entry, dict):
        if raw.strip():
            lines.append(_line(raw))
        return None
    message = entry.get("MESSAGE")
    if isinstance(message, list):
        data = bytes(b & 0xFF for b in message if isinstance(b, int))
    elif isinstance(message, str):
        data = message.encode("utf-8", "surrogatepass")
    else:
        data = None
    if data is not None:
        lines.extend(_line(raw_line) for raw_line in data.rstrip(b"\r\n").split(b"\n"))
    cursor = entry.get("__CURSOR")
    return cursor if isinstance(cursor, str) else None


async def ray_session_sources(node: SshNode, logs: str = RAY_LOGS) -> list[SshFileSource]:
    """One source per Ray log worth following in the node's session log directory (raylet, GCS, workers,
    core workers, monitor, dashboard), sorted by name. Raises :class:`Unavailable` when the
    directory cannot be listed (no Ray session on the node yet)."""
    what = f"{node.name}:ray"
    listing = await node.run(f"find {shlex.quote(logs.rstrip('/') + '/')} -maxdepth 1 -type f -print0", what)
    names = sorted(
        name
        for name in (raw.decode("utf-8", "surrogateescape") for raw in listing.split(b"\0") if raw)
        for name in [name.rsplit("/", 1)[-1]]
        if name.startswith(RAY_FOLLOWED) and name.endswith(_RAY_SUFFIXES)
    )
    base = logs.rstrip("/")
    return [SshFileSource(node, f"{base}/{name}", name=f"{node.name}:ray/{name}") for name in names]
