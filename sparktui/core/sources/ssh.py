"""Sources over SSH: files followed like ``tail -F``, journald units and a node's Ray session logs, all
carried by the node's one connection (:class:`~sparktui.core.remote.ssh.SshNode`).
"""

from __future__ import annotations

import json
import secrets
import shlex
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

from sparktui.core.classify import node_in
from sparktui.core.errors import Refused, Unavailable
from sparktui.core.lines import LineSplitter
from sparktui.core.remote.ssh import SshNode
from sparktui.core.sources.base import Cursor, LiveSource, Received
from sparktui.core.sources.files import BLOCK
from sparktui.core.sources.rotation import HEAD, FilePosition, fingerprint, gap_note, truncated_note
from sparktui.core.text import decode

RAY_LOGS = "/tmp/ray/session_latest/logs"
#: Seconds between two listings of a followed node's Ray session logs, for the files that appear later.
RAY_RELIST_SECONDS = 2.0
#: Ray log files worth following, by name prefix (with a ``.out``, ``.err`` or ``.log`` suffix).
RAY_FOLLOWED = ("raylet", "gcs_server", "worker-", "python-core-", "monitor", "dashboard")
_RAY_SUFFIXES = (".out", ".err", ".log")
#: Seconds between two looks of the remote ``tail`` at its file: the most a line waits on the node before
#: it is sent. A look costs the node one ``stat`` and a read; a finding shown within a quarter of a second
#: of the line being written leaves no more than this to the node.
POLL_SECONDS = 0.05
#: Seconds between two looks of the remote follower at whether the path names another file (a rotation):
#: the most the first lines of a new file wait. A look costs the node about as much as one of ``tail``'s
#: four, in bash.
WATCH_SECONDS = 0.2


def _script(name: str) -> str:
    """A bash script beside this module, as sent: without its comment lines, which every node's process list
    would otherwise show."""
    text = Path(__file__).with_name(name).read_text(encoding="utf-8")
    return "".join(line for line in text.splitlines(keepends=True) if not line.startswith("#"))


#: The remote follower (``follow.bash``, whose head says what it does and what it prints).
FOLLOWER = _script("follow.bash")
#: The remote reader of copytruncate's copy past an offset (``copy.bash``).
COPIER = _script("copy.bash")


@dataclass(frozen=True, slots=True)
class Emptied:
    """The followed file was emptied in place after ``at`` (the offset read to, the file's first bytes and
    their fingerprint); ``cursor`` is the position after it, in the file read again from its start."""

    at: FilePosition
    cursor: Cursor


