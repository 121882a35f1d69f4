"""Findings made from what was seen: one merge for every way a signature is seen (its hits in each scope and
source, each stalled unit, a metric that stood still). Which of them explain others away and how they are
ranked is :mod:`~sparktui.core.analysis.explain`'s."""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from sparktui.core.analysis.serving import MetricHit
from sparktui.core.analysis.stages import WENT_QUIET, StallHit, Unit, who
from sparktui.core.catalogue import Signature
from sparktui.core.classify import classify
from sparktui.core.events import Evidence, Finding, Position, Severity
from sparktui.core.text import display
from sparktui.core.words import ranges

#: Nodes whose peers got past a stalled unit that a finding shows a line of.
PEERS_SHOWN = 6
#: Stalled units of one peer group whose lines a finding shows (where each stopped, its last line), and the
#: ranks last seen elsewhere: past them, the units are counted and named, not quoted.
UNITS_SHOWN = 8
#: Evidence lines of a stall finding, over all its peer groups.
STALL_EVIDENCE_MAX = 32
#: Peer groups a stall finding describes in its detail; the others are counted.
GROUPS_DESCRIBED = 3


@dataclass(frozen=True, slots=True)
class Part:
    """One contribution to a finding: the hits of its signature in one scope, or one stalled unit."""

    first: Position
    count: int
    nodes: Sequence[str]
    facts: Mapping[str, str]
    evidence: Sequence[Evidence]
    detail: str = ""
    weak: bool = False  # only the end of the log speaks for it: the finding is at most a warning
    cut: bool = False  # peers got further, in logs that end about where it stopped: the finding is info
    folded: int = 0  # lines Ray's de-duplication folded into its hits
    filed: str = ""  # a fallback's: how its hits were filed, by origin or words (see scan.Scan._filed)


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
    severity = sig.severity if not all(p.weak for p in parts) else min(sig.severity, Severity.WARNING)
    if all(p.cut for p in parts):
        severity = Severity.INFO
    times = [t for e in evidence if (t := moment(e)) is not None]
    details = [p.detail for p in parts if p.detail]
    folded = sum(p.folded for p in parts)
    if folded:
        details.append(
            f"Ray's log de-duplication was on: {folded} identical line{'s' if folded > 1 else ''} of other"
            " workers were folded into these (`[repeated Nx across cluster]`), so the nodes and ranks above"
            " may be fewer than those that printed it; RAY_DEDUP_LOGS=0 shows every line."
        )
    return Finding(
        signature=sig.id,
        category=sig.category,
        severity=severity,
        title=sig.title,
        explanation=sig.explanation,
        remediations=sig.playbooks,
        first_seen=first,
        nodes=tuple(nodes),
        count=sum(p.count for p in parts),
        evidence=tuple(evidence[:evidence_max] if evidence_max is not None else evidence),
        facts=facts,
        detail=" ".join(details),
        time=min(times, default=None),
        waits_for_peers=sig.waits_for_peers,
        lost_peer=sig.lost_peer,
        filed=next((p.filed for p in sorted(parts, key=lambda p: p.first is not first) if p.filed), ""),
    )


def metric_part(hit: MetricHit) -> Part:
    """What a metric signature's run adds to its finding: the first reading and the latest as evidence, the
    gauge and the counter as facts, and how long the counter stood still."""
    rule = hit.signature.metric
    assert rule is not None
    since, last, lasted, busy, still = hit.since, hit.last, hit.lasted, rule.busy, rule.still
    gauge, counter = getattr(last.reading, busy), getattr(last.reading, still)
    detail = (
        f"{last.endpoint} on {last.node}: {gauge:g} request{'s' if gauge != 1 else ''} {busy} and"
        f" {still.replace('_', ' ')} unchanged at {counter:g} for {lasted:.0f} s"
        f" (readings at lines {since.position.line} to {last.position.line} of {last.position.source})"
    )
    evidence = [Evidence(since.position.source, since.position.line, since.node, display(since.text))]
    if last.position != since.position:
        evidence.append(Evidence(last.position.source, last.position.line, last.node, display(last.text)))
    facts = {
        "endpoint": last.endpoint,
        "model": last.reading.model,
        busy: f"{gauge:g}",
        still: f"{counter:g}",
        "still_s": f"{lasted:.0f}",
    }
    return Part(since.position, 1, [last.node] if last.node else [], facts, evidence, detail)


def moment(evidence: Evidence) -> float | None:
    """When an evidence line was written: its own time, or failing that the nearest time among the lines
    right after it (a failure line often has none, the process's last words do) or before it."""
    for text in (evidence.text, *evidence.after, *reversed(evidence.before)):
        time = _written(text)
        if time is not None:
            return time
    return None


