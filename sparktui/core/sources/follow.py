"""A local file followed like ``tail -F``: new lines as they are written, across rotation and truncation."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import BinaryIO

from sparktui.core.classify import node_in
from sparktui.core.errors import Unavailable
from sparktui.core.lines import LineSplitter
from sparktui.core.sources.base import Cursor, Extent, LiveSource, Received
from sparktui.core.sources.files import node_from_path

POLL_SECONDS = 0.2
READ_SIZE = 1 << 20


class FollowedFile(LiveSource):
    """Yields the file's complete lines from the cursor (a byte offset) on, then waits for more.

    A file replaced by a new one (log rotation: another inode at the same path) is read to its end and
    the new file is followed from its start; a file that shrank below the cursor (truncation) is read
    again from its start. A missing or unreadable file raises :class:`Unavailable`, so the
    supervisor waits for it to appear, as ``tail -F`` does. A line is only delivered once its newline
    has been written, unless it grows past :data:`MAX_LINE` bytes.
    """

    kind = "file, followed"

    def __init__(self, path: Path, name: str, node: str | None = None, poll: float = POLL_SECONDS) -> None:
        """Without ``node``, the node is named from the file's content once lines arrive (the NCCL host
        prefix), else from its path."""
        self.path, self.name, self.poll = path, name, poll
        self.node = node or node_from_path(path)
        self._node_known = node is not None

    async def stream(self, cursor: Cursor | None) -> AsyncIterator[Received]:
        offset = int(cursor) if isinstance(cursor, int | float) else 0
        fh = self._open()
        try:
            inode = os.fstat(fh.fileno()).st_ino
            if os.fstat(fh.fileno()).st_size < offset:
                offset = 0
            fh.seek(offset)
            lines = LineSplitter()
            lines.offset = offset  # where the file was opened: nothing to drop
            yield Received((), offset)
            while True:
                chunk = fh.read(READ_SIZE)
                if chunk:
                    found = tuple(lines.feed(chunk))
                    if found and not self._node_known:
                        self._learn_node(found)
                    if found:
                        yield Received(found, lines.offset)
                    continue
                replaced, truncated = self._changed(inode, lines.offset + lines.held)
                if replaced or truncated:
                    fh.close()
                    fh = self._open()
                    inode = os.fstat(fh.fileno()).st_ino
                    lines = LineSplitter()
                    continue
                await asyncio.sleep(self.poll)
        finally:
            fh.close()

    def extent(self, cursor: Cursor | None) -> Extent | None:
        """The cursor is the offset just after the last line handed over; the size, the file's now."""
        try:
            size = self.path.stat().st_size
        except OSError:
            return None
        return Extent(int(cursor) if isinstance(cursor, int | float) else 0, size)

    def _open(self) -> BinaryIO:
        try:
            return self.path.open("rb")
        except OSError as exc:
            raise Unavailable(f"cannot open {self.path}: {exc.strerror or exc}") from None

    def _learn_node(self, lines: tuple[str, ...]) -> None:
        host = node_in("\n".join(lines))
        if host:
            self.node, self._node_known = host, True

    def _changed(self, inode: int, position: int) -> tuple[bool, bool]:
        try:
            st = self.path.stat()
        except OSError:
            return False, False  # moved away and not yet recreated: keep the old file
        return st.st_ino != inode, st.st_size < position
