"""Many regular expressions against many lines, fast.

A :class:`Matcher` holds a list of patterns and reports, for a block of complete lines, which pattern
matched which line with its match object. Finding the candidate lines is the job of an engine
(:mod:`sparktui.core.search.engines`: Hyperscan, or the pure-Python literal engine); engines only propose
lines, and the ``regex`` module confirms each one, so every engine gives the same answers.

The confirmation is where a pattern can backtrack without bound (``(a+)+$`` on a long run of ``a``). A
user's pattern is searched with a time budget on every line, a built-in one on long lines only (the timer
costs a few microseconds a search, and the tests check the built-in patterns); a pattern that runs out of it
is disabled for the rest of the run and reported once (:meth:`Matcher.overruns`), so no line can hang the
analysis.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import regex

from sparktui.core.search.engines import Candidate, Engine, best_engine

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
