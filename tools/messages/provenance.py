"""Where a signature's wording comes from: the releases whose message tables hold a template that one of the
signature's example lines matches (what ``checked`` records), and the real captures that hold the line."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import regex

from sparktui.core.analysis.scan import family_words
from sparktui.core.catalogue import Family, Signature
from sparktui.core.search.literals import required_literals
from tools.messages.releases import programs
from tools.messages.templates import Tables

ROOT = Path(__file__).resolve().parents[2]
#: Real captures: what the programs printed on a machine, kept as test fixtures.
CAPTURES = (ROOT / "tests" / "fixtures", ROOT / "diagnostics" / "examples")


#: The least of a signature's required literal (or, where its pattern has none, of its match) that a
#: template's match must cover.
OVERLAP = 12
#: The C library's words for an errno (strerror), which every program prints after its own words: a template
#: that holds one of them (nvcc's ``{}: no such file or directory``) says nothing of whose message a line is.
ERRNO_TEXT = regex.compile(
    r"[\s:,.]*(?:no such file or directory|permission denied|connection refused|connection reset by peer|"
    r"address already in use|cannot assign requested address|read-only file system|too many open files|"
    r"operation not permitted|no space left on device|network is unreachable|no route to host|"
    r"connection timed out|broken pipe|file exists|is a directory|not a directory|exec format error)[\s:,.]*",
    regex.IGNORECASE,
)


def example_lines(sig: Signature) -> list[str]:
    """The signature's example lines that must fire: its match lines, then the lines of its firing logs that
    its patterns hit (a log's other lines are context, not its wording)."""
    lines = [ex.text for ex in sig.match_examples]
    for ex in sig.log_examples:
        if ex.fires:
            lines.extend(line for line in ex.text.splitlines() if line.strip() and hit(sig, line))
    return lines


def hit(sig: Signature, line: str) -> tuple[int, int, frozenset[str] | None] | None:
    """Where the signature's first matching pattern matches the line, and that pattern's required literals."""
    if any(regex.search(p, line) for p in sig.none):
        return None
    for p in sig.any:
        m = regex.search(p, line)
        if m:
            return m.start(), m.end(), required_literals(p)
    return None


def line_provenance(sig: Signature, line: str, tables: Tables) -> dict[str, set[str]]:
    """Program -> versions of the templates that give the line the wording the signature matches in it: a
    template's match must hold the text the signature's pattern cannot match without (a required literal),
    so that a template of some other part of the line (``{}: No such file or directory`` after a
    ``nvidia-container-cli: ...`` message) proves nothing; nor does a literal that is only an errno's words."""
    where = hit(sig, line)
    if where is None:
        return {}
    start, end, literals = where
    anchors = [
        (i, i + len(lit))
        for lit in sorted(literals or ())
        if not ERRNO_TEXT.fullmatch(lit)
        for i in _occurrences(line, lit)
        if start <= i and i + len(lit) <= end
    ]
    if not anchors:
        anchors = [(start, end)]
    spans = tables.spans(line)
    out: dict[str, set[str]] = {}
    for i, j in anchors:
        need = _needed(j - i) if literals else OVERLAP
        pieces: dict[str, list[tuple[int, int, frozenset[str]]]] = {}
        for entry, a, b in spans:
            if min(b, j) - max(a, i) >= need:
                out.setdefault(entry.program, set()).update(entry.versions)
            elif min(b, j) - max(a, i) >= OVERLAP:
                pieces.setdefault(entry.program, []).append((max(a, i), min(b, j), frozenset(entry.versions)))
        # C++ streams a message in pieces ("... has been marked dead because the detector" << " has missed
        # too many heartbeats ..."): pieces of one program that together cover the literal prove it, for
        # the releases that have every one of them
        for program, found in pieces.items():
            covered = set().union(*(range(x, y) for x, y, _ in found))
            if len(covered) >= need:
                out.setdefault(program, set()).update(frozenset.intersection(*(v for _, _, v in found)))
    return out


def _needed(length: int) -> int:
    """How much of a required literal of this length a template must cover: 60 %, at least OVERLAP
    characters, and never more than the literal less its two edge characters."""
    return min(length - 2, max(OVERLAP, -(-length * 3 // 5)))


def _occurrences(text: str, sub: str) -> list[int]:
    out, i = [], text.find(sub)
    while i >= 0:
        out.append(i)
        i = text.find(sub, i + 1)
    return out


def checked(sig: Signature, tables: Tables) -> list[str]:
    """``"<program> <version>"`` of every release whose table holds a template that gives one of the
    signature's match examples its wording, in releases.toml's order."""
    found: dict[str, set[str]] = {}
    for ex in sig.match_examples:
        for program, versions in line_provenance(sig, ex.text, tables).items():
            found.setdefault(program, set()).update(versions)
    order = programs()
    return [f"{p} {v}" for p in order if p in found for v in order[p].labels() if v in found[p]]


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


def proven(sig: Signature, tables: Tables) -> list[str]:
    """How the signature's wording is known to be real: ``"<program> <version>"`` for table matches, and
    ``"capture"`` where an example line occurs verbatim in a real capture. Empty: not proven."""
    out: set[str] = set()
    text = captures()
    for line in example_lines(sig):
        for program, versions in line_provenance(sig, line, tables).items():
            out.update(f"{program} {v}" for v in versions)
        if line.strip() in text:
            out.add("capture")
    return sorted(out)


def family_example_proven(family: Family, line: str, tables: Tables) -> list[str]:
    """How a family example's wording is known to be real: the programs whose templates give the line its
    message (the family's word, or at least twice :data:`OVERLAP` characters of it), and ``"capture"`` where
    the line occurs in a real capture. Empty: not proven."""
    out: set[str] = set()
    if line.strip() in captures():
        out.add("capture")
    spots = [m.span() for w in family_words(family.words) if (m := w.search(line))]
    for entry, a, b in tables.spans(line):
        if b - a >= 2 * OVERLAP or any(a <= i and j <= b for i, j in spots):
            out.add(entry.program)
    return sorted(out)
