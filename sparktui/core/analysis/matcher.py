"""Many regular expressions against many lines, fast.

A :class:`Matcher` holds a list of patterns and reports, for a block of complete lines, which pattern
matched which line with its match object. Finding the candidate lines is the job of an
:class:`Engine`: :class:`HyperscanEngine` runs all patterns at once in C where the ``hyperscan``
package is installed; :class:`LiteralEngine` needs nothing but the standard library and skips every
line that contains none of the patterns' required literals. Both only propose lines; the ``regex``
module confirms each one, so the two engines give the same answers. ``SPARKTUI_ENGINE=pure`` picks the
literal engine where Hyperscan is installed too (what a machine without it does, for comparison).

The confirmation is where a pattern can backtrack without bound (``(a+)+$`` on a long run of ``a``). A
user's pattern is searched with a time budget on every line, a built-in one on long lines only (the timer
costs a few microseconds a search, and the tests check the built-in patterns); a pattern that runs out of it
is disabled for the rest of the run and reported once (:meth:`Matcher.overruns`), so no line can hang the
analysis.
"""

from __future__ import annotations

import hashlib
import importlib
import os
import re
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import regex

from sparktui.core.analysis.literals import required_literals
from sparktui.core.dirs import cache_dir

#: ``SPARKTUI_ENGINE=pure``: the pure-Python engine even where Hyperscan is installed.
ENGINE_VARIABLE = "SPARKTUI_ENGINE"
#: What one pattern may spend on one line, in seconds of CPU time (what the ``regex`` module's timeout
#: counts, so a busy machine does not make a pattern run out): a floor, plus time in proportion to the line.
#: A pattern that reads a line once stays far below it (the slowest built-in one takes about 0.5 µs a
#: character); one that backtracks exponentially or polynomially runs through it at once.
BUDGET_FLOOR = 0.25
BUDGET_PER_CHAR = 2e-6
#: From this length on, a line is searched with the budget by every pattern, trusted or not: a pattern whose
#: time grows faster than its line (``.*a.*b.*c``) hurts only on long lines.
LONG_LINE = 256


def budget(line: str) -> float:
    """Seconds one pattern may take to search ``line``."""
    return BUDGET_FLOOR + BUDGET_PER_CHAR * len(line)


class Candidate(NamedTuple):
    """A line of a block that may match the patterns ``keys`` (indexes into the pattern list). This and
    :class:`LineMatches` are named tuples: one is made per candidate line, and a tuple is quick to make."""

    row: int  # 0-based line index within the block
    text: str
    keys: tuple[int, ...]


class LineMatches(NamedTuple):
    """A line of a block and every pattern that matched it: (key, match) in the order of the keys."""

    row: int
    text: str
    matches: list[tuple[int, regex.Match[str]]]


@dataclass(frozen=True, slots=True)
class Overrun:
    """A pattern that ran out of its time budget on a line of a block; it matches nothing from then on."""

    key: int
    index: int  # the line's 0-based index within the block
    seconds: float  # the budget it ran out of


class Engine(ABC):
    """Proposes the lines of a text block that may match some pattern.

    ``scan`` takes a block of complete lines separated by ``\\n`` and yields each line that may match, in
    order, once, with the keys of every pattern that may match it. It may propose too much, never too
    little; it never raises for any text.
    """

    @abstractmethod
    def scan(self, text: str) -> Iterator[Candidate]: ...


class LiteralEngine(Engine):
    """Finds required literals with one alternation; patterns without literals are tried on every line."""

    def __init__(self, patterns: Sequence[str | None]) -> None:
        """``patterns[key]`` is ``None`` for a key this engine is not responsible for."""
        self._by_literal: dict[str, list[int]] = {}
        self._always: tuple[int, ...] = tuple(
            key for key, pattern in enumerate(patterns) if pattern is not None and not self._index(key, pattern)
        )
        literals = sorted(self._by_literal, key=len, reverse=True)
        self._prefilter = re.compile("|".join(map(re.escape, literals))) if literals else None
        self._literals = tuple((lit, tuple(self._by_literal[lit])) for lit in literals)

    def _index(self, key: int, pattern: str) -> bool:
        literals = required_literals(pattern)
        if not literals:
            return False
        for literal in literals:
            self._by_literal.setdefault(literal, []).append(key)
        return True

    def scan(self, text: str) -> Iterator[Candidate]:
        if self._always:
            yield from self._scan_every_line(text)
            return
        if self._prefilter is None:
            return
        line_index = 0
        counted_to = 0
        line_end = -1
        for m in self._prefilter.finditer(text):
            pos = m.start()
            if pos <= line_end:
                continue
            line_start = text.rfind("\n", 0, pos) + 1
            line_end = text.find("\n", pos)
            if line_end < 0:
                line_end = len(text)
            line_index += text.count("\n", counted_to, line_start)
            counted_to = line_start
            line = text[line_start:line_end]
            keys = self._keys(line)
            if keys:
                yield Candidate(line_index, line, keys)

    def _keys(self, line: str) -> tuple[int, ...]:
        found: list[int] = []
        for literal, keys in self._literals:
            if literal in line:
                found.extend(keys)
        found.extend(self._always)
        return tuple(sorted(set(found)))

    def _scan_every_line(self, text: str) -> Iterator[Candidate]:
        for index, line in enumerate(text.split("\n")):
            yield Candidate(index, line, self._keys(line))


