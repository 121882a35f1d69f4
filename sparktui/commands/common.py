"""What the subcommands share: the one-line usage error, the options several of them take, loading the
catalogue, reading a duration, opening live sources."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console
from rich.text import Text

from sparktui.core import catalogue as cat
from sparktui.core.analysis import userfiles
from sparktui.core.errors import Invalid
from sparktui.core.sources.base import LiveSource, SourceGroup
from sparktui.core.sources.open import Opener
from sparktui.core.text import display

#: The exit status for bad usage or input that cannot be read.
USAGE_ERROR = 2


class UsageError(Invalid):
    """Bad arguments or input; the message is printed as one line."""


def out() -> Console:
    """Standard output, plain when piped."""
    return Console(highlight=False, soft_wrap=True)


def err() -> Console:
    """Standard error, for progress and problems."""
    return Console(stderr=True, highlight=False, soft_wrap=True)


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
    """Live sources for the arguments (paths followed, ``ssh://``, ``docker://``, ``ray://``)."""
    return Opener(trust_new_host_key=trust_new_host_key).open(list(arguments))
