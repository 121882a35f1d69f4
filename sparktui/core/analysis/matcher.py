"""Many regular expressions against many lines, fast.

A :class:`Matcher` holds a list of patterns and reports, for a block of complete lines, which pattern
matched which line with its match object. Finding the candidate lines is the job of an
:class:`Engine`: :class:`HyperscanEngine` runs all patterns at once in C where the ``hyperscan``
package is installed; :class:`LiteralEngine` needs nothing but the standard library and skips every
line that contains none of the patterns' required literals. Both only propose lines; the ``regex``
module confirms each one, so the two engines give the same answers.
"""

from __future__ import annotations

import hashlib
import os
import re
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import regex

from sparktui.core.analysis.literals import required_literals
from sparktui.core.dirs import cache_dir


@dataclass(frozen=True, slots=True)
class Candidate:
    """A line of a block that may match the patterns ``keys`` (indexes into the pattern list)."""

    index: int  # 0-based line index within the block
    text: str
    keys: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class LineMatches:
    """A line of a block and every pattern that matched it: (key, match) in the order of the keys."""

    index: int
    text: str
    matches: list[tuple[int, regex.Match[str]]]


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
        self._db = _compile(hyperscan, patterns, list(range(len(patterns))), flags)
        rejected: set[int] = set()
        if self._db is None and patterns:
            # Some pattern uses syntax Hyperscan rejects: find which, and leave those to the literal engine.
            rejected = {k for k, p in enumerate(patterns) if _compile(hyperscan, [p], [0], flags) is None}
            accepted = [k for k in range(len(patterns)) if k not in rejected]
            self._db = _compile(hyperscan, [patterns[k] for k in accepted], accepted, flags) if accepted else None
        self._fallback = (
            LiteralEngine([p if k in rejected else None for k, p in enumerate(patterns)]) if rejected else None
        )

    def scan(self, text: str) -> Iterator[Candidate]:
        found: dict[int, set[int]] = {}
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
                else:
                    keys.add(key)

            self._db.scan(data, match_event_handler=on_match)
        if self._fallback is not None:
            for candidate in self._fallback.scan(text):
                found.setdefault(candidate.index, set()).update(candidate.keys)
        if not found:
            return
        lines = text.split("\n")
        for index in sorted(found):
            if index < len(lines):
                yield Candidate(index, lines[index], tuple(sorted(found[index])))


def _compile(hyperscan: Any, patterns: Sequence[str], ids: list[int], flags: int) -> Any:
    """A block-mode database of ``patterns`` (with ``ids``), or None when Hyperscan rejects one of them.

    Compiling the whole catalogue takes about a second, so databases are kept in the user's cache folder,
    keyed by everything that went into them."""
    key = hashlib.sha256(repr((hyperscan.__version__, flags, ids, list(patterns))).encode()).hexdigest()[:32]
    cached = cache_dir() / f"hs-{key}.db"
    try:
        db = hyperscan.loadb(cached.read_bytes(), hyperscan.HS_MODE_BLOCK)
        db.scratch = hyperscan.Scratch(db)
        return db
    except (OSError, hyperscan.error):
        pass
    db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    try:
        db.compile(expressions=[p.encode() for p in patterns], ids=ids, elements=len(ids), flags=[flags] * len(ids))
    except hyperscan.error:
        return None
    try:
        cached.parent.mkdir(parents=True, exist_ok=True)
        tmp = cached.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_bytes(hyperscan.dumpb(db))
        tmp.replace(cached)
    except OSError:
        pass  # a read-only home only costs the compile next time
    return db


def best_engine(patterns: Sequence[str]) -> Engine:
    """Hyperscan where it is installed, else the literal engine."""
    try:
        return HyperscanEngine(patterns)
    except ImportError:
        return LiteralEngine(patterns)


class Matcher:
    """Confirms an engine's candidates with the ``regex`` module and yields every (line, pattern) match."""

    def __init__(self, patterns: Sequence[str], engine: Engine | None = None) -> None:
        self.patterns = tuple(patterns)
        self._compiled = tuple(regex.compile(p) for p in self.patterns)
        self.engine = engine if engine is not None else best_engine(self.patterns)

    def scan(self, text: str) -> Iterator[LineMatches]:
        """Each line of ``text`` that some pattern matches, in order, once."""
        compiled = self._compiled
        for candidate in self.engine.scan(text):
            line = candidate.text
            matches = [(key, m) for key in candidate.keys if (m := compiled[key].search(line)) is not None]
            if matches:
                yield LineMatches(candidate.index, line, matches)
