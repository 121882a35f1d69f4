"""Copying from the cockpit: to the terminal's clipboard, and always to a file as well.

The terminal is asked with OSC 52 (Textual's :meth:`~textual.app.App.copy_to_clipboard`), which many
terminals and multiplexers ignore or refuse without saying so; so every copy is also written to
:func:`copy_file` (readable by the user only), and the notification names it. What is copied is the
text as the cockpit shows it, its secrets redacted as in the reports (:func:`~sparktui.core.redact.redact`)
and every line made inert (:func:`~sparktui.core.text.display_text`): nothing raw from a log reaches the
clipboard, so nothing raw reaches a terminal it is pasted into, and no secret leaves by a copy.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from textual.app import App

from sparktui.core.dirs import state_dir
from sparktui.core.redact import redact
from sparktui.core.text import display, display_text

#: The file every copy is written to, in the state folder.
COPY_FILE = "copied.txt"
#: Characters of one line kept in a copy (the cockpit cuts lines for the screen much shorter).
LINE_LIMIT = 100_000


def copy_file() -> Path:
    return state_dir() / COPY_FILE


def write_private(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` readable and writable by the user only, whatever the umask, in a folder
    made private if it has to be made."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with open(fd, "wb") as fh:
        os.fchmod(fd, 0o600)  # a file that was there before keeps its mode otherwise
        fh.write(text.encode())


def copy(app: App[Any], text: str, what: str) -> Path | None:
    """Copy ``text`` (``what`` says what it is, for the notification); the file it was written to, or None
    when it could not be written."""
    safe, what = display_text(redact(text), LINE_LIMIT), display(what)
    app.copy_to_clipboard(safe)
    path = copy_file()
    try:
        write_private(path, safe + "\n")
    except OSError as exc:
        app.notify(
            f"copied {what} to the terminal's clipboard; {path} could not be written: {exc.strerror or exc}",
            severity="warning",
            markup=False,
        )
        return None
    app.notify(f"copied {what}, secrets redacted; also in {path}", timeout=6, markup=False)
    return path
