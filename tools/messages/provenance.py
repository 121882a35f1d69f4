"""Where a signature's wording comes from: the releases whose message tables hold a template that one of the
signature's example lines matches (what ``checked`` records), and the real captures that hold the line."""

from __future__ import annotations

from collections.abc import Iterable
from functools import cache
from pathlib import Path

from sparktui.core.catalogue import Signature
from tools.messages.releases import programs
from tools.messages.templates import Tables

ROOT = Path(__file__).resolve().parents[2]
#: Real captures: what the programs printed on a machine, kept as test fixtures.
CAPTURES = (ROOT / "tests" / "fixtures", ROOT / "diagnostics" / "examples")


def example_lines(sig: Signature) -> list[str]:
    """The signature's example lines that must fire: its match lines, then the lines of its firing logs."""
    lines = [ex.text for ex in sig.match_examples]
    for ex in sig.log_examples:
        if ex.fires:
            lines.extend(line for line in ex.text.splitlines() if line.strip())
    return lines


def checked(sig: Signature, tables: Tables) -> list[str]:
    """``"<program> <version>"`` of every release whose table holds a template matched by one of the
    signature's match examples (the lines that fire; log examples are context), in releases.toml's order."""
    found: dict[str, set[str]] = {}
    for line in (ex.text for ex in sig.match_examples):
        if not sig_hits(sig, line):
            continue
        for program, versions in tables.provenance(line).items():
            found.setdefault(program, set()).update(versions)
    order = programs()
    return [f"{p} {v}" for p in order if p in found for v in order[p].labels() if v in found[p]]


def sig_hits(sig: Signature, line: str) -> bool:
    """Whether the line is one the signature itself matches (a log example's other lines are not its own)."""
    import regex

    return any(regex.search(p, line) for p in sig.any) and not any(regex.search(p, line) for p in sig.none)


@cache
def captures(folders: tuple[Path, ...] = CAPTURES) -> str:
    """Every real capture's text, one string (a line occurs verbatim when it is a substring of it)."""
    parts = []
    for folder in folders:
        if not folder.is_dir():
            continue
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                try:
                    parts.append(path.read_text(encoding="utf-8", errors="replace"))
                except OSError:
                    continue
    return "\n".join(parts)


def proven(sig: Signature, tables: Tables, lines: Iterable[str] | None = None) -> list[str]:
    """How the signature's wording is known to be real: ``"<program> <version>"`` for table matches, then
    ``"capture"`` where an example line occurs verbatim in a real capture. Empty: not proven."""
    out: list[str] = []
    text = captures()
    for line in example_lines(sig) if lines is None else lines:
        for program, versions in tables.provenance(line).items():
            out.extend(f"{program} {v}" for v in versions)
        if line.strip() and line.strip() in text:
            out.append("capture")
    return sorted(set(out))
