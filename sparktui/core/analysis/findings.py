"""Findings made from what was seen: one merge for every way a signature is seen (its hits in each scope and
source, each stalled unit), and the ranking that puts the root cause first."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from sparktui.core.analysis.stages import StallHit, Unit
from sparktui.core.catalogue import Catalogue, Signature
from sparktui.core.events import Evidence, Finding, Position, Severity
from sparktui.core.text import display


@dataclass(frozen=True, slots=True)
class Part:
    """One contribution to a finding: the hits of its signature in one scope, or one stalled unit."""

    first: Position
    count: int
    nodes: Sequence[str]
    facts: Mapping[str, str]
    evidence: Sequence[Evidence]
    detail: str = ""


def merge(sig: Signature, parts: Iterable[Part], order: Mapping[str, int], evidence_max: int | None = None) -> Finding:
    """The finding of ``sig`` from all its parts, in the order given: counts added, nodes and evidence in
    order (at most ``evidence_max`` evidence lines), the first value of each fact kept, details joined, and
    first seen where it was seen first in source ``order``."""
    parts = list(parts)
    nodes = list(dict.fromkeys(n for p in parts for n in p.nodes))
    facts: dict[str, str] = {}
    for p in parts:
        for k, v in p.facts.items():
            facts.setdefault(k, v)
    evidence = [e for p in parts for e in p.evidence]
    first = min((p.first for p in parts), key=lambda at: (order.get(at.source, len(order)), at.line))
    return Finding(
        signature=sig.id,
        category=sig.category,
        severity=sig.severity,
        title=sig.title,
        explanation=sig.explanation,
        remediations=sig.playbooks,
        first_seen=first,
        nodes=tuple(nodes),
        count=sum(p.count for p in parts),
        evidence=tuple(evidence[:evidence_max] if evidence_max is not None else evidence),
        facts=facts,
        detail=" ".join(p.detail for p in parts if p.detail),
    )


def stall_part(hit: StallHit) -> Part:
    """What one stalled unit adds to its signature's finding: where it stopped, its last line, where the
    ranks that never joined were last seen and where peers got past it."""
    unit = hit.unit
    rule = hit.signature.stall
    assert rule is not None
    reached_at = unit.positions.get(rule.reached) or unit.last
    assert reached_at is not None and unit.last is not None
    evidence = [Evidence(reached_at.source, reached_at.line, unit.node, display(unit.texts.get(rule.reached, "")))]
    if unit.last != reached_at:
        evidence.append(Evidence(unit.last.source, unit.last.line, unit.node, display(unit.last_text)))
    for other in hit.last_seen:
        if other.last is not None:
            evidence.append(Evidence(other.last.source, other.last.line, other.node, display(other.last_text)))
    for peer in hit.peers_ahead[:2]:
        done = peer.positions.get(rule.not_reached)
        if done is not None:
            evidence.append(Evidence(done.source, done.line, peer.node, display(peer.texts.get(rule.not_reached, ""))))
    facts = {**unit.facts, "stopped_at": unit.facts.get("stopped_at", unit.stage_label)}
    if hit.peers_missing:
        facts.setdefault("ranks_never_started", ",".join(map(str, hit.peers_missing)))
    nodes = [unit.node, *(u.node for u in hit.peers_ahead), *(u.node for u in hit.last_seen)]
    return Part(reached_at, 1, nodes, facts, evidence, _describe(hit))


def _who(unit: Unit) -> str:
    rank = unit.facts.get("rank")
    return f"rank {rank} on {unit.node}" if rank is not None else unit.node


def _describe(hit: StallHit) -> str:
    unit = hit.unit
    rule = hit.signature.stall
    assert rule is not None
    track = unit.track
    if track.unit == "communicator":
        what = f"{track.unit} {unit.key}"
        group = unit.facts.get(track.group)
        if group:
            what += f" ({track.group_label or track.group} {group}, {unit.facts.get('nranks', '?')} ranks)"
        if unit.completed_before:
            what += f", opened after another {track.unit} of the same process had completed,"
    else:
        what = f"{track.label} start-up"
    text = (
        f"{_who(unit)}: {what} stopped at '{unit.stage_label}' and never reached "
        f"'{track.stages[track.index(rule.not_reached)].label}'."
    )
    if hit.peers_ahead:
        text += " " + ", ".join(_who(u) for u in hit.peers_ahead) + " got past it."
    if hit.peers_missing:
        ranks = ", ".join(map(str, hit.peers_missing))
        text += f" Rank{'s' if len(hit.peers_missing) > 1 else ''} {ranks} never started it"
        seen = [
            f"rank {u.facts.get('rank')} on {u.node} was last seen at {u.last.source}:{u.last.line}"
            for u in hit.last_seen
            if u.last is not None
        ]
        text += f" ({'; '.join(seen)})." if seen else "."
    return text


def rank(findings: list[Finding], catalogue: Catalogue, source_order: Mapping[str, int]) -> list[Finding]:
    """Order findings so the most likely root cause comes first.

    A finding whose signature declares ``consequence_of`` a category or signature that was also found
    ranks below it (a watchdog timeout below the hang that caused it), provided the cause is at least an
    error or at least as severe. Then: problems before context (info), more severe first, earlier first,
    wider (more nodes) first.
    """
    consequence_of = {sig.id: set(sig.consequence_of) for sig in catalogue.signatures}

    def causes(f: Finding) -> list[Finding]:
        wanted = consequence_of.get(f.signature, set())
        return [
            g
            for g in findings
            if g is not f
            and (g.category in wanted or g.signature in wanted)
            and (g.severity >= Severity.ERROR or g.severity >= f.severity)
        ]

    depth: dict[int, int] = {}

    def depth_of(f: Finding, path: frozenset[int] = frozenset()) -> int:
        if id(f) in depth:
            return depth[id(f)]
        if id(f) in path:
            return 0
        d = max((1 + depth_of(g, path | {id(f)}) for g in causes(f)), default=0)
        depth[id(f)] = d
        return d

    def key(f: Finding) -> tuple[int, int, int, int, int, int, int]:
        return (
            1 if f.severity < Severity.WARNING else 0,
            depth_of(f),
            -int(f.severity),
            source_order.get(f.first_seen.source, len(source_order)),
            f.first_seen.line,
            -len(f.nodes),
            -f.count,
        )

    return sorted(findings, key=key)
