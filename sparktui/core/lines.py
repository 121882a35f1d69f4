"""Bytes arriving in chunks (a file read in blocks, a followed file, a command's output), cut into complete
decoded lines: the one place that knows where a line ends.

A line ends at ``\\n`` (``\\r\\n`` too). A partial last line waits for its newline, unless it grows past the
limit (:data:`MAX_LINE` bytes by default), when it is handed over in pieces of that size: a line of several
megabytes is never held whole, and a progress bar redrawn with ``\\r`` shows as it goes. Undecodable bytes
are replaced and escape sequences removed (:func:`~sparktui.core.text.decode`); a character or an escape
sequence cut between two chunks stays whole, since only complete lines are decoded.
"""

from __future__ import annotations

from sparktui.core.text import decode

#: The longest line held whole; a longer one comes in pieces of this many bytes.
MAX_LINE = 8 << 20


class LineSplitter:
    """Splits bytes, fed in chunks from their start, into complete lines, first dropping the ``skip`` bytes
    already delivered; ``offset`` is the position just after the last line returned."""

    def __init__(self, skip: int = 0, *, limit: int = MAX_LINE) -> None:
        self.offset = skip
        self._skip = skip
        self._limit = limit
        self._pending = bytearray()

    @property
    def held(self) -> int:
        """Bytes of a partial last line, waiting for its end."""
        return len(self._pending)

    def feed(self, chunk: bytes) -> list[str]:
        """The lines that ``chunk`` completes."""
        return [line for run in self._cut(chunk) for line in _text(run).split("\n")]

    def feed_block(self, chunk: bytes) -> str | None:
        """The lines that ``chunk`` completes as one block (``\\n``-separated, no final newline), decoded in
        one go; None when it completes none."""
        runs = self._cut(chunk)
        return "\n".join(_text(run) for run in runs) if runs else None

    def rest(self) -> list[str]:
        """The last line when the bytes ended without a newline (nothing when they ended with one)."""
        if not self._pending:
            return []
        line = _text(bytes(self._pending))
        self.offset += len(self._pending)
        self._pending.clear()
        return [line]

    def _cut(self, chunk: bytes) -> list[bytes]:
        """The complete lines now pending, as one run of bytes, then each over-long piece as a run."""
        if self._skip:
            dropped = min(self._skip, len(chunk))
            self._skip -= dropped
            chunk = chunk[dropped:]
        self._pending += chunk
        runs = []
        cut = self._pending.rfind(b"\n")
        if cut >= 0:
            runs.append(bytes(self._pending[:cut]))
            del self._pending[: cut + 1]
            self.offset += cut + 1
        while len(self._pending) >= self._limit:  # a line with no end in sight: hand it over in pieces
            runs.append(bytes(self._pending[: self._limit]))
            del self._pending[: self._limit]
            self.offset += self._limit
        return runs


def _text(run: bytes) -> str:
    text = decode(run)
    if "\r" in text:
        text = text.replace("\r\n", "\n").removesuffix("\r")
    return text


class BytesRead:
    """Bytes of a file read so far, as stored (compressed bytes, for a compressed file): counted by the
    thread that reads it, looked at by the one that shows how far it got."""

    __slots__ = ("read",)

    def __init__(self) -> None:
        self.read = 0
