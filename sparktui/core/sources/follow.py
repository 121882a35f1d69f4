"""A local file followed like ``tail -F``: new lines as they are written, across rotation and truncation,
and a resume that finds the file again when it was rotated meanwhile (:mod:`~sparktui.core.sources.rotation`)."""

from __future__ import annotations

import asyncio
import os
import zlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import BinaryIO

from sparktui.core.classify import NodeLearner
from sparktui.core.errors import Unavailable
from sparktui.core.lines import LineSplitter
from sparktui.core.sources import descriptors
from sparktui.core.sources.base import Cursor, Extent, LiveSource, Received
from sparktui.core.sources.files import BLOCK, node_from_path
from sparktui.core.sources.rotation import (
    HEAD,
    FilePosition,
    compressed,
    fingerprint,
    gap_note,
    gz_size,
    head_of,
    identity,
    locate,
    rotated_after,
    truncated_note,
)

POLL_SECONDS = 0.2
READ_SIZE = 1 << 20


class FollowedFile(LiveSource):
    """Yields the file's complete lines from the cursor on, then waits for more.

    A file replaced by a new one (log rotation: another inode at the path) is read to its end (a last
    line without a newline ends there), then the files rotated after it if there are any, and the new
    file is followed from its start; a file that shrank below the cursor (truncation) is read again from
    its start. The cursor is a :class:`~sparktui.core.sources.rotation.FilePosition`: resuming from it
    goes on in the same file wherever a rotation put it (``node.log.1``...), then reads the file now at
    the path from its start; what cannot be found again comes as a note (lines lost, and how many bytes
    where that is known). A missing or unreadable file raises :class:`Unavailable`, so the supervisor
    waits for it to appear, as ``tail -F`` does. A line is only delivered once its newline has been
    written, unless it grows past :data:`MAX_LINE` bytes.
    """

    kind = "file, followed"
    resumable = True  # its cursor names the file (device, inode, first bytes) and the offset in it

    def __init__(self, path: Path, name: str, node: str | None = None, poll: float = POLL_SECONDS) -> None:
        """Without ``node``, the node is named from the file's content once lines arrive (the NCCL host
        prefix), else from its path."""
        self.path, self.name, self.poll = path, name, poll
        self._learner = NodeLearner(node, node_from_path(path), within=BLOCK)
        self.node = self._learner.node

    async def stream(self, cursor: Cursor | None) -> AsyncIterator[Received]:
        """One descriptor is taken for the whole stream (see :mod:`~sparktui.core.sources.descriptors`)."""
        if not descriptors.take():
            raise Unavailable(f"cannot open {self.path}: {descriptors.none_left()}")
        try:
            async for received in self._stream(cursor):
                yield received
        finally:
            descriptors.give()

    async def _stream(self, cursor: Cursor | None) -> AsyncIterator[Received]:
        at = FilePosition.of(cursor)
        fh, offset, notes = await asyncio.to_thread(self._resume, at)
        if fh is None:  # nothing to read now, and what the cursor was in is gone: say so, then wait
            for note in notes:
                yield Received((), FilePosition().cursor, note)
            raise Unavailable(f"cannot open {self.path}: No such file or directory")
        read: set[str] = set()  # the files of a chain of rotations read so far, up to the path's file
        try:
            reading = _Reading(fh, offset)
            for note in notes:
                yield Received((), reading.position(), note)
            yield Received((), reading.position())
            while True:
                chunk = fh.read(READ_SIZE)
                if chunk:
                    found = tuple(reading.lines.feed(chunk))
                    if found and not self._learner.decided:  # from its first MiB, as a file read once
                        self.node = self._learner.learn("\n".join(found))
                    if found:
                        yield Received(found, reading.position())
                    # A file that has more to read never waits: let the rest of the loop run between two
                    # reads (the consumer takes a batch per batch read, so the queue does not fill with a
                    # big file's megabytes, and a stop is heard).
                    await asyncio.sleep(0)
                    continue
                replaced, truncated = self._changed(reading.inode, reading.lines.offset + reading.lines.held)
                if replaced or truncated:
                    lost: list[str] = []
                    if truncated and not replaced:  # emptied in place: copytruncate's copy has what came since
                        copy, lost = await asyncio.to_thread(self._copy_of, reading)
                        if copy is not None:  # read on in it from here, then the path's file from its start
                            fh.close()
                            fh, reading = copy, reading.into(copy)
                            continue
                    last = tuple(reading.lines.rest())  # a last line without its newline: the file is done
                    if last:
                        yield Received(last, reading.position())
                    if replaced:
                        read.add(reading.file)
                    done = os.fstat(fh.fileno())
                    fh.close()
                    later, notes = await asyncio.to_thread(self._later, done, read) if replaced else (None, [])
                    if later is None:
                        read.clear()
                    fh = later or self._open()
                    reading = _Reading(fh, 0)
                    for note in [*lost, *notes]:
                        yield Received((), reading.position(), note)
                    yield Received((), reading.position())
                    continue
                await asyncio.sleep(self.poll)
        finally:
            fh.close()

    def _resume(self, at: FilePosition) -> tuple[BinaryIO | None, int, list[str]]:
        """The file to read first, where in it, and the notes for what was lost (see the class)."""
        try:
            fh: BinaryIO | None = self.path.open("rb")
        except OSError as exc:
            if not at.file:
                raise Unavailable(f"cannot open {self.path}: {exc.strerror or exc}{descriptors.why_not(exc)}") from None
            fh = None
        st = os.fstat(fh.fileno()) if fh is not None else None
        if not at.file:  # a plain offset: the file at the path, from there unless it is shorter now
            assert fh is not None and st is not None
            return fh, at.offset if st.st_size >= at.offset else 0, []
        if (
            fh is not None
            and st is not None
            and identity(st) == at.file
            and st.st_size >= at.offset
            and fingerprint(head_of(fh, at.head)) == at.digest
        ):
            return fh, at.offset, []
        found = locate(self.path, at, st)
        if found.path is not None and not found.gap:
            try:
                old = found.path.open("rb")
            except OSError:
                pass  # gone between the look and the open
            else:
                if fh is not None:
                    fh.close()
                return old, at.offset, []
        notes = [gap_note(str(self.path), found.gap or "gone", at.offset, found.size)]
        if found.path is not None:  # compressed, or cut short: what was rotated after it comes next
            try:
                after = found.path.stat()
            except OSError:
                return fh, 0, notes
            later, more = self._later(after, {identity(after)})
            if later is not None:
                if fh is not None:
                    fh.close()
                fh = later
            notes += more
        return fh, 0, notes

    def _copy_of(self, reading: _Reading) -> tuple[BinaryIO | None, list[str]]:
        """The copy of the file being read, emptied in place since the last look (``copytruncate``): a sibling
        with its first bytes and at least what was read of it, opened; where there is none, the note that
        what was written since the last look, if anything, was not read."""
        at = reading.at()
        found = locate(self.path, at, None) if at.head else None
        if found is not None and found.path is not None and not found.gap:
            try:
                return found.path.open("rb"), []
            except OSError:
                pass  # gone meanwhile
        return None, [truncated_note(str(self.path), at.offset, self.poll)]

    def _later(self, after: os.stat_result, read: set[str]) -> tuple[BinaryIO | None, list[str]]:
        """The oldest file rotated since the one ``after`` describes and not ``read`` yet, opened (None when
        there is none: the path's file is next), and the notes for the compressed ones passed over."""
        notes: list[str] = []
        for later in rotated_after(self.path, after, read):
            try:
                read.add(identity(later.stat()))
                if compressed(later):
                    notes.append(gap_note(str(self.path), "compressed", 0, gz_size(later)))
                    continue
                return later.open("rb"), notes
            except (OSError, EOFError, zlib.error):
                continue
        return None, notes

    def extent(self, cursor: Cursor | None) -> Extent | None:
        """The cursor is the offset just after the last line handed over; the size, the file's now."""
        try:
            size = self.path.stat().st_size
        except OSError:
            return None
        return Extent(FilePosition.of(cursor).offset, size)

    def _open(self) -> BinaryIO:
        try:
            return self.path.open("rb")
        except OSError as exc:
            raise Unavailable(f"cannot open {self.path}: {exc.strerror or exc}{descriptors.why_not(exc)}") from None

    def _changed(self, inode: int, position: int) -> tuple[bool, bool]:
        try:
            st = self.path.stat()
        except OSError:
            return False, False  # moved away and not yet recreated: keep the old file
        return st.st_ino != inode, st.st_size < position