class HyperscanEngine(Engine):
    """All patterns compiled into one Hyperscan database (prefilter mode), scanned once per block."""

    def __init__(self, patterns: Sequence[str]) -> None:
        import hyperscan

        flags = hyperscan.HS_FLAG_PREFILTER | hyperscan.HS_FLAG_UTF8 | hyperscan.HS_FLAG_MULTILINE
        self._db, rejected = _database(hyperscan, patterns, flags)
        # A pattern in syntax Hyperscan rejects is proposed by the literal engine instead (alone: the others
        # stay in the database), and confirmed like every other.
        self._fallback = (
            LiteralEngine([p if k in rejected else None for k, p in enumerate(patterns)]) if rejected else None
        )

    def scan(self, text: str) -> Iterator[Candidate]:
        found: dict[int, set[int]] = {}
        within: dict[int, int] = {}  # a candidate line's index -> the byte offset of a match's end in it
        data = text.encode("utf-8", errors="surrogatepass")
        if self._db is not None and data:
            # The line of each match is counted as the matches come: Hyperscan reports them in order of
            # their end, so each count covers only the bytes since the previous match.
            line = [0, 0]  # the line index, and the offset it was counted to

            def on_match(key: int, _start: int, end: int, _flags: int, _ctx: object) -> None:
                # A match ending right after a newline belongs to the line before it.
                at = end - 1 if end > 0 and data[end - 1] == 0x0A else end
                if at >= line[1]:
                    line[0] += data.count(b"\n", line[1], at)
                else:  # not in order after all: count from the start
                    line[0] = data.count(b"\n", 0, at)
                line[1] = at
                keys = found.get(line[0])
                if keys is None:
                    found[line[0]] = {key}
                    within[line[0]] = at
                else:
                    keys.add(key)

            self._db.scan(data, match_event_handler=on_match)
        if self._fallback is None and len(data) == len(text):
            # ASCII, so a byte offset is a character's: each candidate line is cut out around its match,
            # and the block is not split into all its lines (most of which no pattern is interested in).
            for index in sorted(found):
                at = within[index]
                end = text.find("\n", at)
                yield Candidate(
                    index,
                    text[text.rfind("\n", 0, at) + 1 : end if end >= 0 else len(text)],
                    tuple(sorted(found[index])),
                )
            return
        if self._fallback is not None:
            for candidate in self._fallback.scan(text):
                found.setdefault(candidate.row, set()).update(candidate.keys)
        if not found:
            return
        lines = text.split("\n")
        for index in sorted(found):
            if index < len(lines):
                yield Candidate(index, lines[index], tuple(sorted(found[index])))


#: Changes when the layout of a cached database file changes (so an older file is never read as a newer one).
_CACHE_FORMAT = 2


def _database(hyperscan: Any, patterns: Sequence[str], flags: int) -> tuple[Any, frozenset[int]]:
    """A block-mode database of every pattern Hyperscan accepts (ids: their keys), or None when it accepts
    none, and the keys of the patterns it rejects.

    Compiling the whole catalogue takes about a third of a second; when Hyperscan rejects a pattern, finding
    which one compiles each alone (about 1.5 ms a pattern), then the others again. Both the database and the
    verdict are kept in the user's cache folder, in one file keyed by everything that went into them, so only
    the first run with a new set of patterns pays for either."""
    if not patterns:
        return None, frozenset()
    key = repr((_CACHE_FORMAT, hyperscan.__version__, flags, list(patterns)))
    cached = cache_dir() / f"hs-{hashlib.sha256(key.encode()).hexdigest()[:32]}.db"
    try:
        return _load(hyperscan, cached.read_bytes())
    except (OSError, ValueError, hyperscan.error):
        pass
    rejected: frozenset[int] = frozenset()
    db = _compile(hyperscan, patterns, list(range(len(patterns))), flags)
    if db is None:
        rejected = frozenset(k for k, p in enumerate(patterns) if _compile(hyperscan, [p], [k], flags) is None)
        accepted = [k for k in range(len(patterns)) if k not in rejected]
        db = _compile(hyperscan, [patterns[k] for k in accepted], accepted, flags) if accepted else None
    try:
        cached.parent.mkdir(parents=True, exist_ok=True)
        tmp = cached.with_suffix(f".{os.getpid()}.tmp")
        body = hyperscan.dumpb(db) if db is not None else b""
        tmp.write_bytes(" ".join(map(str, sorted(rejected))).encode() + b"\n" + body)
        tmp.replace(cached)
    except OSError:
        pass  # a read-only home only costs the compile next time
    return db, rejected


