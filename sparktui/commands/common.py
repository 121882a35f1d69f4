"""What the subcommands share: the one-line usage error, the options several of them take, loading the
catalogue, reading a duration, opening live sources."""

from __future__ import annotations

import argparse
import io
import resource
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO, cast

from rich.console import Console
from rich.text import Text

from sparktui.commands import native_stderr
from sparktui.core import catalogue as cat
from sparktui.core.analysis import userfiles
from sparktui.core.errors import Invalid
from sparktui.core.sources.base import LiveSource, SourceGroup
from sparktui.core.sources.follow import FollowedFile
from sparktui.core.sources.open import Opener
from sparktui.core.text import display

#: The exit status for bad usage or input that cannot be read.
USAGE_ERROR = 2


class UsageError(Invalid):
    """Bad arguments or input; the message is printed as one line."""


#: The width given to output that goes to a pipe or a file: wide enough that nothing is wrapped or cut
#: (a line taken from a log is shortened by the text layer long before this).
PIPED_WIDTH = 4000


def out() -> Console:
    """Standard output: on a terminal, wrapped to its width; piped, plain and unwrapped (tables keep every
    column, a paragraph is one line)."""
    console = Console(highlight=False)
    return (
        console
        if console.is_terminal
        else Console(highlight=False, width=PIPED_WIDTH, file=cast(TextIO, _Trimmed(sys.stdout)))
    )


class _Trimmed(io.TextIOBase):
    """A text stream that drops the blanks at the end of each line (Rich pads a table's cells and a group's
    lines to one width; piped into a file or grep, they are noise)."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._partial = ""

    def write(self, text: str) -> int:
        *whole, self._partial = (self._partial + text).split("\n")
        for line in whole:
            self._stream.write(line.rstrip() + "\n")
        return len(text)

    def flush(self) -> None:
        if self._partial:
            self._stream.write(self._partial.rstrip())
            self._partial = ""
        self._stream.flush()


def err() -> Console:
    """Standard error, for progress and problems."""
    return Console(stderr=True, highlight=False, soft_wrap=True)


def node_arguments(nodes: Sequence[str]) -> list[str]:
    """Nodes named on the command line (``[USER@]HOST[:PORT]`` or an ssh alias), as given; one that holds a
    character a terminal would not show as it is (a control, direction or invisible one) is refused in one
    line, shown inert, as an ``ssh://`` address's host is."""
    for node in nodes:
        if display(node) != node:
            raise UsageError(f"'{display(node)}' is not a host name (letters, digits, '-' and '.')")
    return list(nodes)


def signatures_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--signatures",
        action="append",
        default=[],
        metavar="DIR",
        help="also load signature files from DIR (repeatable)",
    )


def trust_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--trust-new-host-key",
        action="store_true",
        help="record SSH host keys seen for the first time (a changed key is still refused)",
    )


def spool_raw_option(parser: argparse.ArgumentParser | argparse._MutuallyExclusiveGroup) -> None:
    parser.add_argument(
        "--spool-raw",
        action="store_true",
        help="keep the received lines in the spool as they came, secrets included (redacted by default)",
    )


def catalogue(extra: Sequence[str]) -> cat.Catalogue:
    """The built-in catalogue and the user's signature folders, less (each said on stderr, in one line) the
    user's files that fail the checks of ``sparktui catalogue test``."""
    found = userfiles.load([Path(d) for d in extra])
    for line in found.refused:
        err().print(Text(display(f"sparktui: {line}"), style="yellow"))
    return found


def duration(text: str) -> float:
    """``20s``, ``5m``, ``1h`` or plain seconds."""
    units = {"s": 1, "m": 60, "h": 3600}
    number, unit = (text[:-1], text[-1]) if text and text[-1] in units else (text, "s")
    try:
        value = float(number) * units[unit]
    except ValueError:
        raise UsageError(f"--for: {text!r} is not a duration (e.g. 20s, 5m, 1h)") from None
    if value <= 0:
        raise UsageError("--for: the duration must be positive")
    return value


def open_sources(arguments: Sequence[str], *, trust_new_host_key: bool) -> list[LiveSource | SourceGroup]:
    """Live sources for the arguments (paths followed, ``ssh://``, ``docker://``, ``ray://``), with room to
    keep every followed file open."""
    native_stderr.keep_for(arguments)
    sources = Opener(trust_new_host_key=trust_new_host_key).open(list(arguments))
    allow_open_files(sum(isinstance(s, FollowedFile) for s in sources))
    return sources


#: Files a session keeps open besides the logs it follows (the terminal, sockets, the spool, the screen's).
OTHER_FILES = 256


def allow_open_files(followed: int) -> None:
    """Raise the process's soft limit on open files so that ``followed`` files can stay open, as far as the
    hard limit allows: a followed file is held open, a folder of 5,000 logs is 5,000 of them, and the usual
    soft limit is 1,024 (the files past it would wait for ever, each retrying "Too many open files")."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = followed + OTHER_FILES
    if soft == resource.RLIM_INFINITY or soft >= wanted:
        return
    resource.setrlimit(resource.RLIMIT_NOFILE, (wanted if hard == resource.RLIM_INFINITY else min(wanted, hard), hard))