class SshFileSource(LiveSource):
    """A file on a node, followed like ``tail -F``: it survives rotation (the file replaced), truncation
    and the file not existing yet.

    Yields complete lines (decoded, CRLF made LF; a line of more than :data:`MAX_LINE` bytes comes in
    pieces). The cursor is a :class:`~sparktui.core.sources.rotation.FilePosition`: the file being read
    (device, inode, a fingerprint of its first bytes) and the byte offset just after the last line
    delivered in it, and resuming re-reads a partial last line. A resume goes on in the same file wherever
    a rotation put it meanwhile, then reads the file now at the path from its start; what cannot be found
    again (deleted, compressed, truncated below the offset) comes as a note, with its size where it is
    known. A plain offset (an older cursor) resumes in the file at the path, from its start if it is
    shorter. Raises :class:`Unavailable` when the connection drops or ``tail`` stops, and
    :class:`Refused` when the node refuses us or lacks ``bash`` or a coreutils command.
    """

    kind = "file over ssh"

    def __init__(
        self, node: SshNode, path: str, name: str | None = None, *, follow: bool = True, start: int = 0
    ) -> None:
        """Read once (``follow=False``), it reads the file to its end now and ends. ``start`` is the byte
        offset a first stream begins at (where an earlier reader of the file stopped)."""
        self.ssh = node
        self.path = path
        self.name = name or f"{node.name}:{path}"
        self.node = node.name
        self.follow = follow
        self.finite = not follow
        self.resumable = follow  # a position in the file (device, inode, first bytes), followed
        self.start = start
        self._looked = 0  # characters of its first lines looked at for the node they name

    def _learn(self, received: Received) -> Received:
        """``received``, the node learnt from it: a copy of another machine's log kept on this node is that
        machine's, as a local file's node is the host its NCCL lines name. The first host its own NCCL lines
        name within its first :data:`BLOCK` characters is the node, where it is none of this machine's names
        (those are the alias's: scan.py's ``home``)."""
        if self._looked >= BLOCK or not received.lines:
            return received
        block = "\n".join(received.lines)[: BLOCK - self._looked]
        self._looked += len(block)
        host = node_in(block)
        if host is not None:
            self._looked = BLOCK
            if host not in self.ssh.names:
                self.node = host
        return received

    @property
    def hosts(self) -> frozenset[str]:
        return self.ssh.names

    async def stream(self, cursor: Cursor | None) -> AsyncIterator[Received]:
        at = FilePosition.of(cursor if cursor is not None else self.start)
        if not self.follow:
            async for received in self._once(at.offset):
                yield self._learn(received)
            return
        marker = f"sparktui-{secrets.token_hex(8)}"
        args = [marker, self.path, str(at.offset), str(POLL_SECONDS), at.file, str(at.head), at.digest]
        args.append(str(WATCH_SECONDS))
        command = f"bash -c {shlex.quote(FOLLOWER)} {shlex.join(args)}"
        async with self.ssh.session(command, self.name) as session:
            header = await session.readline()
            if header != f"{marker} start\n".encode():
                raise await session.ended(decode(header).strip())
            reader = _TailReader(marker.encode(), self.path, at)
            yield Received((), at.cursor)
            while chunk := await session.read():
                for item in reader.feed(chunk):
                    yield self._learn(await self._copied(item) if isinstance(item, Emptied) else item)
            raise await session.ended(reader.notice)

    async def _copied(self, emptied: Emptied) -> Received:
        """What the file held past the last look before it was emptied in place, read on the node from the
        copy ``copytruncate`` made of it (:data:`COPIER`); where none is found, the note that it may be lost."""
        at = emptied.at
        lost = Received((), emptied.cursor, truncated_note(self.path, at.offset, POLL_SECONDS))
        if not at.head:
            return lost
        marker = f"sparktui-{secrets.token_hex(8)}"
        args = [marker, self.path, str(at.offset), str(at.head), at.digest]
        lines, found = LineSplitter(), []
        try:
            async with self.ssh.session(f"bash -c {shlex.quote(COPIER)} {shlex.join(args)}", self.name) as session:
                if not (await session.readline()).startswith(f"{marker} copy ".encode()):
                    return lost
                while chunk := await session.read():
                    found += lines.feed(chunk)
        except Unavailable:
            return lost
        return Received((*found, *lines.rest()), emptied.cursor)

    async def _once(self, offset: int) -> AsyncIterator[Received]:
        """The file from byte ``offset`` to its end (``tail -c``), its last line kept even without a newline;
        whatever stops the read is refused, since waiting cannot help a read that ends."""
        command = f"tail -c +{offset + 1} -- {shlex.quote(self.path)}"
        lines = LineSplitter()
        try:
            async with self.ssh.session(command, self.name) as session:
                while chunk := await session.read():
                    if batch := lines.feed(chunk):
                        yield Received(tuple(batch), offset + lines.offset)
                error = await session.ended()
                if session.process.exit_status != 0:
                    raise error
        except Unavailable as exc:
            raise Refused(str(exc)) from None
        if rest := lines.rest():
            yield Received(tuple(rest), offset + lines.offset)


