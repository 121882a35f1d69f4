"""The ``sparktui`` command line: the parser, made of every subcommand's own options, and the dispatch.

``sparktui [SOURCE...]`` opens the cockpit (a welcome screen when given nothing); every other word names a
subcommand (:mod:`sparktui.commands`). Whatever a command refuses is one line on stderr and exit status 2,
never a traceback.
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
import sys
from collections.abc import Sequence

from rich.text import Text

from sparktui import __version__
from sparktui.commands import catalogue, check, cockpit, diagnose, discover, native_stderr, play, stacks, translate
from sparktui.commands.common import USAGE_ERROR, err
from sparktui.core.errors import Invalid
from sparktui.core.search.engines import engine_name
from sparktui.core.sources.open import scheme

_NEGATIVE = re.compile(r"-\.?\d")
MODULES = (diagnose, cockpit, play, translate, discover, check, catalogue, stacks)
COMMANDS = (
    diagnose.NAME,
    *cockpit.NAMES,
    play.NAME,
    translate.NAME,
    discover.NAME,
    check.NAME,
    catalogue.NAME,
    stacks.NAME,
)


class _Version(argparse.Action):
    """``--version``: the version, and the matching engine in use (looked up only when asked: it imports
    Hyperscan)."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: object) -> None:
        super().__init__(option_strings, dest, nargs=0, help="show the version and the matching engine, and exit")

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
        sys.stdout.write(f"sparktui {__version__}\nmatching engine: {engine_name()}\n")
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="sparktui", description="Diagnose multi-node LLM inference bring-up.")
    parser.add_argument("--version", action=_Version)
    sub = parser.add_subparsers(dest="command", required=True)
    for module in MODULES:
        module.add(sub)
    return parser


def _mistyped(first: str) -> str | None:
    """The command ``first`` is a typo of, when it names no file (nor a source of another kind) and is close to
    one: a word that opened the cockpit on a file that does not exist (``sparktui diagnoes x``)."""
    if first.startswith("-") or os.path.lexists(first) or scheme(first) is not None:
        return None
    close = difflib.get_close_matches(first, COMMANDS, n=1, cutoff=0.75)
    return close[0] if close else None


def _negative_durations_joined(argv: Sequence[str]) -> list[str]:
    """``--for -5s`` as ``--for=-5s``: argparse takes a word that begins with ``-`` and is no plain number for an
    option, and answers "expected one argument", where the option's own check says what is wrong."""
    out: list[str] = []
    for word in argv:
        if out and out[-1] == "--for" and _NEGATIVE.match(word):
            out[-1] = f"--for={word}"
        else:
            out.append(word)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or (argv[0] not in COMMANDS and argv[0] not in ("-h", "--help", "--version")):
        meant = _mistyped(argv[0]) if argv else None
        if meant is not None:
            err().print(
                Text(f"sparktui: no command {argv[0]!r} (did you mean {meant}?), and no file of that name", style="red")
            )
            return USAGE_ERROR
        argv.insert(0, "open")
    args = build_parser().parse_args(_negative_durations_joined(argv))
    native_stderr.keep_for(argv)  # Ray's C++ warnings, before Ray loads: into a file, not the terminal
    try:
        code: int = args.run(args)
    except (Invalid, FileNotFoundError) as exc:
        err().print(Text(f"sparktui: {exc}", style="red"))
        return USAGE_ERROR
    except KeyboardInterrupt:
        return 130
    return code
