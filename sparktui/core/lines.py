"""Bytes arriving in chunks (a followed file, a command's output), cut into complete decoded lines."""

from __future__ import annotations

from sparktui.core.sources.files import MAX_LINE
from sparktui.core.text import decode


class LineSplitter:
    """Splits bytes, fed in chunks from their start, into complete lines, first dropping the ``skip`` bytes
    already delivered; ``offset`` is the position just after the last line returned.

    Each line is decoded on its own (``\\r\\n`` ends a line too), so a character or an escape sequence cut
    between two chunks stays whole and an unterminated escape cannot swallow the lines after it; a partial
    last line waits for its newline unless it grows past ``limit`` bytes, when it is returned in pieces of
    that size (a progress bar redrawn with ``\\r`` shows as it goes).
    """

    def __init__(self, skip: int = 0, *, limit: int = MAX_LINE) -> None:
        self.offset = skip
        self._skip = skip
        self._limit = limit
        self._pending = bytearray()

    def feed(self, chunk: bytes) -> list[str]:
        if self._skip:
            dropped = min(self._skip, len(chunk))
            self._skip -= dropped
            chunk = chunk[dropped:]
        self._pending += chunk
        lines: list[str] = []
        cut = self._pending.rfind(b"\n")
        if cut >= 0:
            lines = [decode(raw.removesuffix(b"\r")) for raw in bytes(self._pending[:cut]).split(b"\n")]
            del self._pending[: cut + 1]
            self.offset += cut + 1
        while len(self._pending) >= self._limit:  # a line with no end in sight: hand it over in pieces
            lines.append(decode(bytes(self._pending[: self._limit])))
            del self._pending[: self._limit]
            self.offset += self._limit
        return lines

    def rest(self) -> list[str]:
        """The last line when the bytes ended without a newline (nothing when they ended with one)."""
        if not self._pending:
            return []
        line = decode(bytes(self._pending))
        self.offset += len(self._pending)
        self._pending.clear()
        return [line]