def _load(hyperscan: Any, data: bytes) -> tuple[Any, frozenset[int]]:
    """A cached file: the rejected keys on its first line, then the database (nothing where there is none)."""
    head, newline, body = data.partition(b"\n")
    if not newline:
        raise ValueError("not a database file")
    rejected = frozenset(int(k) for k in head.split())
    if not body:
        return None, rejected
    db = hyperscan.loadb(body, hyperscan.HS_MODE_BLOCK)
    db.scratch = hyperscan.Scratch(db)
    return db, rejected


def _compile(hyperscan: Any, patterns: Sequence[str], ids: list[int], flags: int) -> Any:
    """A block-mode database of ``patterns`` (with ``ids``), or None when Hyperscan rejects one of them."""
    db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    try:
        db.compile(expressions=[p.encode() for p in patterns], ids=ids, elements=len(ids), flags=[flags] * len(ids))
    except hyperscan.error:
        return None
    return db


def best_engine(patterns: Sequence[str]) -> Engine:
    """Hyperscan where it is installed (unless ``SPARKTUI_ENGINE=pure``), else the literal engine."""
    if os.environ.get(ENGINE_VARIABLE) == "pure":
        return LiteralEngine(patterns)
    try:
        return HyperscanEngine(patterns)
    except ImportError:
        return LiteralEngine(patterns)


def engine_name() -> str:
    """The engine :func:`best_engine` picks here, in words (``sparktui --version`` prints it)."""
    if os.environ.get(ENGINE_VARIABLE) == "pure":
        return f"pure Python ({ENGINE_VARIABLE}=pure)"
    try:
        hyperscan: Any = importlib.import_module("hyperscan")
    except ImportError:
        return "pure Python (install sparktui[fast] for Hyperscan)"
    return f"hyperscan {hyperscan.__version__}"


class _Disabled:
    """Stands for a pattern that ran out of its budget: it matches nothing, at no cost."""

    def search(self, line: str, timeout: float | None = None) -> None:
        return None


class Matcher:
    """Confirms an engine's candidates with the ``regex`` module and yields every (line, pattern) match.

    The patterns of ``untrusted`` keys (the user's) are searched with the time :func:`budget` on every line,
    the others on lines of :data:`LONG_LINE` characters or more."""

    def __init__(self, patterns: Sequence[str], engine: Engine | None = None, *, untrusted: Iterable[int] = ()) -> None:
        self.patterns = tuple(patterns)
        self._compiled: list[Any] = [regex.compile(p) for p in self.patterns]
        self.engine = engine if engine is not None else best_engine(self.patterns)
        self.untrusted = frozenset(untrusted)
        self._overruns: list[Overrun] = []

    def scan(self, text: str) -> Iterator[LineMatches]:
        """Each line of ``text`` that some pattern matches, in order, once."""
        compiled, untrusted = self._compiled, self.untrusted
        for candidate in self.engine.scan(text):
            line = candidate.text
            if len(line) >= LONG_LINE or (untrusted and not untrusted.isdisjoint(candidate.keys)):
                matches = self._within_budget(candidate)
            else:
                matches = [(key, m) for key in candidate.keys if (m := compiled[key].search(line)) is not None]
            if matches:
                yield LineMatches(candidate.row, line, matches)

    def _within_budget(self, candidate: Candidate) -> list[tuple[int, regex.Match[str]]]:
        line, compiled = candidate.text, self._compiled
        seconds = budget(line)
        matches = []
        for key in candidate.keys:
            try:
                m = compiled[key].search(line, timeout=seconds)
            except TimeoutError:
                compiled[key] = _Disabled()
                self._overruns.append(Overrun(key, candidate.row, seconds))
                continue
            if m is not None:
                matches.append((key, m))
        return matches

    def overruns(self) -> list[Overrun]:
        """The patterns disabled since the previous call, each once, with the line that took too long."""
        found, self._overruns = self._overruns, []
        return found
