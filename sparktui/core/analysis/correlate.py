"""The central half of the analysis: what every source's scan found, merged and judged in one place.

A :class:`Correlation` takes :class:`~sparktui.core.analysis.scan.Scanned` results in any order of sources
(each source's own in the order it handed them over), from scans in this process or elsewhere. It merges the
hits of each signature and scope, decides the context conditions (``when`` / ``unless``) once a scope has
been seen whole, drives the :class:`~sparktui.core.analysis.stages.StageTracker` with every stage marker,
and, when asked, turns all of it into a ranked :class:`~sparktui.core.analysis.diagnosis.Diagnosis`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from sparktui.core.analysis.advisories import VersionsSeen, attach
from sparktui.core.analysis.clocks import clocks
from sparktui.core.analysis.diagnosis import Diagnosis, Pending
from sparktui.core.analysis.differ import Differences
from sparktui.core.analysis.explain import explain_away, order, tell
from sparktui.core.analysis.findings import STALL_EVIDENCE_MAX, Part, merge, metric_part, moment, stall_parts
from sparktui.core.analysis.progress import grids
from sparktui.core.analysis.scan import EVIDENCE_MAX, Disabled, Hits, LateContext, Role, Scanned
from sparktui.core.analysis.serving import ServingWatch
from sparktui.core.analysis.stages import Outage, StageTracker, StallHit
from sparktui.core.catalogue import Catalogue, Signature
from sparktui.core.events import Evidence, Position, SourceSummary

#: The notes kept per source (a file rotated every minute while a follow was cut would make many).
NOTES_MAX = 20


@dataclass(slots=True)
class _Source:
    name: str
    node: str
    lines: int = 0
    error: str | None = None
    last_time: float | None = None
    hosts: tuple[str, ...] = ()
    notes: list[str] = field(default_factory=list)


@dataclass(slots=True)
class _Merged:
    """Every hit of one signature in one scope, from every source."""

    first: Position
    count: int = 0
    nodes: list[str] = field(default_factory=list)
    facts: dict[str, str] = field(default_factory=dict)
    evidence: list[Evidence] = field(default_factory=list)
    folded: int = 0
    filed: str = ""
    strong: bool = False  # a hit not only the end of its source speaks for (see Hits.weak)


class Correlation:
    """Merges scans and judges them; pure. ``changed`` tells whether anything arrived since the last
    :meth:`diagnosis`."""

    def __init__(self, catalogue: Catalogue) -> None:
        self.catalogue = catalogue
        self._signatures = {sig.id: sig for sig in catalogue.signatures}
        self.tracker = StageTracker(catalogue.tracks)
        self.versions = VersionsSeen()
        self.differences = Differences(catalogue.signatures)
        self.serving = ServingWatch(catalogue.signatures)
        self._sources: dict[str, _Source] = {}
        self._merged: dict[tuple[str, str], _Merged] = {}
        self._evidence_at: dict[tuple[str, int], list[tuple[_Merged, int]]] = {}
        self._seen: set[tuple[Role, str, str]] = set()
        self._disabled: dict[str, Disabled] = {}  # by the pattern's file and key: each worker may report it
        self.changed = False

    def add_source(self, name: str, node: str) -> None:
        self._sources.setdefault(name, _Source(name, node))

    def set_node(self, name: str, node: str) -> None:
        self._sources[name].node = node

    def node_of(self, name: str) -> str:
        return self._sources[name].node

    def source_failed(self, name: str, reason: str) -> None:
        """Record that a source could not be read (or read to its end); what was read from it stays."""
        self.add_source(name, "")
        self._sources[name].error = reason
        self.changed = True

    def source_noted(self, name: str, note: str) -> None:
        """Keep what happened to a source that its reader must know (the first :data:`NOTES_MAX`, then a
        count)."""
        self.add_source(name, "")
        notes = self._sources[name].notes
        if len(notes) < NOTES_MAX:
            notes.append(note)
        elif len(notes) == NOTES_MAX:
            notes.append("further notes left out")
        self.changed = True

    def add(self, scanned: Scanned) -> None:
        """Merge one hand-over of one source's scan."""
        self.add_source(scanned.source, scanned.node)
        self._sources[scanned.source].lines = scanned.lines
        self._sources[scanned.source].hosts = scanned.hosts
        if scanned.last_time is not None:
            self._sources[scanned.source].last_time = scanned.last_time
        for hits in scanned.hits:
            self._merge(hits)
        self._seen.update(scanned.seen)
        for event in scanned.stages:
            self.tracker.update(event)
            self.versions.add(event.node, event.facts)
            self.differences.add(event)
        for context in scanned.context:
            self._after(context)
        for disabled in scanned.disabled:
            self._disabled.setdefault(disabled.where, disabled)
        for reading in scanned.readings:
            self.serving.add(reading)
        self.changed = self.changed or bool(
            scanned.hits or scanned.seen or scanned.stages or scanned.context or scanned.disabled or scanned.readings
        )

    def _merge(self, hits: Hits) -> None:
        merged = self._merged.get((hits.signature, hits.scope))
        if merged is None:
            merged = self._merged[(hits.signature, hits.scope)] = _Merged(hits.first)
        merged.count += hits.count
        merged.folded += hits.folded
        merged.filed = merged.filed or hits.filed
        merged.strong = merged.strong or not hits.weak
        merged.nodes.extend(n for n in hits.nodes if n not in merged.nodes)
        for k, v in hits.facts.items():
            merged.facts.setdefault(k, v)
        for e in hits.evidence[: EVIDENCE_MAX - len(merged.evidence)]:
            self._evidence_at.setdefault((e.source, e.line), []).append((merged, len(merged.evidence)))
            merged.evidence.append(e)

    def _after(self, context: LateContext) -> None:
        for merged, index in self._evidence_at.get((context.source, context.line), ()):
            merged.evidence[index] = replace(merged.evidence[index], after=context.after)

    def diagnosis(self, now: float | None = None, down: Mapping[str, Sequence[Outage]] | None = None) -> Diagnosis:
        """The diagnosis so far. ``now`` is the current time for live sources (a stall then needs its
        stage's ``stuck_after`` seconds without progress, not counting the sources' outages in ``down``:
        see :meth:`StageTracker.stalls`); leave it out for logs read after the fact."""
        self.changed = False
        order_of = {name: i for i, name in enumerate(self._sources)}
        parts: dict[str, list[Part]] = {}
        for (sig_id, scope), m in self._merged.items():
            sig = self._signatures.get(sig_id)
            if sig is not None and self._context_holds(sig, scope):
                parts.setdefault(sig_id, []).append(
                    Part(
                        m.first,
                        m.count,
                        m.nodes,
                        m.facts,
                        m.evidence,
                        weak=not m.strong,
                        folded=m.folded,
                        filed=m.filed,
                    )
                )
        findings = [merge(self._signatures[s], found, order_of, EVIDENCE_MAX) for s, found in parts.items()]
        stalled: dict[str, list[StallHit]] = {}
        pending: list[Pending] = []
        log_end = {s.name: s.last_time for s in self._sources.values() if s.last_time is not None}
        log_lines = {s.name: s.lines for s in self._sources.values()}
        sigs = self.catalogue.signatures
        for hit in self.tracker.stalls(sigs, now=now, log_end=log_end, log_lines=log_lines, down=down):
            if hit.pending is None:
                stalled.setdefault(hit.signature.id, []).append(hit)
            else:
                pending.append(_pending(hit, hit.pending))
        findings += [
            merge(self._signatures[s], stall_parts(hits), order_of, STALL_EVIDENCE_MAX) for s, hits in stalled.items()
        ]
        metric: dict[str, list[Part]] = {}
        for still in self.serving.hits():
            metric.setdefault(still.signature.id, []).append(metric_part(still))
        findings += [merge(self._signatures[s], found, order_of) for s, found in metric.items()]
        for sig in self.differences.signatures:
            differing = self.differences.parts(sig)
            if differing:
                findings.append(merge(sig, differing, order_of, EVIDENCE_MAX))
        sources = tuple(
            SourceSummary(s.name, s.node, s.lines, s.error, s.hosts, tuple(s.notes)) for s in self._sources.values()
        )
        said = [(e.node, t) for f in findings for e in f.evidence if (t := moment(e)) is not None]
        said += [(s.node, s.last_time) for s in self._sources.values() if s.last_time is not None]
        clock = clocks(said)
        findings = explain_away(findings, self._signatures, clock)
        ranked = tell(order(findings, self.catalogue, order_of, clock), self.tracker.nodes(), clock)
        ranked = attach(ranked, self.versions.seen, self.catalogue.advisories)
        warnings = (*self.catalogue.refused, *(d.text for d in self._disabled.values()), *clock.warnings())
        pending.sort(key=lambda p: -p.waited)
        stages = _with_pending(self.tracker.summary(), pending)
        return Diagnosis(
            sources, tuple(ranked), stages, grids(self.tracker), warnings, tuple(pending), self.serving.health()
        )

    def _context_holds(self, sig: Signature, scope: str) -> bool:
        if sig.context is None:
            return True
        if sig.context.unless and (Role.UNLESS, sig.id, scope) in self._seen:
            return False
        return not sig.context.when or (Role.WHEN, sig.id, scope) in self._seen


def _pending(hit: StallHit, waited: float) -> Pending:
    unit = hit.unit
    return Pending(
        hit.signature.id, hit.signature.title, unit.track.id, unit.node, unit.who, unit.stage_label, waited, hit.window
    )


def _with_pending(stages: dict[str, dict[str, str]], pending: list[Pending]) -> dict[str, dict[str, str]]:
    """Each node's stage phrase with the stall pending there longest, so the stage strip says it too."""
    told: set[tuple[str, str]] = set()
    for p in pending:  # the longest wait first
        phrase = stages.get(p.node, {}).get(p.track)
        if phrase is not None and (p.node, p.track) not in told:
            told.add((p.node, p.track))
            stages[p.node][p.track] = f"{phrase}; {p.short}"
    return stages
