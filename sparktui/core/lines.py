"""Bytes arriving in chunks (a file read in blocks, a followed file, a command's output), cut into complete
decoded lines: the one place that knows where a line ends.

A line ends at ``\\n`` (``\\r\\n`` too). A partial last line waits for its newline, unless it grows past the
limit (:data:`MAX_LINE` bytes by default), when it is handed over in pieces of that size: a line of several
megabytes is never held whole, and a progress bar redrawn with ``\\r`` shows as it goes. Undecodable bytes
are replaced and escape sequences removed (:func:`~sparktui.core.text.decode`); a character or an escape
sequence cut between two chunks stays whole, since only complete lines are decoded.

The bytes are UTF-8 unless their first ones say otherwise (:func:`encoding_of`, decided once, from the first
bytes fed): UTF-16, little- or big-endian, with its byte order mark or without one (text whose every other
byte is zero). A UTF-16 line ends at the two bytes of its newline, found at an even place, and is decoded
as such; a byte order mark (UTF-8's too) at the start of the bytes is dropped.
"""

from __future__ import annotations

from sparktui.core.text import decode

#: The longest line held whole; a longer one comes in pieces of this many bytes.
MAX_LINE = 8 << 20
#: The first bytes looked at to tell UTF-16 without a byte order mark from UTF-8.
HEAD = 64
UTF8, UTF16LE, UTF16BE = "utf-8", "utf-16-le", "utf-16-be"
#: Byte order marks and what they mark.
_BOMS = ((b"\xef\xbb\xbf", UTF8), (b"\xff\xfe", UTF16LE), (b"\xfe\xff", UTF16BE))
#: A newline in each encoding.
_NEWLINE = {UTF8: b"\n", UTF16LE: b"\n\x00", UTF16BE: b"\x00\n"}


def encoding_of(head: bytes, *, final: bool = True) -> str | None:
    """The encoding of bytes that begin with ``head``: by their byte order mark (where what follows it reads
    as text in that encoding: ``\\xff\\xfe`` may begin undecodable bytes too), else UTF-16 where at least
    half the characters of the head are ASCII with a zero byte beside each (on the side that tells the byte
    order, more of them than on the other) and all of it reads as text in that encoding, else UTF-8. None
    where ``head`` is too short to tell and more bytes may come (not ``final``): fewer than 2 bytes, or a
    zero byte among the first two in fewer than :data:`HEAD` bytes with no UTF-16 newline yet."""
    for bom, encoding in _BOMS:
        if head.startswith(bom) and _readable(head[len(bom) : HEAD & ~1].decode(encoding, errors="replace")):
            return encoding
    if 0 not in head[:2] and len(head) >= 2:
        return UTF8
    even = head[: min(len(head), HEAD) & ~1]
    units = [even[i : i + 2] for i in range(0, len(even), 2)]
    if not final and (len(head) < 2 or (len(head) < HEAD and not {b"\n\x00", b"\x00\n"} & set(units))):
        return None
    low_first = sum(1 for u in units if u[0] and not u[1])
    high_first = sum(1 for u in units if u[1] and not u[0])
    for encoding, ascii_, other in ((UTF16LE, low_first, high_first), (UTF16BE, high_first, low_first)):
        if ascii_ > other and ascii_ * 2 >= len(units) and _readable(even.decode(encoding, errors="replace")):
            return encoding
    return UTF8


def _readable(text: str) -> bool:
    """Whether decoded text holds only what a log does: no control character but white space and escape
    (colours)."""
    return all(c.isprintable() or c.isspace() or c == "\x1b" for c in text)


class LineSplitter:
    """Splits bytes, fed in chunks from their start, into complete lines, first dropping the ``skip`` bytes
    already delivered; ``offset`` is the position just after the last line returned."""

    def __init__(self, skip: int = 0, *, limit: int = MAX_LINE) -> None:
        self.offset = skip
        self._skip = skip
        self._limit = limit
        self._pending = bytearray()
        #: The encoding, once the first bytes fed have told it; until then nothing is cut.
        self.encoding: str | None = None
        self._head = bytearray()

    @property
    def held(self) -> int:
        """Bytes of a partial last line, waiting for its end."""
        return len(self._pending)

    def feed(self, chunk: bytes) -> list[str]:
        """The lines that ``chunk`` completes."""
        return [line for run in self._cut(chunk) for line in self._text(run).split("\n")]

    def feed_block(self, chunk: bytes) -> str | None:
        """The lines that ``chunk`` completes as one block (``\\n``-separated, no final newline), decoded in
        one go; None when it completes none."""
        runs = self._cut(chunk)
        return "\n".join(self._text(run) for run in runs) if runs else None

    def rest(self) -> list[str]:
        """The last line when the bytes ended without a newline (nothing when they ended with one); where
        they ended before their encoding was told, every line they hold."""
        lines = []
        if self.encoding is None:
            self._decide(final=True)
            lines = [line for run in self._cut(b"") for line in self._text(run).split("\n")]
        if not self._pending:
            return lines
        line = self._text(bytes(self._pending))
        self.offset += len(self._pending)
        self._pending.clear()
        return [*lines, line]

    def _cut(self, chunk: bytes) -> list[bytes]:
        """The complete lines now pending, as one run of bytes, then each over-long piece as a run."""
        if self.encoding is None and len(self._head) < HEAD:
            self._head += chunk[: HEAD - len(self._head)]
        if self._skip:
            dropped = min(self._skip, len(chunk))
            self._skip -= dropped
            chunk = chunk[dropped:]
        self._pending += chunk
        if self.encoding is None and not self._decide(final=False):
            return []
        runs = []
        newline = _NEWLINE[self.encoding or UTF8]
        cut = self._pending.rfind(newline)
        if len(newline) == 2:
            while cut >= 0 and cut % 2:  # the bytes of two characters, not a newline
                cut = self._pending.rfind(newline, 0, cut + 1)
        if cut >= 0:
            runs.append(bytes(self._pending[:cut]))
            del self._pending[: cut + len(newline)]
            self.offset += cut + len(newline)
        while len(self._pending) >= self._limit:  # a line with no end in sight: hand it over in pieces
            runs.append(bytes(self._pending[: self._limit]))
            del self._pending[: self._limit]
            self.offset += self._limit
        return runs

    def _decide(self, *, final: bool) -> bool:
        """Tell the encoding from the first bytes, once (see :func:`encoding_of`); whether it is told."""
        encoding = encoding_of(bytes(self._head), final=final)
        if encoding is None:
            return False
        self.encoding = encoding
        if encoding != UTF8:
            self._limit = max(self._limit & ~1, 2)  # pieces of whole UTF-16 code units
        at_start = self.offset == 0 and not self._skip  # the pending bytes begin the bytes
        for bom, marked in _BOMS:
            if at_start and marked == encoding and self._pending.startswith(bom):
                del self._pending[: len(bom)]
                self.offset += len(bom)
        return True

    def _text(self, run: bytes) -> str:
        text = decode(run, self.encoding or UTF8)
        if "\r" in text:
            text = text.replace("\r\n", "\n").removesuffix("\r")
        return text


class BytesRead:
    """Bytes of a file read so far, as stored (compressed bytes, for a compressed file): counted by the
    thread that reads it, looked at by the one that shows how far it got."""

    __slots__ = ("read",)

    def __init__(self) -> None:
        self.read = 0
