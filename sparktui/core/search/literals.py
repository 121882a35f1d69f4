"""Required literals of a regular expression: strings that every match must contain.

The matcher skips a line unless it contains one of a pattern's required literals, which is what makes
matching hundreds of patterns against millions of lines affordable in Python. A pattern yields a set of
literals, one of which must occur (one per branch of a top-level alternation).
"""

from __future__ import annotations

import re
from re import _parser as sre_parse  # type: ignore[attr-defined]
from typing import Any

_LITERAL = sre_parse.LITERAL
_SUBPATTERN = sre_parse.SUBPATTERN
_BRANCH = sre_parse.BRANCH
_MAX_REPEAT = sre_parse.MAX_REPEAT
_MIN_REPEAT = sre_parse.MIN_REPEAT

#: Shorter literals select too many lines to be worth it.
MIN_LITERAL = 4


def required_literals(pattern: str) -> frozenset[str] | None:
    """Return literals of which every match of ``pattern`` contains at least one, or ``None`` when no
    useful set exists (a literal shorter than :data:`MIN_LITERAL` in some branch, a case-insensitive
    pattern, or syntax only the ``regex`` module knows)."""
    try:
        parsed = sre_parse.parse(pattern)
    except (re.error, OverflowError, RecursionError):
        return None
    if parsed.state.flags & re.IGNORECASE:
        return None
    return _sequence(list(parsed))


def _sequence(items: list[tuple[Any, Any]]) -> frozenset[str] | None:
    """Best required-literal set of a concatenation: the longest literal run, or a nested alternative."""
    best: frozenset[str] | None = None
    run: list[str] = []

    def consider(candidate: frozenset[str] | None) -> None:
        nonlocal best
        if candidate is not None and (best is None or _score(candidate) > _score(best)):
            best = candidate

    for op, arg in items:
        if op is _LITERAL:
            run.append(chr(arg))
            continue
        if len(run) >= MIN_LITERAL:
            consider(frozenset({"".join(run)}))
        if run and op in (_SUBPATTERN, _BRANCH):
            # A run followed by alternatives that each begin with a literal: "INFO (?:Channel|Ring) " needs
            # one of "INFO Channel", "INFO Ring", far rarer than "INFO " alone.
            heads = _heads(list(arg[3])) if op is _SUBPATTERN else _heads([(op, arg)])
            if heads is not None:
                consider(frozenset("".join(run) + head for head in heads))
        run = []
        if op is _SUBPATTERN:
            _group, add_flags, _del_flags, sub = arg
            if not add_flags & re.IGNORECASE:
                consider(_sequence(list(sub)))
        elif op is _BRANCH:
            consider(_branches(arg[1]))
        elif op in (_MAX_REPEAT, _MIN_REPEAT) and arg[0] >= 1:
            consider(_sequence(list(arg[2])))
    if len(run) >= MIN_LITERAL:
        consider(frozenset({"".join(run)}))
    return best


def _heads(items: list[tuple[Any, Any]]) -> frozenset[str] | None:
    """The literal each alternative of a group begins with (None where one begins with anything else)."""
    if len(items) == 1 and items[0][0] is _BRANCH:
        heads = [_head(list(branch)) for branch in items[0][1][1]]
    else:
        heads = [_head(items)]
    return frozenset(heads) if all(heads) else None


def _head(items: list[tuple[Any, Any]]) -> str:
    head = []
    for op, arg in items:
        if op is not _LITERAL:
            break
        head.append(chr(arg))
    return "".join(head)


def _branches(branches: list[Any]) -> frozenset[str] | None:
    found: set[str] = set()
    for branch in branches:
        sub = _sequence(list(branch))
        if sub is None:
            return None
        found |= sub
    return frozenset(found)


def _score(literals: frozenset[str]) -> float:
    """Prefer few, long literals: the shortest one bounds how selective the set is."""
    return min(len(s) for s in literals) - 0.1 * len(literals)
