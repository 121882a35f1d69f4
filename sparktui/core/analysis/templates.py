"""The programs' own messages as templates, and the place each is raised: what files a failure line that
names no file of its own (an exception printed with no traceback above it, SGLang's logger, a paste cut
above the frame) by where the program prints it.

A template writes each placeholder in braces (``{rank}``, ``{%d}``, ``{}``) and a literal brace doubled, as
the mined message tables do (``tools/messages/tables/``). As a regular expression its literal parts are
escaped and its placeholders become ``.+?``; placeholders at either end are dropped, since a log line carries
a prefix and often more after the message. A line matches a template when the expression is found anywhere
in it; a message of several lines is printed as several log lines, so each of its lines (with at least
:data:`MINIMUM` characters of literal text) is a pattern of its own.

``diagnostics/origins/templates.tsv`` (written by ``tools/messages/origins.py``) keeps the failure-level
templates raised under an area of ``areas.toml`` that no template of another family reads the same as:
:class:`Placed` finds the places a line's template is raised at, in one pass of the search engine.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from sparktui.core.dirs import builtin
from sparktui.core.errors import Invalid
from sparktui.core.search.engines import Engine, word_engine

#: The least literal text (characters, spaces aside) a printed line of a template needs to be told apart.
MINIMUM = 12
#: The longest word looked for first, of a printed line's literal text (the search engines build their
#: pattern of words as a tree: one node a character).
WORD = 40
_PIECE = re.compile(r"\{\{|\}\}|\{[^{}]*\}|[^{}]+|[{}]")
#: The columns of ``templates.tsv``.
COLUMNS = ("program", "where", "template")


class TemplatesError(Invalid):
    """A templates table that cannot be used; the message is one line naming the file and row."""


def pieces(template: str) -> list[str | None]:
    """The template as literal texts and placeholders (None)."""
    out: list[str | None] = []
    for m in _PIECE.finditer(template):
        tok = m.group()
        if tok in ("{{", "}}"):
            lit = tok[0]
        elif tok.startswith("{") and len(tok) > 1:
            out.append(None)
            continue
        else:
            lit = tok
        if out and isinstance(out[-1], str):
            out[-1] += lit
        else:
            out.append(lit)
    return out


def line_patterns(template: str, minimum: int = MINIMUM) -> list[str]:
    """The regular expressions (text) of a template: one per printed line with enough literal text."""
    return [pattern for pattern, _ in printed(template, minimum)]


def printed(template: str, minimum: int = MINIMUM) -> list[tuple[str, str]]:
    """Each printed line's regular expression, with the longest literal text it requires (at most
    :data:`WORD` characters of it: a word to look for first)."""
    out = []
    for part in template.split("\n"):
        parts = pieces(part)
        while parts and (parts[0] is None or not parts[0].strip()):
            parts.pop(0)
        while parts and (parts[-1] is None or not parts[-1].strip()):
            parts.pop()
        literals = [p for p in parts if p is not None]
        if sum(len(p.strip()) for p in literals) < minimum:
            continue
        pattern = "".join(re.escape(p) if p is not None else ".+?" for p in parts)
        out.append((pattern, max(literals, key=len)[:WORD]))
    return out


def unescape(cell: str) -> str:
    """A table cell's text: ``\\n``, ``\\t``, ``\\r`` and ``\\\\`` as the characters they stand for."""
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t", "r": "\r"}.get(m.group(1), m.group(1)), cell)


@dataclass(frozen=True, slots=True)
class Template:
    """A message ``program`` prints, and the file and line (``where``) of the release that raises it."""

    program: str
    where: str
    template: str


class Placed:
    """The templates of ``templates.tsv``, ready to say where a line's message is raised."""

    def __init__(self, templates: Sequence[Template]) -> None:
        self.templates = tuple(templates)
        self._compiled: dict[int, re.Pattern[str]] = {}  # a key's pattern, compiled when first proposed

    @cached_property
    def _keys(self) -> list[tuple[int, str, str]]:
        return [(i, p, w) for i, t in enumerate(self.templates) for p, w in printed(t.template)]

    @cached_property
    def _engine(self) -> Engine:
        # made on the first line asked about: most logs have no failure left for the templates to place. It
        # looks for each printed line's longest literal word, and each line it finds is confirmed by the
        # whole pattern (the pure-Python engine's tree of thousands of long patterns would recurse too deep).
        return word_engine([w for _, _, w in self._keys])

    def _pattern(self, key: int) -> re.Pattern[str]:
        found = self._compiled.get(key)
        if found is None:
            found = self._compiled[key] = re.compile(self._keys[key][1])
        return found

    def places(self, line: str) -> list[Template]:
        """The templates whose printed line ``line`` holds (one line, no newline), in the table's order."""
        line = line.replace("\n", " ")
        found: set[int] = set()
        for candidate in self._engine.scan(line):
            found.update(self._keys[k][0] for k in candidate.keys if self._pattern(k).search(line))
        return [self.templates[i] for i in sorted(found)]


def load(path: Path | None = None) -> Placed:
    """The templates of ``path`` (``diagnostics/origins/templates.tsv`` by default)."""
    path = path or builtin("diagnostics") / "origins" / "templates.tsv"
    try:
        rows = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise TemplatesError(f"{path}: cannot be read: {exc}") from None
    if not rows or tuple(rows[0].split("\t")) != COLUMNS:
        raise TemplatesError(f"{path}: the first row must name the columns {', '.join(COLUMNS)}")
    out = []
    for number, row in enumerate(rows[1:], 2):
        cells = row.split("\t")
        if len(cells) != len(COLUMNS) or not all(cells):
            raise TemplatesError(f"{path}: row {number}: {len(COLUMNS)} non-empty cells, tab-separated")
        out.append(Template(cells[0], cells[1], unescape(cells[2])))
    return Placed(out)
