"""Turning raw log bytes into text that is safe to match and safe to show.

Logs arrive with undecodable bytes, NULs, CRLF line ends, colour codes, progress bars redrawn with
carriage returns and lines of several megabytes. Matching sees the text with escape sequences removed;
anything shown to a person goes through :func:`display` so no control character reaches a terminal, and
nothing a terminal would not show (text a carriage return hides, characters that are invisible or that
reorder a line) is hidden from the reader.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import overload

# CSI (colours, cursor moves); the strings, each with its payload: OSC (titles, hyperlinks), DCS (sixel
# images, terminal queries), SOS, PM and APC; the two-byte escapes; CSI in its one-byte C1 form.
# A string never runs past the end of its line, so text decoded a block at a time reads as if line by line.
# The sequences that begin with ESC are one pattern that begins with it: four times faster over a block than
# an alternation that repeats it.
_ESCAPES = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|[P\]X^_][^\x07\x1b\n]*(?:\x07|\x1b\\)?|[@-Z\\-_])")
_C1_CSI = re.compile(r"\x9b[0-?]*[ -/]*[@-~]")
# Characters shown escaped: the C0 and C1 controls (not the tab), and the format characters a terminal does
# not draw but that change what a line seems to say: zero-width ones (U+200B-U+200D, U+2060-U+2064, the
# byte order mark U+FEFF), the bidirectional marks, embeddings, overrides and isolates (U+061C, U+200E,
# U+200F, U+202A-U+202E, U+2066-U+2069) and the line and paragraph separators (U+2028, U+2029).
#: Those beyond the C0 controls, as the ranges of a character class (the playbooks' kinds of value refuse them).
UNSEEN = "\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u2069\ufeff"
_CONTROLS = re.compile(f"[\x00-\x08\x0b-\x1f{UNSEEN}]")
_UNSEEN = re.compile(f"[{UNSEEN}]")

#: The most characters of one line kept for display; the rest is replaced by a marker.
DISPLAY_LIMIT = 2000


def decode(data: bytes, encoding: str = "utf-8") -> str:
    """Decode log bytes (UTF-8 unless said otherwise), replacing what is not, and strip escape sequences."""
    return without_escapes(data.decode(encoding, errors="replace"))


def without_escapes(text: str) -> str:
    """``text`` with its escape sequences removed (each string with its payload)."""
    if "\x1b" in text:
        text = _ESCAPES.sub("", text)
    if not text.isascii() and "\x9b" in text:  # isascii() is free: a string knows whether it is ASCII
        text = _C1_CSI.sub("", text)
    return text


def display(line: str, limit: int = DISPLAY_LIMIT) -> str:
    """Make one line inert for a terminal: escape sequences removed with their payload, control and
    invisible characters shown as ``\\xNN`` or ``\\uNNNN``, text redrawn by carriage returns kept where it
    would not be wholly covered (see :func:`_redrawn`), very long lines cut with a marker."""
    line = without_escapes(line.rstrip("\r\n"))
    if "\r" in line:
        line = _redrawn(line)
    if len(line) > limit:
        line = f"{line[:limit]} …[{len(line) - limit} more characters]"
    if _CONTROLS.search(line):
        line = _CONTROLS.sub(_escaped, line)
    return line.replace("\t", "    ")


def json_inert(text: str) -> str:
    """JSON text (a document, or a piece of one as an encoder hands it out) with every character of
    :data:`UNSEEN` written as its ``\\u`` escape: the same data to a program, inert on a terminal. (JSON written
    without ``ensure_ascii`` holds them raw in its strings, where they are the only place they can be.)"""
    if text.isascii() and "\x7f" not in text:
        return text
    return _UNSEEN.sub(_json_escaped, text)


def json_inert_pieces(pieces: Iterable[str], size: int = 1 << 16) -> Iterator[str]:
    """:func:`json_inert` over the pieces of a JSON document as an encoder hands them out (``iterencode``:
    hundreds of thousands of short strings for a big diagnosis), joined into pieces of about ``size``
    characters first, so that the check costs a call per block rather than per token."""
    block: list[str] = []
    held = 0
    for piece in pieces:
        block.append(piece)
        held += len(piece)
        if held >= size:
            yield json_inert("".join(block))
            block, held = [], 0
    if block:
        yield json_inert("".join(block))


def _json_escaped(m: re.Match[str]) -> str:
    return f"\\u{ord(m.group()):04x}"


class Inert:
    """A text attribute of a class that keeps the value set on it as :func:`display` makes it: where a name
    taken from outside the program (a file's, a node's named by a bundle or learnt from a log, a container's)
    is set on the object that carries it, it becomes inert for every front end that shows it."""

    def __set_name__(self, owner: type, name: str) -> None:
        self._key = f"_inert_{name}"

    @overload
    def __get__(self, obj: None, owner: type) -> Inert: ...
    @overload
    def __get__(self, obj: object, owner: type) -> str: ...
    def __get__(self, obj: object | None, owner: type) -> Inert | str:
        if obj is None:
            return self
        value: str = obj.__dict__[self._key]
        return value

    def __set__(self, obj: object, value: str) -> None:
        obj.__dict__[self._key] = display(value)


def display_text(text: str, limit: int | None = None) -> str:
    """``text`` of any number of lines, each made inert as :func:`display` makes a line and cut at ``limit``
    characters where one is given: a whole document (a Markdown report), a text put into one (HTML), a copy
    to the clipboard; none cut by default, since their lines may have been displayed (and cut) already."""
    if limit is None and text.isascii() and _CONTROLS.search(text.replace("\n", "")) is None:
        return text  # most texts: nothing to do, known in one pass
    return "\n".join(display(line, len(line) if limit is None else limit) for line in text.split("\n"))


def _redrawn(line: str) -> str:
    """A line that carriage returns split into parts, each drawn over the ones before: a part that a later
    one at least as long covers whole is left out (a progress bar shows its last state, as on a terminal);
    every other part is kept, with the carriage return before the next one left in (shown as ``\\x0d``),
    so no text hides behind a shorter one or behind blanks. Blank parts are left out."""
    kept: list[str] = []
    cover = 0
    for part in reversed(line.split("\r")):
        if not part.strip():
            continue
        if len(part.rstrip()) > cover:
            kept.append(part)
        cover = max(cover, len(part))
    return "\r".join(reversed(kept))


def _escaped(m: re.Match[str]) -> str:
    code = ord(m.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"
