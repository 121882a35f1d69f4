"""Turning raw log bytes into text that is safe to match and safe to show.

Logs arrive with undecodable bytes, NULs, CRLF line ends, colour codes, progress bars redrawn with
carriage returns and lines of several megabytes. Matching sees the text with escape sequences removed;
anything shown to a person goes through :func:`display` so no control character reaches a terminal.
"""

from __future__ import annotations

import re

# CSI (colours, cursor moves), OSC (titles, hyperlinks) and the two-byte escapes.
# An OSC never runs past the end of its line, so text decoded a block at a time reads as if line by line.
_ESCAPES = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b\n]*(?:\x07|\x1b\\)?|\x1b[@-Z\\-_]|\x9b[0-?]*[ -/]*[@-~]"
)
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")

#: The most characters of one line kept for display; the rest is replaced by a marker.
DISPLAY_LIMIT = 2000


def decode(data: bytes) -> str:
    """Decode log bytes as UTF-8, replacing what is not, and strip escape sequences."""
    text = data.decode("utf-8", errors="replace")
    if "\x1b" in text or "\x9b" in text:
        text = _ESCAPES.sub("", text)
    return text


def display(line: str, limit: int = DISPLAY_LIMIT) -> str:
    """Make one line inert for a terminal: keep what a terminal would show after carriage returns,
    make control characters visible as ``\\xNN`` and cut very long lines with a marker."""
    line = line.rstrip("\r\n")
    if "\r" in line:
        parts = [p for p in line.split("\r") if p.strip()]
        line = parts[-1] if parts else ""
    if "\x1b" in line or "\x9b" in line:
        line = _ESCAPES.sub("", line)
    if len(line) > limit:
        line = f"{line[:limit]} …[{len(line) - limit} more characters]"
    if _CONTROLS.search(line):
        line = _CONTROLS.sub(lambda m: f"\\x{ord(m.group()):02x}", line)
    return line.replace("\t", "    ")