@functools.lru_cache(maxsize=16384)
def _written(text: str) -> float | None:
    """The time a line says it was written. Remembered: a live session makes its diagnosis ten times a
    second from evidence lines that mostly did not change."""
    return classify(text).time


def stall_parts(hits: Iterable[StallHit]) -> list[Part]:
    """What the stalled units of one signature add to its finding, one part per peer group: where each
    stopped, its last line, where the ranks that never joined were last seen and where peers got past it. A
    part that only the end of the log speaks for is ``weak``."""
    groups: dict[str, list[StallHit]] = {}
    for hit in hits:
        groups.setdefault(hit.unit.group, []).append(hit)
    parts = [_group_part(found) for found in groups.values()]
    if len(parts) <= GROUPS_DESCRIBED:
        return parts
    more = len(parts) - GROUPS_DESCRIBED
    last = parts[GROUPS_DESCRIBED - 1]
    note = f"The same in {more} more peer group{'s' if more > 1 else ''}, on the nodes named above."
    told = [*parts[: GROUPS_DESCRIBED - 1], replace(last, detail=f"{last.detail} {note}")]
    return told + [replace(p, detail="") for p in parts[GROUPS_DESCRIBED:]]


def _group_part(hits: list[StallHit]) -> Part:
    rule = hits[0].signature.stall
    assert rule is not None
    evidence: list[Evidence] = []
    facts: dict[str, str] = {}
    nodes: list[str] = []
    ahead: dict[int, Unit] = {}
    seen: dict[int, Unit] = {}
    quiet: dict[int, Unit] = {}
    for told_of, hit in enumerate(hits):
        unit = hit.unit
        # The line where it reached the rule's stage, or its first line where that stage is only implied.
        stage = rule.reached if rule.reached in unit.firsts else next(iter(unit.firsts), "")
        reached_at = unit.reached_at(stage) or unit.last
        assert reached_at is not None and unit.last is not None
        if told_of < UNITS_SHOWN:
            evidence.append(Evidence(reached_at.source, reached_at.line, unit.node, display(unit.text_at(stage))))
            if unit.last != reached_at:
                evidence.append(Evidence(unit.last.source, unit.last.line, unit.node, display(unit.last_text)))
        for k, v in {**unit.facts, "stopped_at": unit.stage_label}.items():
            facts.setdefault(k, v)
        if hit.peers_missing:
            facts.setdefault("ranks_never_started", ",".join(map(str, hit.peers_missing)))
        nodes.append(unit.node)
    for told in _distinct(h.peers_ahead for h in hits):  # the hits of a group share these: once each
        ahead.update((id(u), u) for u in told)
    for told in _distinct(h.last_seen for h in hits):
        seen.update((id(u), u) for u in told)
    for told in _distinct(h.quiet for h in hits):
        quiet.update((id(u), u) for u in told)
    if quiet:
        ranks = sorted({int(r) for u in quiet.values() if (r := u.facts.get("rank", "")).isdigit()})
        if ranks:
            facts.setdefault("ranks_never_began", ",".join(map(str, ranks)))
    # Where the ranks that never joined were last seen, and where the quiet peers' logs end: each once.
    for other in list({**seen, **quiet}.values())[:UNITS_SHOWN]:
        if other.last is not None:
            evidence.append(Evidence(other.last.source, other.last.line, other.node, display(other.last_text)))
    shown: set[str] = set()
    for peer in ahead.values():  # the line where a peer got past it, one per node
        done = peer.reached_at(rule.not_reached)
        if done is not None and peer.node not in shown and len(shown) < PEERS_SHOWN:
            shown.add(peer.node)
            evidence.append(Evidence(done.source, done.line, peer.node, display(peer.text_at(rule.not_reached))))
    nodes += [u.node for u in ahead.values()] + [u.node for u in seen.values()] + [u.node for u in quiet.values()]
    first = min((e for e in evidence), key=lambda e: (e.source, e.line))
    weak = not any(h.corroboration for h in hits)
    cut = all(h.cut for h in hits)
    detail = _describe(hits, weak, cut)
    return Part(Position(first.source, first.line), len(hits), nodes, facts, evidence, detail, weak=weak, cut=cut)


def _distinct(tuples: Iterable[tuple[Unit, ...]]) -> list[tuple[Unit, ...]]:
    """Each tuple once (by identity): the stalled units of one peer group carry the same ones."""
    return list({id(t): t for t in tuples}.values())


