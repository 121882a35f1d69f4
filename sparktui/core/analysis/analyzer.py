"""The analyser: lines in, findings out.

Every source feeds blocks of complete lines; one :class:`~sparktui.core.matcher.Matcher` finds the lines
that match a signature, a context condition or a stage marker in a single pass; hits are aggregated per
signature as they come (memory stays bounded however often a line repeats), stage markers drive the
:class:`~sparktui.core.stages.StageTracker`, and :meth:`Analyzer.finish` turns both into ranked findings.
The same object serves a file read after the fact and a live stream (pass ``now`` to get "no progress for
N seconds" instead of "stopped at").
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import regex

from sparktui.core.analysis.diagnosis import Diagnosis
from sparktui.core.analysis.findings import finding_from_stall, new_finding, rank
from sparktui.core.analysis.matcher import Engine, Matcher, best_engine
from sparktui.core.analysis.stages import StageTracker
from sparktui.core.catalogue import Catalogue, Signature
from sparktui.core.classify import Classification, classify
from sparktui.core.events import Evidence, Finding, Position, SourceSummary
from sparktui.core.text import display

CONTEXT_LINES = 3
EVIDENCE_PER_NODE = 3
EVIDENCE_MAX = 8
HIT, VETO, WHEN, UNLESS, STAGE = range(5)


@dataclass(frozen=True, slots=True)
class _Rule:
    role: int
    owner: int  # signature index, or track index for STAGE
    stage: int = 0


@dataclass(slots=True)
class _Pending:
    """Evidence still waiting for the lines after it."""

    source: str
    line: int
    node: str
    text: str
    before: tuple[str, ...]
    after: list[str] = field(default_factory=list)

    def freeze(self) -> Evidence:
        return Evidence(self.source, self.line, self.node, self.text, self.before, tuple(self.after))


@dataclass(slots=True)
class _Aggregate:
    """All hits of one signature within one context scope."""

    signature: int
    scope_key: str
    first: Position
    count: int = 0
    nodes: list[str] = field(default_factory=list)
    facts: dict[str, str] = field(default_factory=dict)
    evidence: list[_Pending] = field(default_factory=list)


@dataclass(slots=True)
class _Source:
    name: str
    node: str
    lines: int = 0
    tail: deque[str] = field(default_factory=lambda: deque(maxlen=CONTEXT_LINES))
    waiting: list[_Pending] = field(default_factory=list)
    error: str | None = None


class Analyzer:
    """Matches, tracks and correlates the lines of any number of sources."""

    def __init__(self, catalogue: Catalogue, engine: Callable[[Sequence[str]], Engine] = best_engine) -> None:
        self.catalogue = catalogue
        self._signatures = catalogue.signatures
        patterns: list[str] = []
        self._rules: list[_Rule] = []

        def add(pattern: str, rule: _Rule) -> None:
            patterns.append(pattern)
            self._rules.append(rule)

        for i, sig in enumerate(self._signatures):
            for p in sig.any:
                add(p, _Rule(HIT, i))
            for p in sig.none:
                add(p, _Rule(VETO, i))
            if sig.context is not None:
                for p in sig.context.when:
                    add(p, _Rule(WHEN, i))
                for p in sig.context.unless:
                    add(p, _Rule(UNLESS, i))
        self._tracks = catalogue.tracks
        for t, track in enumerate(self._tracks):
            for s, stage in enumerate(track.stages):
                for p in stage.any:
                    add(p, _Rule(STAGE, t, s))
        self.matcher = Matcher(patterns, engine(patterns))
        self.tracker = StageTracker(self._tracks)
        self._sources: dict[str, _Source] = {}
        self._aggregates: dict[tuple[int, str], _Aggregate] = {}
        self._seen: dict[tuple[int, int], set[str]] = {}  # (role, signature) -> scope keys seen

    # -- input -----------------------------------------------------------------------------------

    def add_source(self, name: str, node: str) -> None:
        self._sources.setdefault(name, _Source(name, node))

    def node_of(self, name: str) -> str:
        return self._sources[name].node

    def set_node(self, name: str, node: str) -> None:
        """Name the node of a source's further lines (a live source that learnt it from its content)."""
        self._sources[name].node = node

    def source_failed(self, name: str, reason: str) -> None:
        """Record that a source could not be read (what was read from it stays)."""
        self._sources[name].error = reason

    def feed(self, name: str, text: str, now: float = 0.0) -> None:
        """Analyse a block of complete lines (``\\n``-separated, without the final newline)."""
        src = self._sources[name]
        base = src.lines
        lines: list[str] | None = None
        if src.waiting:
            lines = text.split("\n")
            for pending in src.waiting:
                pending.after.extend(display(s) for s in lines[: CONTEXT_LINES - len(pending.after)])
            src.waiting = [p for p in src.waiting if len(p.after) < CONTEXT_LINES]
        current = -1
        matches: list[tuple[_Rule, regex.Match[str]]] = []
        text_of_line = ""
        for lm in self.matcher.scan(text):
            if lm.index != current:
                if matches:
                    lines = self._line(src, base, current, text_of_line, matches, text, lines, now)
                current, text_of_line, matches = lm.index, lm.text, []
            matches.append((self._rules[lm.key], lm.match))
        if matches:
            lines = self._line(src, base, current, text_of_line, matches, text, lines, now)
        count = text.count("\n") + 1
        if count >= CONTEXT_LINES:
            lines = lines if lines is not None else text.rsplit("\n", CONTEXT_LINES)[-CONTEXT_LINES:]
            src.tail.extend(lines[-CONTEXT_LINES:])
        else:
            src.tail.extend(text.split("\n"))
        src.lines += count

    def _line(
        self,
        src: _Source,
        base: int,
        index: int,
        line: str,
        matches: list[tuple[_Rule, regex.Match[str]]],
        block: str,
        lines: list[str] | None,
        now: float,
    ) -> list[str] | None:
        position = Position(src.name, base + index + 1)
        cls: Classification | None = None
        vetoed = {r.owner for r, _ in matches if r.role == VETO}
        for rule, m in matches:
            if rule.role == STAGE:
                cls = cls or classify(line)
                self._stage(rule, m, cls, src, position, now)
                continue
            sig = self._signatures[rule.owner]
            if rule.role == VETO or rule.owner in vetoed:
                continue
            cls = cls or classify(line)
            if sig.programs and cls.program not in sig.programs:
                continue
            node = cls.node or src.node
            scope_key = _scope_key(sig, src.name, node, cls)
            if rule.role in (WHEN, UNLESS):
                self._seen.setdefault((rule.role, rule.owner), set()).add(scope_key)
                continue
            agg = self._aggregates.get((rule.owner, scope_key))
            if agg is None:
                agg = self._aggregates[(rule.owner, scope_key)] = _Aggregate(rule.owner, scope_key, position)
            agg.count += 1
            facts = {k: v for k, v in m.groupdict().items() if v is not None}
            for k, v in facts.items():
                agg.facts.setdefault(k, v)
            if node not in agg.nodes:
                agg.nodes.append(node)
            if len(agg.evidence) < EVIDENCE_MAX and sum(e.node == node for e in agg.evidence) < EVIDENCE_PER_NODE:
                lines = lines if lines is not None else block.split("\n")
                agg.evidence.append(self._evidence(src, position, node, index, lines))
        return lines

    def _stage(
        self, rule: _Rule, m: regex.Match[str], cls: Classification, src: _Source, position: Position, now: float
    ) -> None:
        track = self._tracks[rule.owner]
        if cls.program not in track.programs:
            return
        node = cls.node or src.node
        if track.id == "nccl":
            process = f"{node}:{cls.pid}"
        else:
            process = f"{node}:{cls.process}" if cls.rank is not None and track.per_rank else f"{node}:"
        facts = {k: v for k, v in m.groupdict().items() if v is not None}
        self.tracker.update(
            track.id,
            rule.stage,
            facts,
            node=node,
            process=process,
            rank=cls.rank,
            position=position,
            text=m.string,
            now=now,
        )

    def _evidence(self, src: _Source, position: Position, node: str, index: int, lines: list[str]) -> _Pending:
        start = index - CONTEXT_LINES
        before = list(src.tail)[start:] if start < 0 else []
        before += lines[max(start, 0) : index]
        pending = _Pending(
            src.name, position.line, node, display(lines[index]), tuple(display(b) for b in before[-CONTEXT_LINES:])
        )
        pending.after.extend(display(s) for s in lines[index + 1 : index + 1 + CONTEXT_LINES])
        if len(pending.after) < CONTEXT_LINES:
            src.waiting.append(pending)
        return pending

    # -- output ----------------------------------------------------------------------------------

    def finish(self, now: float | None = None) -> Diagnosis:
        """The diagnosis so far. ``now`` is the current time for live sources (stalls then need
        ``live_after`` seconds without progress); leave it out for logs read after the fact."""
        merged: dict[int, Finding] = {}
        for agg in self._aggregates.values():
            sig = self._signatures[agg.signature]
            if not self._context_holds(sig, agg):
                continue
            finding = merged.get(agg.signature)
            if finding is None:
                finding = merged[agg.signature] = new_finding(sig, agg.first)
            _merge(finding, agg)
        findings = list(merged.values())
        findings += [finding_from_stall(hit) for hit in self.tracker.stalls(self._signatures, now=now)]
        sources = [SourceSummary(s.name, s.node, s.lines, s.error) for s in self._sources.values()]
        order = {name: i for i, name in enumerate(self._sources)}
        return Diagnosis(sources, rank(findings, self.catalogue, order), self.tracker.summary())

    def _context_holds(self, sig: Signature, agg: _Aggregate) -> bool:
        if sig.context is None:
            return True
        if sig.context.unless and agg.scope_key in self._seen.get((UNLESS, agg.signature), set()):
            return False
        return not sig.context.when or agg.scope_key in self._seen.get((WHEN, agg.signature), set())


def _scope_key(sig: Signature, source: str, node: str, cls: Classification) -> str:
    scope = sig.context.scope if sig.context is not None else "all"
    if scope == "source":
        return source
    if scope == "node":
        return node
    if scope == "process":
        return f"{source}\x00{cls.pid or cls.process}"
    return ""


def _merge(finding: Finding, agg: _Aggregate) -> None:
    finding.count += agg.count
    for node in agg.nodes:
        if node not in finding.nodes:
            finding.nodes.append(node)
    for k, v in agg.facts.items():
        finding.facts.setdefault(k, v)
    room = EVIDENCE_MAX - len(finding.evidence)
    finding.evidence.extend(p.freeze() for p in agg.evidence[:room])
    if (agg.first.source, agg.first.line) < (finding.first_seen.source, finding.first_seen.line):
        finding.first_seen = agg.first
