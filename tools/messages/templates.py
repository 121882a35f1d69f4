"""The message tables (``tables/<program>.tsv``): loading them, a template as a regular expression, and which
programs and versions a log line's wording comes from. A template's syntax, and how it reads as a regular
expression, is :mod:`sparktui.core.analysis.templates`' (the catalogue files failures by the same templates).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from sparktui.core.analysis.templates import line_patterns, pieces, unescape
from tools.messages.releases import TABLES, programs

COLUMNS = ("level", "template", "versions", "where")
WORD = re.compile(r"\w{4,}")
#: Levels that say something went wrong: Python's warning and up, every exception, and native strings that
#: read as a failure.
QUIET = {"debug", "info", "print", "native", "message"}


def literal(template: str, filler: str = "") -> str:
    """The template's text with each placeholder replaced by ``filler``."""
    return "".join(p if p is not None else filler for p in pieces(template))


def to_regex(template: str) -> re.Pattern[str] | None:
    """The template's regular expression (its printed lines as alternatives), None where it has too little
    literal text to tell it from another."""
    lines = line_patterns(template)
    return re.compile("|".join(f"(?:{p})" for p in lines)) if lines else None


def escape_cell(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")


@dataclass(frozen=True)
class Entry:
    program: str
    level: str
    template: str
    versions: tuple[str, ...]
    where: str

    @property
    def loud(self) -> bool:
        return self.level not in QUIET

    @cached_property
    def regex(self) -> re.Pattern[str] | None:
        return to_regex(self.template)

    @cached_property
    def printed(self) -> list[tuple[re.Pattern[str], set[str]]]:
        """Each printed line's expression, with the words that a log line it matches contains whole."""
        out = []
        for part in self.template.split("\n"):
            for pattern in line_patterns(part):
                words: set[str] = set()
                for p in pieces(part):
                    # a word at an edge of a literal may run on into a placeholder's text or the line's prefix
                    if p is not None:
                        words.update(m.group() for m in WORD.finditer(p) if m.start() > 0 and m.end() < len(p))
                out.append((re.compile(pattern), words))
        return out


def expand(text: str, order: list[str]) -> tuple[str, ...]:
    """The versions a ``versions`` cell names (``a..b`` is every release from a to b in releases.toml)."""
    out: list[str] = []
    for part in text.split(","):
        if ".." in part:
            first, last = part.split("..")
            out.extend(order[order.index(first) : order.index(last) + 1])
        elif part:
            out.append(part)
    return tuple(out)


def compress(versions: Iterable[str], order: list[str]) -> str:
    """The inverse of :func:`expand`: consecutive releases as ``a..b``."""
    idx = sorted({order.index(v) for v in versions})
    runs: list[list[int]] = []
    for i in idx:
        if runs and runs[-1][-1] == i - 1:
            runs[-1].append(i)
        else:
            runs.append([i])
    return ",".join(order[r[0]] if len(r) == 1 else f"{order[r[0]]}..{order[r[-1]]}" for r in runs)


def load(program: str, folder: Path = TABLES) -> list[Entry]:
    order = programs()[program].labels()
    path = folder / f"{program}.tsv"
    entries = []
    with path.open(encoding="utf-8") as fh:
        header = fh.readline().rstrip("\n").split("\t")
        if tuple(header) != COLUMNS:
            raise ValueError(f"{path}: columns {header} (expected {COLUMNS})")
        for row in fh:
            level, tmpl, versions, where = row.rstrip("\n").split("\t")
            entries.append(Entry(program, level, unescape(tmpl), expand(versions, order), where))
    return entries


@dataclass
class Tables:
    """Every program's table, indexed for asking which templates a line matches."""

    entries: list[Entry]
    by_word: dict[str, list[tuple[Entry, re.Pattern[str]]]] = field(default_factory=dict)
    unindexed: list[tuple[Entry, re.Pattern[str]]] = field(default_factory=list)

    def __post_init__(self) -> None:
        counts: dict[str, int] = {}
        for e in self.entries:
            for _, words in e.printed:
                for w in words:
                    counts[w] = counts.get(w, 0) + 1
        for e in self.entries:
            for pattern, words in e.printed:
                if words:
                    rarest = min(sorted(words), key=lambda w: counts[w])
                    self.by_word.setdefault(rarest, []).append((e, pattern))
                else:
                    self.unindexed.append((e, pattern))

    @classmethod
    def read(cls, names: Iterable[str] | None = None, folder: Path = TABLES) -> Tables:
        chosen = list(names) if names is not None else sorted(programs())
        return cls([e for p in chosen if (folder / f"{p}.tsv").exists() for e in load(p, folder)])

    def spans(self, line: str) -> list[tuple[Entry, int, int]]:
        """The templates found in ``line``, each once, with where in the line (its first printed line's match)."""
        seen = set(WORD.findall(line))
        candidates = [c for w in seen for c in self.by_word.get(w, ())]
        found: dict[int, tuple[Entry, int, int]] = {}
        for e, pattern in [*candidates, *self.unindexed]:
            if id(e) in found:
                continue
            m = pattern.search(line)
            if m:
                found[id(e)] = (e, m.start(), m.end())
        return list(found.values())

    def matches(self, line: str) -> list[Entry]:
        """The templates found in ``line`` (each once)."""
        return [e for e, _, _ in self.spans(line)]

    def provenance(self, line: str) -> dict[str, tuple[str, ...]]:
        """Program -> the versions whose tables hold a template ``line`` matches."""
        out: dict[str, set[str]] = {}
        for e in self.matches(line):
            out.setdefault(e.program, set()).update(e.versions)
        order = {p: prog.labels() for p, prog in programs().items()}
        return {p: tuple(sorted(vs, key=order[p].index)) for p, vs in sorted(out.items())}
