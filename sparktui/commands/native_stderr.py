"""What native code prints on the process's standard error, kept in a file instead of the user's terminal.

Ray's C++ core writes its own warnings straight to file descriptor 2: on a machine without a route out, every
listing of a ``ray://`` head prints ``network_util.cc:330: Failed to determine local IP via external
connectivity ...`` (128 lines in a 40-second follow, trial 2026-12c), and in the cockpit such lines would land on
the screen. Before the first Ray source is opened, descriptor 2 is pointed at a private file of the state folder
(``native/ray-DATE-TIME-PID.log``) and Python's own ``sys.stderr`` at a copy of the descriptor it had, so what
sparktui says still shows where it did. At the end, :func:`said` names the file and how much it holds.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from sparktui.core.dirs import private_dir, state_dir

#: The captures kept: older ones are removed when a new one starts.
KEEP = 20

_kept: Path | None = None


def keep_for(arguments: Sequence[str]) -> None:
    """:func:`keep` where one of the source ``arguments`` is a Ray cluster (``ray://``), before Ray is loaded."""
    if any(a.startswith("ray://") for a in arguments):
        keep("ray")


def keep(name: str) -> Path | None:
    """From now on, what is written on descriptor 2 below Python goes to a new file named after ``name``, which
    this returns; the same file for every later call. None where there is no standard error to keep apart."""
    global _kept
    if _kept is not None or not _is_descriptor_2(sys.stderr):
        return _kept
    folder = state_dir() / "native"
    os.close(private_dir(folder))
    for old in sorted(folder.glob("*.log"), key=lambda p: p.stat().st_mtime)[: -KEEP + 1]:
        with contextlib.suppress(OSError):
            old.unlink()
    path = folder / f"{name}-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.log"
    target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    sys.stderr.flush()
    own = os.fdopen(os.dup(2), "w", buffering=1, encoding=sys.stderr.encoding, errors=sys.stderr.errors)
    os.dup2(target, 2)
    os.close(target)
    sys.stderr = own
    _kept = path
    return path


def _is_descriptor_2(stream: TextIO | None) -> bool:
    """Whether Python's standard error writes on descriptor 2: not where it was replaced (pytest's capture, a
    program embedding sparktui), whose own stream already keeps native output apart from ours."""
    try:
        return stream is not None and stream.fileno() == 2
    except (OSError, ValueError):  # io.UnsupportedOperation is both
        return False


def said() -> str:
    """What the captured file holds, in a line ("" when nothing was written to it, which is then removed)."""
    if _kept is None:
        return ""
    try:
        with _kept.open("rb") as file:
            lines = file.read().splitlines()
    except OSError:
        return ""
    if not lines:
        with contextlib.suppress(OSError):
            _kept.unlink()
        return ""
    first = lines[0].decode("utf-8", "replace")
    first = first.split("] ", 1)[-1][:120]  # past glog's time stamp and process ids
    count = f"{len(lines):,} line{'s' if len(lines) > 1 else ''}"
    return f"Ray's own messages ({count}, the first: {first!r}) were kept in {_kept}, not shown here"