def _describe(hits: list[StallHit], weak: bool, cut: bool) -> str:
    """One sentence per peer group: who stopped where, who got further, who never began it."""
    unit = hits[0].unit
    rule = hits[0].signature.stall
    assert rule is not None
    track = unit.track
    if track.unit == "communicator":
        what = f"{track.unit} {unit.key}" if len(hits) == 1 and unit.key else f"a {track.unit}"
        named = group_label(unit)
        if named:
            what += f" ({named}, {unit.facts.get('nranks', '?')} ranks)"
        if unit.completed_before:
            what += f", opened after another {track.unit} of the same process had completed"
    else:
        what = f"{track.label} start-up"
    by_stage: dict[str, list[Unit]] = {}
    for hit in hits:
        by_stage.setdefault(hit.unit.stage_label, []).append(hit.unit)
    stopped = "; ".join(f"{_stalled_who(units)} stopped at '{stage}'" for stage, units in by_stage.items())
    never = track.stages[track.index(rule.not_reached)].label
    text = f"{_capital(what)}: {stopped}, and never reached '{never}'."
    ahead = list({id(u): u for told in _distinct(h.peers_ahead for h in hits) for u in told}.values())
    if ahead:
        text += f" {_capital(who(ahead))} reached it."
    quiet = list({id(u): u for told in _distinct(h.quiet for h in hits) for u in told}.values())
    missing = sorted({r for h in hits for r in h.peers_missing})
    if missing:
        text += f" Rank{'s' if len(missing) > 1 else ''} {ranges(missing)} never started it"
        where = [
            f"{u.who} was last seen at {u.last.source}:{u.last.line}"
            for u in {id(u): u for told in _distinct(h.last_seen for h in hits) for u in told}.values()
            if u.last is not None and u not in quiet
        ]
        text += f" ({'; '.join(where)})." if where else "."
    if quiet:
        text += " " + _went_quiet(quiet, any(h.corroboration == WENT_QUIET for h in hits))
    told = {"peers got further", WENT_QUIET}
    reasons = sorted({h.corroboration for h in hits if h.corroboration and h.corroboration not in told})
    if reasons:
        text += f" Stuck: {'; '.join(reasons)}."
    if any(h.folded for h in hits):
        text += (
            " Ray's log de-duplication folded some of these lines of other workers into one"
            " (`[repeated Nx across cluster]`), so a rank may look behind only because its line was folded."
        )
    if cut:
        text += (
            " But the peers' lines end about where its own do (by their clocks, or by the lines after its last"
            " one): a window of interleaved start-up lines cut there reads the same, so it is not taken for a hang."
        )
    elif weak:
        text += (
            " Nothing else in the logs says it was stuck: it hangs there if the job was still running when the"
            " log was taken, or the log was only cut there."
        )
    return text


def _stalled_who(units: list[Unit]) -> str:
    """Stalled units named as :func:`who` names them; a communicator that stopped before any line gave its
    rank is named by the rank its process had in the communicator it completed before."""
    named = who(units)
    if any("rank" in u.facts for u in units):
        return named
    before = [u.previous for u in units if u.previous is not None and u.previous.facts.get("rank", "").isdigit()]
    if not before or len(before) < len(units):
        return named
    ranks = sorted({int(u.facts["rank"]) for u in before})
    groups = {u.group for u in before}
    where = group_label(before[0]) if len(groups) == 1 else ""
    return f"{named} ({'rank' if len(ranks) == 1 else 'ranks'} {ranges(ranks)} of {where or 'the communicator before'})"


def _went_quiet(quiet: list[Unit], corroborates: bool) -> str:
    """The sentence on the peers that completed the communicator before and never began this one, and, where
    that is what says it was stuck, what would tell a hang from a log cut at that moment."""
    one = len(quiet) == 1
    label = group_label(quiet[0]) if len({u.group for u in quiet}) == 1 else ""
    ends = "; ".join(f"{u.last.source}:{u.last.line}" for u in quiet[:UNITS_SHOWN] if u.last is not None)
    text = (
        f"{_capital(who(quiet))} completed the communicator before it{f' ({label})' if label else ''} and"
        f" then began no other communicator: {'its last NCCL progress line is' if one else 'their last NCCL'}"
        f"{'' if one else ' progress lines are'} {ends or 'shown above'}."
    )
    if corroborates:
        them = "it" if one else "them"
        text += (
            f" Only logs cut just before {who(quiet)} began it would read the same: whether"
            f" {'its process was' if one else 'their processes were'} still running when the logs were taken"
            f" (a py-spy dump of {them} shows where {'it waits' if one else 'they wait'}), or a later line from"
            f" {them}, tells the hang from a cut log."
        )
    return text


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]


def group_label(unit: Unit) -> str:
    """How a communicator's peer group is named in a sentence: its commId, or the split of its parent's."""
    track = unit.track
    label = track.group_label or track.group
    group = unit.group
    if group.startswith("#"):
        return ""
    head, _, split = group.partition(">")
    name = f"{label} {head.partition(':')[2]}"
    return f"split {split} of {name}" if split else name
