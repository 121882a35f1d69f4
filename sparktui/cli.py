"""The ``sparktui`` command line: ``diagnose`` and ``catalogue`` (the cockpit arrives with the TUI).

Exit status of ``diagnose``: 0 when no finding reaches ``--fail-on``, 1 when one does, 2 for bad usage
or unreadable input, always with a one-line message on stderr and never a traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console
from rich.text import Text

from sparktui import __version__
from sparktui.core import catalogue as cat
from sparktui.core.events import Severity
from sparktui.core.examples import check
from sparktui.core.pipeline import diagnose_files
from sparktui.core.sources.files import discover
from sparktui.render import SEVERITY_STYLE, markdown, print_text

USAGE_ERROR = 2


class UsageError(Exception):
    """Bad arguments or input; the message is printed as one line."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="sparktui", description="Diagnose multi-node LLM inference bring-up.")
    parser.add_argument("--version", action="version", version=f"sparktui {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    d = sub.add_parser("diagnose", help="analyse log files and directories, print ranked findings")
    d.add_argument("sources", nargs="+", metavar="SOURCE", help="log file, directory of logs, or .gz file")
    fmt = d.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="print the JSON contract (same as --format json)")
    fmt.add_argument("--format", choices=("text", "md", "json"), default="text")
    d.add_argument(
        "--fail-on",
        default="error",
        metavar="SEVERITY",
        help="exit 1 if a finding is at least this severe (info, warning, error, critical; default error)",
    )
    d.add_argument(
        "--signatures",
        action="append",
        default=[],
        metavar="DIR",
        help="also load signature files from DIR (repeatable)",
    )
    d.add_argument("--quiet", action="store_true", help="no progress on stderr")

    c = sub.add_parser("catalogue", help="list, show and test signature files")
    csub = c.add_subparsers(dest="action", required=True)
    for name, text in (
        ("list", "list the signatures"),
        ("show", "show one signature"),
        ("test", "check signature files against their own examples"),
    ):
        p = csub.add_parser(name, help=text)
        if name == "show":
            p.add_argument("id")
        if name == "test":
            p.add_argument("paths", nargs="*", metavar="PATH", help="signature files or directories (default: all)")
        p.add_argument(
            "--signatures",
            action="append",
            default=[],
            metavar="DIR",
            help="also load signature files from DIR (repeatable)",
        )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    err = Console(stderr=True, highlight=False, soft_wrap=True)
    try:
        if args.command == "diagnose":
            return _diagnose(args, err)
        return _catalogue(args)
    except (UsageError, cat.CatalogueError, FileNotFoundError) as exc:
        err.print(Text(f"sparktui: {exc}", style="red"))
        return USAGE_ERROR
    except KeyboardInterrupt:
        return 130


def _load(extra: Sequence[str]) -> cat.Catalogue:
    return cat.load([Path(d) for d in extra])


def _diagnose(args: argparse.Namespace, err: Console) -> int:
    try:
        fail_on = Severity.parse(args.fail_on)
    except ValueError as exc:
        raise UsageError(f"--fail-on: {exc}") from None
    catalogue = _load(args.signatures)
    sources, problems = discover(args.sources)
    if not sources:
        raise UsageError(problems[0] if problems else "no log files found in " + " ".join(args.sources))
    for problem in problems:
        err.print(Text(f"sparktui: {problem}", style="yellow"))
    show_progress = not args.quiet and err.is_terminal
    with err.status("reading…", spinner="dots") if show_progress else _Nothing() as status:

        def progress(name: str, lines: int) -> None:
            if status is not None:
                status.update(f"reading {name}: {lines:,} lines")

        diagnosis = diagnose_files(sources, catalogue, progress)
    unreadable = [s for s in diagnosis.sources if s.error and s.lines == 0]
    for s in diagnosis.sources:
        if s.error:
            err.print(Text(f"sparktui: {s.error}", style="yellow"))
    fmt = "json" if args.json else args.format
    if fmt == "json":
        sys.stdout.write(json.dumps(diagnosis.as_dict(), indent=2, ensure_ascii=False) + "\n")
    elif fmt == "md":
        sys.stdout.write(markdown(diagnosis) + "\n")
    else:
        print_text(diagnosis, Console(highlight=False))
    if unreadable and len(unreadable) == len(diagnosis.sources):
        return USAGE_ERROR
    worst = diagnosis.worst()
    return 1 if worst is not None and worst >= fail_on else 0


class _Nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def _catalogue(args: argparse.Namespace) -> int:
    out = Console(highlight=False, soft_wrap=True)
    if args.action == "test":
        return _catalogue_test(args, out)
    catalogue = _load(args.signatures)
    if args.action == "list":
        for sig in sorted(catalogue.signatures, key=lambda s: (s.category, -s.severity, s.id)):
            line = Text(f"{sig.id:<48} ")
            line.append(f"{sig.severity.label:<9}", style=SEVERITY_STYLE[sig.severity])
            line.append(f"{sig.category:<28} {sig.kind:<6} ")
            line.append(sig.title, style="dim")
            out.print(line, overflow="ellipsis", no_wrap=True)
        out.print(Text(f"{len(catalogue.signatures)} signatures, {len(catalogue.tracks)} stage tracks", style="dim"))
        return 0
    try:
        sig = catalogue.get(args.id)
    except KeyError:
        raise UsageError(f"no signature {args.id!r} (see `sparktui catalogue list`)") from None
    sys.stdout.write(sig.path.read_text(encoding="utf-8"))
    return 0


def _catalogue_test(args: argparse.Namespace, out: Console) -> int:
    """Test the whole catalogue, or only the files / folders named (loaded on top of the built-in one so
    their references to built-in stage tracks and signatures resolve)."""
    extra = [Path(d) for d in args.signatures]
    wanted: set[Path] | None = None
    if args.paths:
        wanted = set()
        for raw in args.paths:
            path = Path(raw)
            if path.is_dir():
                extra.append(path)
                wanted |= {p.resolve() for p in path.glob("*.toml")}
            elif path.is_file():
                wanted.add(path.resolve())
                if path.parent.resolve() != cat.builtin_dir().resolve():
                    extra.append(path.parent)
            else:
                raise UsageError(f"{raw}: no such file or directory")
    catalogue = cat.load(extra)
    checked = failed = 0
    for sig in catalogue.signatures:
        if wanted is not None and sig.path.resolve() not in wanted:
            continue
        checked += 1
        problems = check(sig, catalogue)
        if problems:
            failed += 1
            for p in problems:
                out.print(Text(p, style="red"))
    out.print(Text(f"{checked - failed} passed, {failed} failed", style="green" if not failed else "red"))
    return 1 if failed else 0
