"""Following a file across log rotation: which file a cursor is in, where that file went, and what to say
when it cannot be found.

A byte offset alone is not enough to resume a followed file: after a rotation while nobody was reading, the
name is another file, and the offset means nothing there. So a cursor names the file too, as log shippers
do (Filebeat, Vector): its device and inode, and a fingerprint of its first bytes, so that an inode the
system gave again to a new file is not taken for the old one. On resume, a file at the path that is still
the cursor's file goes on from the offset; otherwise the file is looked for among the path's rotated
siblings (``app.log.1``, ``app.log-20261201``, anything named like it), read from the offset to its end,
and the new file is read from its start. What cannot be found (deleted, compressed, truncated below the
offset) is a gap, said to the user, never skipped in silence.

The same rules serve a local file (:mod:`sparktui.core.sources.follow`, in Python) and a file on a node
(:mod:`sparktui.core.sources.ssh`, in the node's bash, so that one round trip does the search).
"""

from __future__ import annotations

import gzip
import hashlib
import os
import re
import stat
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from sparktui.core.errors import Refused
from sparktui.core.sources.base import Cursor

#: The first bytes of a file its fingerprint covers (fewer while the file is shorter).
HEAD = 1024
#: Hex digits of the SHA-256 of those bytes kept in a cursor: enough to tell two files apart, short to carry.
DIGITS = 16
_POSITION = re.compile(r"(\d+):(\d+):(\d+):([0-9a-f]{0,16}):(\d+)")


def fingerprint(head: bytes) -> str:
    """The fingerprint of a file's first bytes (the first :data:`DIGITS` hex digits of their SHA-256, as
    ``head -c N | sha256sum`` gives them on a node)."""
    return hashlib.sha256(head).hexdigest()[:DIGITS]


@dataclass(frozen=True, slots=True)
class FilePosition:
    """A place in a followed file: the byte offset just after the last line delivered, in the file named
    by ``file`` (``device:inode``), whose first ``head`` bytes have the fingerprint ``digest``.

    Its cursor is the string ``device:inode:head:digest:offset``. A cursor that is a plain offset (from
    before files were named) has no ``file``: it resumes in whatever file has the name, as it used to.
    """

    offset: int = 0
    file: str = ""
    head: int = 0
    digest: str = ""

    @classmethod
    def of(cls, cursor: Cursor | None) -> FilePosition:
        """The position a cursor from :attr:`cursor` (or a plain offset, or None for the start) stands for;
        anything else is :class:`Refused`."""
        if cursor is None:
            return cls()
        if isinstance(cursor, int) and not isinstance(cursor, bool) and cursor >= 0:
            return cls(cursor)
        match = _POSITION.fullmatch(cursor) if isinstance(cursor, str) else None
        if match is None:
            raise Refused(f"not a file position: {cursor!r}")
        dev, ino, head, digest, offset = match.groups()
        return cls(int(offset), f"{dev}:{ino}", int(head), digest)

    @property
    def cursor(self) -> Cursor:
        return f"{self.file}:{self.head}:{self.digest}:{self.offset}" if self.file else self.offset


def identity(st: os.stat_result) -> str:
    """A file's ``device:inode``, as ``stat -c %d:%i`` writes it."""
    return f"{st.st_dev}:{st.st_ino}"


def head_of(fh: BinaryIO, size: int = HEAD) -> bytes:
    """The first ``size`` bytes of an open file (fewer if it is shorter), wherever it is being read."""
    return os.pread(fh.fileno(), size, 0)


def siblings(path: Path) -> list[Path]:
    """Where a rotation may have put ``path``: ``path.1``, ``path.0``, ``path-DATE``, then any other file
    whose name starts with its name (or with its name less the extension: ``app.1.log``), in that order,
    each once, without ``path`` itself. The remote search in :mod:`~sparktui.core.sources.ssh` looks in
    the same places."""
    name = path.name
    stem = name.rsplit(".", 1)[0] if "." in name[1:] else ""
    try:
        names = sorted(os.listdir(path.parent))
    except OSError:
        return []
    order = [f"{name}.1", f"{name}.0", *(n for n in names if n.startswith(f"{name}-"))]
    order += [n for n in names if n.startswith(name) or (stem and n.startswith(stem))]
    listed = set(names)
    return [path.with_name(n) for n in dict.fromkeys(order) if n in listed and n != name]


