"""Many regular expressions against many lines, fast.

A :class:`Matcher` holds a list of patterns and reports, for a block of complete lines, which pattern
matched which line with its match object. Finding the candidate lines is the job of an
:class:`Engine`: :class:`HyperscanEngine` runs all patterns at once in C where the ``hyperscan``
package is installed; :class:`LiteralEngine` needs nothing but the standard library and skips every
line that contains none of the patterns' required literals. Both only propose lines; the ``regex``
module confirms each one, so the two engines give the same answers.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import regex

from sparktui.core.literals import required_literals


@dataclass(frozen=True, slots=True)
class Candidate:
    """A line of a block that may match the patterns ``keys`` (indexes into the pattern list)."""

    index: int  # 0-based line index within the block
    text: str
    keys: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class LineMatch:
    index: int
    text: str
    key: int
    match: regex.Match[str]


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

        self._hs = hyperscan
        flags = hyperscan.HS_FLAG_PREFILTER | hyperscan.HS_FLAG_UTF8 | hyperscan.HS_FLAG_MULTILINE
        accepted: list[int] = []
        rejected: list[int] = []
        for key, pattern in enumerate(patterns):
            (accepted if _hyperscan_accepts(hyperscan, pattern, flags) else rejected).append(key)
        self._fallback = (
            LiteralEngine([p if k in rejected else None for k, p in enumerate(patterns)]) if rejected else None
        )
        self._db = None
        if accepted:
            self._db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
            self._db.compile(
                expressions=[patterns[k].encode() for k in accepted],
                ids=accepted,
                elements=len(accepted),
                flags=[flags] * len(accepted),
            )

    def scan(self, text: str) -> Iterator[Candidate]:
        found: dict[int, set[int]] = {}
        data = text.encode("utf-8", errors="surrogatepass")
        if self._db is not None and data:
            ends: list[tuple[int, int]] = []

            def on_match(key: int, _start: int, end: int, _flags: int, _ctx: object) -> None:
                ends.append((end, key))

            self._db.scan(data, match_event_handler=on_match)
            ends.sort()
            line_index = 0
            counted_to = 0
            for end, key in ends:
                # A match ending right after a newline belongs to the line before it.
                at = end - 1 if end > 0 and data[end - 1] == 0x0A else end
                line_index += data.count(b"\n", counted_to, at)
                counted_to = at
                found.setdefault(line_index, set()).add(key)
        if self._fallback is not None:
            for candidate in self._fallback.scan(text):
                found.setdefault(candidate.index, set()).update(candidate.keys)
        if not found:
            return
        lines = text.split("\n")
        for index in sorted(found):
            if index < len(lines):
                yield Candidate(index, lines[index], tuple(sorted(found[index])))


def _hyperscan_accepts(hyperscan: object, pattern: str, flags: int) -> bool:
    db = hyperscan.Database()  # type: ignore[attr-defined]
    try:
        db.compile(expressions=[pattern.encode()], ids=[0], elements=1, flags=[flags])
    except Exception:  # hyperscan.error; the package raises its own type
        return False
    return True


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

    def scan(self, text: str) -> Iterator[LineMatch]:
        for candidate in self.engine.scan(text):
            for key in candidate.keys:
                m = self._compiled[key].search(candidate.text)
                if m is not None:
                    yield LineMatch(candidate.index, candidate.text, key, m)
