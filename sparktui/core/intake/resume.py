"""A restart resumes: a source the last session of the same inputs read goes on from the spool's checkpoint.

A new session of the same sources (:meth:`~sparktui.core.sources.spool.Spool.resume`) does not read them
again from their start, nor keep their lines twice: each source that can resume (``resumable``: its cursor
means the same in another process) is read as :class:`Resumed`, which hands over first what the spool kept of
it (analysed again here, so the diagnosis is the one a single session would make; not kept again), then the
source's own lines from the checkpoint's cursor on, kept in the same spooled file.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

from sparktui.core.sources.base import Cursor, Extent, LiveSource, Received
from sparktui.core.sources.spool import Resume, Spool

#: Bytes of a spooled file read back at a time (in a thread: the loop goes on meanwhile).
BLOCK = 1 << 20


def resumed(source: LiveSource, spool: Spool | None) -> LiveSource:
    """``source`` as it is, or resumed where the spool's resumed session left it."""
    if spool is None or not spool.resumed or not source.resumable:
        return source
    at = spool.resume_of(source.name)
    return source if at is None else Resumed(source, at)


class Resumed(LiveSource):
    """``source``, with what the spool kept of it first (``kept`` batches, said once as an event), then its
    own lines from the checkpoint's cursor on. The spool is read back once, whatever reconnects follow."""

    def __init__(self, source: LiveSource, at: Resume) -> None:
        self.source, self.at = source, at
        self.name, self.node, self.kind = source.name, source.node, source.kind
        self.finite, self.resumable = source.finite, True
        self._read_back = False

    @property
    def hosts(self) -> frozenset[str]:
        return self.source.hosts

    def extent(self, cursor: Cursor | None) -> Extent | None:
        return self.source.extent(self.at.cursor if cursor is None else cursor)

    async def stream(self, cursor: Cursor | None) -> AsyncIterator[Received]:
        if not self._read_back:
            self._read_back = True
            kept = sum(size for _, size in self.at.files)
            yield Received(
                (),
                self.at.cursor,
                f"resumed: the {kept:,} bytes of it the last session kept ({self.at.incident.name}) are read back "
                "from the spool, and it is read on from where that session stopped",
            )
            for path, size in self.at.files:
                blocks = _lines(path, size)
                while (lines := await asyncio.to_thread(next, blocks, None)) is not None:
                    yield Received(lines, self.at.cursor, kept=True)
        async for received in self.source.stream(self.at.cursor if cursor is None else cursor):
            yield received


def _lines(path: Path, size: int) -> Iterator[tuple[str, ...]]:
    """The lines of the first ``size`` bytes of the spooled file ``path``, a block's worth at a time, the file
    open only while a block is read (thousands of sources read back at once hold no descriptor between two
    blocks); a file that cannot be read back gives what it gave (the source is read on all the same)."""
    rest, at = b"", 0
    while at < size:
        try:
            with open(path, "rb") as spooled:
                spooled.seek(at)
                block = spooled.read(min(BLOCK, size - at))
        except OSError:
            return
        if not block:
            break
        at += len(block)
        *lines, rest = (rest + block).split(b"\n")
        if lines:
            yield tuple(line.decode("utf-8", "replace") for line in lines)
    if rest:
        yield (rest.decode("utf-8", "replace"),)