def rotated_after(path: Path, after: os.stat_result, read: set[str]) -> list[Path]:
    """The files a rotation made of ``path`` since the file ``after`` was rotated, oldest first: those named
    as rotations are (``path.N``, ``path-DATE``, and the same after its stem: ``app.1.log``) and written
    no earlier than it, less the ones in ``read`` (identities) and the file at ``path``. A log rotated
    twice while nobody read it has one of them between the old file and the new one."""
    name = path.name
    stem = name.rsplit(".", 1)[0] if "." in name[1:] else ""
    prefixes = [f"{name}.", f"{name}-"] + ([f"{stem}.", f"{stem}-"] if stem else [])
    try:
        names = os.listdir(path.parent)
    except OSError:
        return []
    try:
        current = identity(path.stat())
    except OSError:
        current = ""  # moved away, not yet made again
    found: list[tuple[int, str, Path]] = []
    for n in names:
        if not any(n.startswith(p) and n[len(p) : len(p) + 1] in _DIGITS for p in prefixes):
            continue
        candidate = path.with_name(n)
        try:
            st = candidate.stat()
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode) and st.st_mtime_ns >= after.st_mtime_ns and identity(st) not in {*read, current}:
            found.append((st.st_mtime_ns, n, candidate))
    return [candidate for _, _, candidate in sorted(found)]


_DIGITS = set("0123456789")


@dataclass(frozen=True, slots=True)
class Found:
    """Where a position's file went: ``path``, the file it is in now (None: not found), and the ``gap``
    when it cannot be read from the offset (``gone``; ``replaced``: the path's file has its inode but not
    its first bytes; ``truncated``: found, shorter than the offset; ``compressed``) with its ``size`` in
    bytes where that is known."""

    path: Path | None = None
    gap: str = ""
    size: int | None = None


def locate(path: Path, at: FilePosition, current: os.stat_result | None) -> Found:
    """Find the file of ``at`` among the siblings of ``path`` (``current`` is what is at ``path`` now, if
    anything): by device and inode with the same first bytes; failing that, by its first bytes alone
    (the copy ``copytruncate`` makes, or a compressed one, which cannot be read from the offset)."""
    candidates = [p for p in siblings(path) if p.is_file()]
    for candidate in candidates:
        try:
            st = candidate.stat()
            if identity(st) != at.file or _head(candidate, at.head) != at.digest:
                continue
        except OSError:
            continue
        return Found(candidate) if st.st_size >= at.offset else Found(candidate, "truncated")
    if at.head:
        for candidate in candidates:
            try:
                if candidate.suffix == ".gz":
                    if _gz_head(candidate, at.head) == at.digest:
                        return Found(candidate, "compressed", _after(gz_size(candidate), at.offset))
                elif candidate.stat().st_size >= at.offset and _head(candidate, at.head) == at.digest:
                    return Found(candidate)
            except (OSError, EOFError, zlib.error):
                continue
    same = current is not None and identity(current) == at.file
    return Found(gap="replaced" if same else "gone")  # the same inode: emptied in place, or given again


def compressed(path: Path) -> bool:
    return path.suffix in (".gz", ".xz", ".bz2", ".zst")


def gz_size(path: Path) -> int | None:
    """The size of what a gzip file holds (None for any other compressed file)."""
    if path.suffix != ".gz":
        return None
    size = 0
    with gzip.open(path, "rb") as fh:
        while chunk := fh.read(1 << 20):
            size += len(chunk)
    return size


def _after(size: int | None, offset: int) -> int | None:
    return size - offset if size is not None and size >= offset else None


def _head(path: Path, size: int) -> str:
    with path.open("rb") as fh:
        return fingerprint(fh.read(size))


def _gz_head(path: Path, size: int) -> str:
    with gzip.open(path, "rb") as fh:
        return fingerprint(fh.read(size))


def truncated_note(path: str, offset: int, seconds: float, *, looked: bool = True) -> str:
    """The words for a file emptied in place while it was followed, with no copy of it read for the rest
    (``looked``: none was found): what it held past the last look (up to ``seconds`` of writing) was not read,
    if there was any."""
    copy = ", and no copy of it was found (copytruncate's, by its first bytes)" if looked else ""
    return (
        f"lines may be lost: {path} was emptied in place while it was followed{copy}; what was written after"
        f" byte {offset:,} in the last {_seconds(seconds)} before it, if anything, was not read"
    )


def _seconds(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms" if seconds < 1 else f"{seconds:.1f} s"


def gap_note(path: str, gap: str, offset: int, size: int | None) -> str:
    """The words for a gap: what happened to the file while it was not followed, and how much was lost."""
    how = {
        "gone": "was rotated and the old file is gone (deleted, compressed or moved away)",
        "replaced": "was emptied or replaced, and its old content is nowhere to be found",
        "truncated": "was truncated below where reading had stopped",
        "compressed": "was rotated and compressed",
    }.get(gap, f"changed ({gap})")
    amount = f"{size:,} bytes" if size is not None else "an unknown number of bytes"
    where = f" after byte {offset:,}" if offset else ""
    return f"lines lost: while {path} was not followed, it {how}; {amount}{where} were not read"