class _Reading:
    """One open file being read from ``offset``: its lines, and the position after them."""

    def __init__(self, fh: BinaryIO, offset: int) -> None:
        self.fh = fh
        st = os.fstat(fh.fileno())
        self.inode, self.file = st.st_ino, identity(st)
        fh.seek(offset)
        self.lines = LineSplitter()
        self.lines.offset = offset  # where the file was opened: nothing to drop
        self._head = b""

    def position(self) -> Cursor:
        if len(self._head) < HEAD:  # the fingerprint grows with the file up to its first HEAD bytes
            self._head = head_of(self.fh)
        return FilePosition(self.lines.offset, self.file, len(self._head), fingerprint(self._head)).cursor

    def at(self) -> FilePosition:
        """Where the bytes read so far end (a part of a line held included), with the first bytes of the file as
        they were at the last :meth:`position` (the file may hold others now)."""
        return FilePosition(self.lines.offset + self.lines.held, self.file, len(self._head), fingerprint(self._head))

    def into(self, fh: BinaryIO) -> _Reading:
        """The same reading going on in ``fh``, a copy of this file, from where this one stopped (a part of a
        line held stays, and is completed from the copy)."""
        moved = _Reading(fh, self.lines.offset + self.lines.held)
        moved.lines = self.lines
        return moved
