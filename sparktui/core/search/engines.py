"""Finding, in one pass over a block of lines, the lines that may hold one of many patterns or words.

An :class:`Engine` proposes the lines of a block that may match, with the keys of the patterns each may match:
:class:`HyperscanEngine` runs every pattern at once in C where the ``hyperscan`` package is installed;
:class:`LiteralEngine` needs nothing but the standard library and looks, with one pattern written as a tree of
their common starts, for the literals every match must hold (:mod:`~sparktui.core.search.literals`), or for
given words. ``SPARKTUI_ENGINE=pure`` picks the literal engine where Hyperscan is installed too (what a machine
without it does, for comparison). The catalogue's matcher confirms each proposal with the ``regex`` module;
the redaction looks for its rules' trigger words.
"""

from __future__ import annotations

import hashlib
import importlib
import os
import re
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, NamedTuple

from sparktui.core.dirs import cache_dir
from sparktui.core.search.literals import required_literals

#: ``SPARKTUI_ENGINE=pure``: the pure-Python engine even where Hyperscan is installed.
ENGINE_VARIABLE = "SPARKTUI_ENGINE"


class Candidate(NamedTuple):
    """A line of a block that may match the patterns ``keys`` (indexes into the pattern list). This and
    :class:`LineMatches` are named tuples: one is made per candidate line, and a tuple is quick to make."""

    row: int  # 0-based line index within the block
    text: str
    keys: tuple[int, ...]


class Engine(ABC):
    """Proposes the lines of a text block that may match some pattern.

    ``scan`` takes a block of complete lines separated by ``\\n`` and yields each line that may match, in
    order, once, with the keys of every pattern that may match it. It may propose too much, never too
    little; it never raises for any text.
    """

    @abstractmethod
    def scan(self, text: str) -> Iterator[Candidate]: ...


class LiteralEngine(Engine):
    """Finds literals with one pattern, written as a tree of their common starts (``g(?:l|h[po]_)``), so each
    place in the text is tried against the few literals that begin with its character, not against all of
    them: each pattern's required literals, or given words. Patterns without literals are tried on every line."""

    def __init__(self, patterns: Sequence[str | None]) -> None:
        """``patterns[key]`` is ``None`` for a key this engine is not responsible for."""
        by_literal: dict[str, list[int]] = {}
        always: list[int] = []
        for key, pattern in enumerate(patterns):
            literals = required_literals(pattern) if pattern is not None else frozenset()
            if pattern is not None and not literals:
                always.append(key)
            for literal in literals or ():
                by_literal.setdefault(literal, []).append(key)
        self._prepare(by_literal, always)

    @classmethod
    def of_words(cls, words: Sequence[str]) -> LiteralEngine:
        """The engine that finds ``words`` (key: a word's index), each as it is, however short."""
        engine = cls.__new__(cls)
        by_word: dict[str, list[int]] = {}
        for key, word in enumerate(words):
            by_word.setdefault(word, []).append(key)
        engine._prepare(by_word, ())
        return engine

    def _prepare(self, by_literal: Mapping[str, Sequence[int]], always: Iterable[int]) -> None:
        self._always = tuple(always)
        literals = sorted(by_literal, key=len, reverse=True)
        self._prefilter = re.compile(_tree(literals)) if literals else None
        self._literals = tuple((lit, tuple(by_literal[lit])) for lit in literals)

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


def _tree(literals: Iterable[str]) -> str:
    """One pattern of ``literals``, each as it is, written as a tree of their common starts."""
    tree: dict[str, dict[str, Any]] = {}
    for literal in literals:
        node = tree
        for char in literal:
            node = node.setdefault(char, {})
        node[""] = {}  # a literal ends here
    return _branch(tree)


def _branch(node: dict[str, dict[str, Any]]) -> str:
    alternatives = [re.escape(char) + _branch(rest) for char, rest in sorted(node.items()) if char]
    if not alternatives:
        return ""
    body = alternatives[0] if len(alternatives) == 1 else f"(?:{'|'.join(alternatives)})"
    return f"(?:{body})?" if "" in node else body


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
    if _hyperscan_wanted():
        try:
            return HyperscanEngine(patterns)
        except ImportError:
            pass
    return LiteralEngine(patterns)


def word_engine(words: Sequence[str]) -> Engine:
    """The engine that finds ``words`` (key: a word's index), each as it is, however short: Hyperscan where
    :func:`best_engine` would pick it, else :meth:`LiteralEngine.of_words`."""
    if _hyperscan_wanted():
        try:
            return HyperscanEngine([re.escape(word) for word in words])
        except ImportError:
            pass
    return LiteralEngine.of_words(words)


def _hyperscan_wanted() -> bool:
    return os.environ.get(ENGINE_VARIABLE) != "pure"


def engine_name() -> str:
    """The engine :func:`best_engine` picks here, in words (``sparktui --version`` prints it)."""
    if os.environ.get(ENGINE_VARIABLE) == "pure":
        return f"pure Python ({ENGINE_VARIABLE}=pure)"
    try:
        hyperscan: Any = importlib.import_module("hyperscan")
    except ImportError:
        return "pure Python (install sparktui[fast] for Hyperscan)"
    return f"hyperscan {hyperscan.__version__}"
