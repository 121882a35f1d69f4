"""``sparktui catalogue``: list the signatures, show one, test signature files against their own examples."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rich.console import Console
from rich.text import Text

from sparktui.commands.common import UsageError, catalogue, out, signatures_option
from sparktui.core import catalogue as cat
from sparktui.core.analysis.examples import check, check_format, check_prefix, check_track
from sparktui.core.analysis.userfiles import id_problems
from sparktui.core.classify import FORMATS, PREFIXES
from sparktui.core.inventory import rules
from sparktui.richtext import SEVERITY_STYLE

NAME = "catalogue"


def add(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    c = sub.add_parser(NAME, help="list, show and test signature files")
    actions = c.add_subparsers(dest="action", required=True)
    listing = actions.add_parser("list", help="list the signatures")
    showing = actions.add_parser("show", help="show one signature")
    showing.add_argument("id")
    testing = actions.add_parser("test", help="check signature files against their own examples")
    testing.add_argument("paths", nargs="*", metavar="PATH", help="signature files or directories (default: all)")
    for action in (listing, showing, testing):
        signatures_option(action)
    c.set_defaults(run=main)


def main(args: argparse.Namespace) -> int:
    shown = out()
    if args.action == "test":
        return _test(args, shown)
    found = catalogue(args.signatures)
    if args.action == "list":
        _list(found, shown)
        return 0
    try:
        sig = found.get(args.id)
    except KeyError:
        raise UsageError(f"no signature {args.id!r} (see `sparktui catalogue list`)") from None
    sys.stdout.write(sig.path.read_text(encoding="utf-8"))
    return 0


def _list(found: cat.Catalogue, shown: Console) -> None:
    for sig in sorted(found.signatures, key=lambda s: (s.category, -s.severity, s.id)):
        line = Text(f"{sig.id:<48} ")
        line.append(f"{sig.severity.label:<9}", style=SEVERITY_STYLE[sig.severity])
        line.append(f"{sig.category:<28} {sig.kind:<6} ")
        line.append(sig.title, style="dim")
        shown.print(line, overflow="ellipsis", no_wrap=True)
    shown.print(Text(f"{len(found.signatures)} signatures, {len(found.tracks)} stage tracks", style="dim"))


def _test(args: argparse.Namespace, shown: Console) -> int:
    """Test the whole catalogue (signatures, stage tracks and pre-launch checks), or only the files / folders
    named (loaded on top of the built-in one so their references to built-in stage tracks and signatures
    resolve). A folder named ``checks`` or ``advisories``, or a file in one, holds pre-launch checks."""
    extra = [Path(d) for d in args.signatures]
    checks_extra: list[Path] = []
    wanted: set[Path] | None = None
    if args.paths:
        wanted = set()
        for raw in args.paths:
            path = Path(raw)
            holds_checks = (path if path.is_dir() else path.parent).name in ("checks", "advisories")
            if path.is_dir():
                (checks_extra if holds_checks else extra).append(path)
                wanted |= {p.resolve() for p in path.glob("*.toml")}
            elif path.is_file():
                wanted.add(path.resolve())
                folder = path.parent.resolve()
                if holds_checks and folder not in {d.resolve() for d in rules.builtin_dirs()}:
                    checks_extra.append(path.parent)
                elif not holds_checks and folder != cat.builtin_dir().resolve():
                    extra.append(path.parent)
            else:
                raise UsageError(f"{raw}: no such file or directory")
    found = cat.load(extra)
    try:
        checks = rules.load([*rules.builtin_dirs(), *checks_extra])
    except cat.CatalogueError as exc:
        shown.print(Text(str(exc), style="red"))
        return 1
    from sparktui.core.remedy.playbook import load_all  # only to test: the checks' playbooks exist

    books = set(load_all())
    checked = failed = 0
    for rule in checks:
        if wanted is not None and rule.path.resolve() not in wanted:
            continue
        checked += 1
        problems = rules.check_examples(rule, books)
        failed += bool(problems)
        for p in problems:
            shown.print(Text(p, style="red"))
    items: list[cat.Signature | cat.Track] = [*found.signatures, *found.tracks]
    builtin = cat.load() if any(not cat.is_builtin(item.path) for item in items) else found
    for item in items:
        if wanted is not None and item.path.resolve() not in wanted:
            continue
        checked += 1
        problems = check(item, found) if isinstance(item, cat.Signature) else check_track(item)
        if not cat.is_builtin(item.path) and not (isinstance(item, cat.Signature) and item.family_of):
            problems = id_problems(item, builtin) + problems
        if problems:
            failed += 1
            for p in problems:
                shown.print(Text(p, style="red"))
    if wanted is None:  # the whole catalogue: the line formats too
        for problems in [*map(check_prefix, PREFIXES), *map(check_format, FORMATS)]:
            checked += 1
            failed += bool(problems)
            for p in problems:
                shown.print(Text(p, style="red"))
    shown.print(Text(f"{checked - failed} passed, {failed} failed", style="green" if not failed else "red"))
    return 1 if failed else 0
