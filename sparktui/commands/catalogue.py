"""``sparktui catalogue``: list the signatures, show one, test signature files against their own examples."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from pathlib import Path

from rich.console import Console
from rich.text import Text

from sparktui.commands.common import UsageError, catalogue, out, signatures_option
from sparktui.core import catalogue as cat
from sparktui.core.analysis.examples import check, check_format, check_prefix, check_track
from sparktui.core.analysis.userfiles import id_problems
from sparktui.core.classify import FORMATS, PREFIXES
from sparktui.core.inventory import rules
from sparktui.core.stacks.kinds import KindError, builtin_kinds
from sparktui.core.stacks.kinds import check_examples as check_kind
from sparktui.richtext import SEVERITY_STYLE

NAME = "catalogue"


def add(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    c = sub.add_parser(NAME, help="list, show and test signature files")
    actions = c.add_subparsers(dest="action", required=True)
    listing = actions.add_parser("list", help="list the signatures")
    showing = actions.add_parser("show", help="show one signature")
    showing.add_argument("id")
    testing = actions.add_parser(
        "test", help="check the catalogue's files (signatures, tracks, checks, formats ...) against their examples"
    )
    testing.add_argument("paths", nargs="*", metavar="PATH", help="catalogue files or folders (default: all)")
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


#: The folders sparktui reads only from its own catalogue (a user adds signatures, stage tracks and checks).
_OWN = ("formats", "stacks", "launch")


def _test(args: argparse.Namespace, shown: Console) -> int:
    """Test the whole catalogue (signatures, stage tracks, pre-launch checks and advisories, line formats, wait
    kinds, launch tables), or only the files / folders named. A folder is known by its name (``stages``,
    ``checks``, ``advisories``, ``formats``, ``stacks``, ``launch``; any other holds signatures); a user's
    signatures, tracks and checks are loaded on top of the built-in ones so their references resolve."""
    home = cat.builtin_dir().resolve()
    extra = [Path(d) for d in args.signatures]
    checks_extra: list[Path] = []
    wanted: set[Path] | None = None
    own = set(_OWN)
    paths = [Path(raw) for raw in args.paths]
    if paths and all(not (p.is_dir() and p.resolve() == home) for p in paths):
        wanted, own = set(), set()
        for path in paths:
            if not path.exists():
                raise UsageError(f"{path}: no such file or directory")
            folder = (path if path.is_dir() else path.parent).resolve()
            if folder.name in _OWN:
                if folder != home / folder.name:
                    raise UsageError(f"{path}: sparktui reads {folder.name}/ only from its own catalogue ({home})")
                own.add(folder.name)
            elif folder.name in ("checks", "advisories"):
                if folder not in {d.resolve() for d in rules.builtin_dirs()}:
                    checks_extra.append(folder)
            elif folder.name == "stages":
                if folder.parent != home:
                    extra.append(folder.parent)
            elif folder != home:
                extra.append(folder)
            wanted |= _named(path)
    results = [
        *_signatures(cat.load(extra), wanted),
        *_checks(checks_extra, wanted),
        *_own(own, wanted, home),
    ]
    failed = 0
    for problems in results:
        failed += bool(problems)
        for p in problems:
            shown.print(Text(p, style="red"))
    passed = len(results) - failed
    shown.print(Text(f"{passed} passed, {failed} failed", style="green" if not failed else "red"))
    return 1 if failed else 0


def _named(path: Path) -> set[Path]:
    """The catalogue files a path names (a ``.toml`` file, or those of a folder); a path that names none is
    refused, so that a mistyped folder is not reported as a catalogue that passed."""
    if path.is_dir():
        named = {p.resolve() for p in path.glob("*.toml")}
        if not named:
            raise UsageError(f"{path}: no catalogue file (*.toml) in this folder")
        return named
    if path.suffix != ".toml":
        raise UsageError(f"{path}: not a catalogue file (*.toml)")
    return {path.resolve()}


def _signatures(found: cat.Catalogue, wanted: set[Path] | None) -> Iterator[list[str]]:
    """The problems of each signature and stage track tested."""
    items: list[cat.Signature | cat.Track] = [*found.signatures, *found.tracks]
    builtin = cat.load() if any(not cat.is_builtin(item.path) for item in items) else found
    for item in items:
        if wanted is not None and item.path.resolve() not in wanted:
            continue
        problems = check(item, found) if isinstance(item, cat.Signature) else check_track(item)
        if not cat.is_builtin(item.path) and not (isinstance(item, cat.Signature) and item.family_of):
            problems = id_problems(item, builtin) + problems
        yield problems


def _checks(extra: list[Path], wanted: set[Path] | None) -> Iterator[list[str]]:
    """The problems of each pre-launch check and advisory tested (a folder that does not load is one)."""
    try:
        checks = rules.load([*rules.builtin_dirs(), *extra])
    except cat.CatalogueError as exc:
        yield [str(exc)]
        return
    from sparktui.core.remedy.playbook import load_all  # only to test: the checks' playbooks exist

    books = set(load_all())
    for rule in checks:
        if wanted is None or rule.path.resolve() in wanted:
            yield rules.check_examples(rule, books)


def _own(parts: set[str], wanted: set[Path] | None, home: Path) -> Iterator[list[str]]:
    """The problems of each line format, wait kind and launch table tested."""

    def asked(path: Path) -> bool:
        return wanted is None or path.resolve() in wanted

    if "formats" in parts:
        if asked(home / "formats" / "prefixes.toml"):
            yield from map(check_prefix, PREFIXES)
        if asked(home / "formats" / "programs.toml"):
            yield from map(check_format, FORMATS)
    if "stacks" in parts:
        try:
            every = builtin_kinds()
        except KindError as exc:
            yield [str(exc)]
        else:
            for kind in every:
                if kind.path is None or asked(kind.path):
                    name = kind.path.name if kind.path else kind.id
                    yield [f"{name}: {p}" for p in check_kind(kind, every)]
    if "launch" in parts:
        from sparktui.core.launch import examples as launch_examples  # the translator: only when testing it

        for name in launch_examples.NAMES:
            if asked(home / "launch" / f"{name}.toml"):
                yield launch_examples.check(name)
