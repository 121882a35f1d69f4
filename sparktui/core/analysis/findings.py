"""Turning stalls into findings, and ranking findings so the root cause comes first."""

from __future__ import annotations

from collections.abc import Mapping

from sparktui.core.analysis.stages import StallHit, Unit
from sparktui.core.catalogue import Catalogue, Signature
from sparktui.core.events import Evidence, Finding, Position, Severity
from sparktui.core.text import display


def finding_from_stall(hit: StallHit, existing: Finding | None = None) -> Finding:
    """A finding for one stalled unit, or the unit added to the finding of the same signature."""
    sig, unit = hit.signature, hit.unit
    rule = sig.stall
    assert rule is not None
    reached_at = unit.positions.get(rule.reached) or unit.last
    assert reached_at is not None and unit.last is not None
    finding = existing or new_finding(sig, reached_at)
    finding.count += 1
    if unit.node not in finding.nodes:
        finding.nodes.append(unit.node)
    for peer in hit.peers_ahead:
        if peer.node not in finding.nodes:
            finding.nodes.append(peer.node)
    finding.evidence.append(
        Evidence(reached_at.source, reached_at.line, unit.node, display(unit.texts.get(rule.reached, "")))
    )
    if unit.last != reached_at:
        finding.evidence.append(Evidence(unit.last.source, unit.last.line, unit.node, display(unit.last_text)))
    for other in hit.last_seen:
        if other.node not in finding.nodes:
            finding.nodes.append(other.node)
        if other.last is not None:
            finding.evidence.append(Evidence(other.last.source, other.last.line, other.node, display(other.last_text)))
    for peer in hit.peers_ahead[:2]:
        done = peer.positions.get(rule.not_reached)
        if done is not None:
            finding.evidence.append(
                Evidence(done.source, done.line, peer.node, display(peer.texts.get(rule.not_reached, "")))
            )
    for k, v in unit.facts.items():
        finding.facts.setdefault(k, v)
    finding.facts.setdefault("stopped_at", unit.stage_label)
    if hit.peers_missing:
        finding.facts.setdefault("ranks_never_started", ",".join(map(str, hit.peers_missing)))
    sentence = _describe(hit)
    finding.detail = f"{finding.detail} {sentence}".strip()
    return finding


def new_finding(sig: Signature, first: Position) -> Finding:
    """An empty finding of ``sig``, first seen at ``first``; hits and stalls are added to it."""
    return Finding(
        signature=sig.id,
        category=sig.category,
        severity=sig.severity,
        title=sig.title,
        explanation=sig.explanation,
        remediations=sig.playbooks,
        first_seen=first,
    )


def _who(unit: Unit) -> str:
    rank = unit.facts.get("rank")
    return f"rank {rank} on {unit.node}" if rank is not None else unit.node


def _describe(hit: StallHit) -> str:
    unit = hit.unit
    rule = hit.signature.stall
    assert rule is not None
    track = unit.track
    if track.id == "nccl":
        what = f"communicator {unit.key}"
        if unit.facts.get("commid"):
            what += f" (commId {unit.facts['commid']}, {unit.facts.get('nranks', '?')} ranks)"
        if unit.completed_before:
            what += ", opened after another communicator of the same process had completed,"
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
    stall_merged: dict[str, Finding] = {}
    for f in findings:
        if f.signature in stall_merged:
            _absorb(stall_merged[f.signature], f)
        else:
            stall_merged[f.signature] = f
    findings = list(stall_merged.values())
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


def _absorb(into: Finding, other: Finding) -> None:
    into.count += other.count
    into.nodes.extend(n for n in other.nodes if n not in into.nodes)
    into.evidence.extend(other.evidence)
    into.detail = f"{into.detail} {other.detail}".strip()
    for k, v in other.facts.items():
        into.facts.setdefault(k, v)