class _TailReader:
    """The output of the remote follower (:data:`FOLLOWER`) as batches of complete lines, each with the
    position after it.

    What the follower says starts with the marker and may come in the middle of a line (after a last line
    with no newline). A new file ends that line and moves the position to the new file; tail's notice that
    the file was truncated does the same within the file; a gap becomes a batch's note, after the lines
    before it; other notices (the file is missing for now) are kept as :attr:`notice`. Everything else is
    the file's bytes, cut into lines by one :class:`~sparktui.core.lines.LineSplitter`; the first
    :data:`~sparktui.core.sources.rotation.HEAD` bytes of a file read from its start make its fingerprint.
    """

    def __init__(self, marker: bytes, path: str, at: FilePosition) -> None:
        self.marker = marker
        self.path = path
        self.notice = ""
        self._file = at  # the file being read (its offset: where its bytes fed to the splitter start)
        self._head: bytearray | None = None  # its first bytes, while it is read from its start
        self._lines = LineSplitter()
        self._held = b""  # what may be the start of something the follower says
        self._said = at  # the position of the last batch returned

    @property
    def position(self) -> FilePosition:
        head, digest = self._file.head, self._file.digest
        if self._head is not None:
            head, digest = len(self._head), fingerprint(bytes(self._head))
        return FilePosition(self._file.offset + self._lines.offset, self._file.file, head, digest)

    def feed(self, data: bytes) -> list[Received | Emptied]:
        batches: list[Received | Emptied] = []
        lines: list[str] = []
        buf, self._held = self._held + data, b""
        while True:
            at = buf.find(self.marker)
            end = buf.find(b"\n", at) if at >= 0 else -1
            if end < 0:
                keep = len(buf) - at if at >= 0 else _marker_start(buf, self.marker)
                lines += self._data(buf[: len(buf) - keep])
                self._held = buf[len(buf) - keep :]
                break
            lines += self._data(buf[:at])
            message, buf = buf[at + len(self.marker) : end], buf[end + 1 :]
            if message.startswith(b" file "):
                lines += self._lines.rest()  # the last line of the file before, if it had no newline
                self._start(message[len(b" file ") :])
            elif message.startswith(b" gap "):
                batches.append(self._batch(lines, self._gap(message[len(b" gap ") :])))
                lines = []
            elif message.startswith(b": "):
                self.notice = decode(message[2:])
                if message.endswith(b": file truncated"):  # read again from its start, after its copy's rest
                    lines += self._lines.rest()
                    batches.append(self._batch(lines))
                    lines, stopped = [], self.position
                    self._file = FilePosition(0, self._file.file)
                    self._lines, self._head = LineSplitter(), bytearray()
                    batches.append(Emptied(stopped, self._batch([]).cursor))
        if lines or self.position != self._said:
            batches.append(self._batch(lines))
        return batches

    def _data(self, data: bytes) -> list[str]:
        if self._head is not None and len(self._head) < HEAD:
            self._head += data[: HEAD - len(self._head)]
        return self._lines.feed(data)

    def _start(self, header: bytes) -> None:
        """A new file: ``DEV:INO OFFSET N DIGEST``. Read from its start, its fingerprint is made here from
        its bytes as they come; read from further on, it is the one the follower made."""
        file, offset, head, digest = decode(header).split(" ")
        self._file = FilePosition(int(offset), file, int(head), digest)
        self._lines = LineSplitter()
        self._head = bytearray() if self._file.offset == 0 else None

    def _gap(self, message: bytes) -> str:
        """Lines lost: ``KIND SIZE OFFSET`` (the size ``-`` where it is not known)."""
        kind, size, offset = decode(message).split(" ")
        return gap_note(self.path, kind, int(offset), int(size) if size.isdigit() else None)

    def _batch(self, lines: list[str], note: str = "") -> Received:
        self._said = self.position
        return Received(tuple(lines), self._said.cursor, note)


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
    resumable = True  # the journal's own cursor

    def __init__(self, node: SshNode, unit: str, name: str | None = None) -> None:
        self.ssh = node
        self.unit = unit
        self.name = name or f"{node.name}:journal/{unit}"
        self.node = node.name

    @property
    def hosts(self) -> frozenset[str]:
        return self.ssh.names

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
