"""How far start-up got, per node, rank and NCCL communicator; and the stalls that follow from it.

The tracker is fed stage markers (lines matched by a track's stage patterns, see
``diagnostics/stages/``) and keeps one :class:`Unit` per thing that progresses on its own: an NCCL
communicator of one process, or one rank of an engine on one node. A stall signature then asks a
declarative question of the units ("reached ``init_start``, never reached ``init_complete``, after the
same process had completed another communicator") without any code of its own.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from sparktui.core.catalogue import Signature, Track
from sparktui.core.events import Position


@dataclass(slots=True)
class Unit:
    """One thing that progresses through a track's stages."""

    track: Track
    node: str
    key: str  # communicator pointer, rank tag or "" for the node as a whole
    process: str  # node:pid for NCCL, node:rank-tag otherwise
    rank: int | None = None
    reached: int = -1
    positions: dict[str, Position] = field(default_factory=dict)
    texts: dict[str, str] = field(default_factory=dict)  # the line (raw) that first reached each stage
    last: Position | None = None
    last_text: str = ""
    last_progress_at: float = 0.0
    facts: dict[str, str] = field(default_factory=dict)
    completed_before: bool = False  # NCCL: the process had completed another communicator first

    @property
    def stage(self) -> str:
        return self.track.stages[self.reached].id if self.reached >= 0 else ""

    @property
    def stage_label(self) -> str:
        return self.track.stages[self.reached].label if self.reached >= 0 else "not started"

    @property
    def peer_group(self) -> str:
        """Units that must progress together: one communicator across ranks, or a whole engine."""
        commid = self.facts.get("commid")
        return f"commid:{commid}" if commid else f"{self.track.id}"


@dataclass(frozen=True, slots=True)
class StallHit:
    """A unit that fits a stall signature, with the peers that did or did not get further."""

    signature: Signature
    unit: Unit
    peers_ahead: tuple[Unit, ...]
    peers_missing: tuple[int, ...]  # ranks of the peer group that never printed the unit at all
    last_seen: tuple[Unit, ...] = ()  # for each missing rank found elsewhere: its most recent unit


class StageTracker:
    """Keeps the units of every track; pure, fed in line order per source."""

    def __init__(self, tracks: Iterable[Track]) -> None:
        self.tracks = {t.id: t for t in tracks}
        self.units: list[Unit] = []
        self._by_key: dict[tuple[str, str, str], Unit] = {}
        self._latest: dict[tuple[str, str], Unit] = {}  # (track, process) -> most recently opened unit
        self.process_facts: dict[tuple[str, str], dict[str, str]] = {}  # (track, node) -> facts

    def update(
        self,
        track_id: str,
        stage_index: int,
        facts: dict[str, str],
        *,
        node: str,
        process: str,
        rank: int | None,
        position: Position,
        text: str,
        now: float,
    ) -> None:
        track = self.tracks[track_id]
        stage = track.stages[stage_index]
        if stage.process_level:
            self.process_facts.setdefault((track_id, node), {}).update(facts)
            return
        unit = self._unit_for(track, stage_index, facts, node, process, rank)
        if unit is None:
            return
        unit.facts.update({k: v for k, v in facts.items() if v})
        if stage.id not in unit.positions:
            unit.positions[stage.id] = position
            unit.texts[stage.id] = text
        unit.last, unit.last_text = position, text
        if stage_index > unit.reached:
            unit.reached = stage_index
            unit.last_progress_at = now

    def _unit_for(
        self, track: Track, stage_index: int, facts: dict[str, str], node: str, process: str, rank: int | None
    ) -> Unit | None:
        stage = track.stages[stage_index]
        comm = facts.get("comm", "")
        if track.id == "nccl":
            key = (track.id, process, comm)
            if stage.id == "init_start" and comm:
                completed = any(
                    u.process == process and u.stage == "init_complete" for u in self.units if u.track is track
                )
                unit = Unit(track, node, comm, process, rank, completed_before=completed)
                self._add(key, unit)
                return unit
            if comm and key in self._by_key:
                return self._by_key[key]
            return self._latest.get((track.id, process))
        key = (track.id, node, process)
        known = self._by_key.get(key)
        if known is not None:
            return known
        if not stage.opens:
            # A marker that is not the program's own text only advances what was already seen.
            return next((u for u in reversed(self.units) if u.track is track and u.node == node), None)
        unit = Unit(track, node, process, process, rank)
        self._add(key, unit)
        return unit

    def _add(self, key: tuple[str, str, str], unit: Unit) -> None:
        self.units.append(unit)
        self._by_key[key] = unit
        self._latest[(unit.track.id, unit.process)] = unit

    def stalls(self, signatures: Iterable[Signature], *, now: float | None = None) -> Iterator[StallHit]:
        """Units that fit each stall signature. With ``now`` (a live source) a unit must also have made no
        progress for the signature's ``live_after`` seconds; without it (a finished log) "stopped at"
        is enough. Each unit is claimed by the first signature it fits, most severe first."""
        claimed: set[int] = set()
        ordered = sorted((s for s in signatures if s.stall is not None), key=lambda s: -s.severity)
        for sig in ordered:
            rule = sig.stall
            assert rule is not None
            track = self.tracks.get(rule.track)
            if track is None:
                continue
            lo, hi = track.index(rule.reached), track.index(rule.not_reached)
            for unit in self.units:
                if unit.track is not track or id(unit) in claimed or not lo <= unit.reached < hi:
                    continue
                if rule.after_completed is not None and unit.completed_before != rule.after_completed:
                    continue
                if now is not None and now - unit.last_progress_at < rule.live_after:
                    continue
                peers = [
                    u for u in self.units if u is not unit and u.track is track and u.peer_group == unit.peer_group
                ]
                ahead = tuple(u for u in peers if u.reached >= hi)
                if rule.peer_reached is not None:
                    need = track.index(rule.peer_reached)
                    if not any(u.reached >= need for u in peers):
                        continue
                claimed.add(id(unit))
                missing = _missing_ranks(unit, peers)
                yield StallHit(sig, unit, ahead, missing, self._last_units(unit, missing))

    def _last_units(self, unit: Unit, ranks: tuple[int, ...]) -> tuple[Unit, ...]:
        """Where the ranks that never joined ``unit`` were last seen: their latest communicator of the same
        size (so the evidence shows the other node too)."""
        found = []
        for rank in ranks:
            candidates = [
                u
                for u in self.units
                if u.track is unit.track
                and u.facts.get("rank") == str(rank)
                and u.facts.get("nranks") == unit.facts.get("nranks")
                and u.process != unit.process
            ]
            if candidates:
                found.append(candidates[-1])
        return tuple(found)

    def summary(self) -> dict[str, dict[str, str]]:
        """Per node and track, a short phrase saying how far start-up got."""
        out: dict[str, dict[str, str]] = {}
        for unit in self.units:
            node = out.setdefault(unit.node, {})
            if unit.track.id == "nccl":
                continue
            current = node.get(unit.track.id)
            phrase = unit.stage_label
            if current is None or _rank_of(unit.track, phrase) > _rank_of(unit.track, current):
                node[unit.track.id] = phrase
        for node_name, phrase in _nccl_summary(self.units).items():
            out.setdefault(node_name, {})["nccl"] = phrase
        return out


def _rank_of(track: Track, label: str) -> int:
    for i, stage in enumerate(track.stages):
        if stage.label == label:
            return i
    return -1


def _nccl_summary(units: list[Unit]) -> dict[str, str]:
    per_node: dict[str, list[Unit]] = {}
    for unit in units:
        if unit.track.id == "nccl":
            per_node.setdefault(unit.node, []).append(unit)
    out = {}
    for node, comms in per_node.items():
        done = sum(1 for u in comms if u.stage == "init_complete")
        open_ = [u for u in comms if u.stage != "init_complete"]
        phrase = f"{done} of {len(comms)} communicators ready"
        if open_:
            last = open_[-1]
            phrase += f"; communicator {last.key} stopped at: {last.stage_label}"
        out[node] = phrase
    return out


def _missing_ranks(unit: Unit, peers: list[Unit]) -> tuple[int, ...]:
    nranks = unit.facts.get("nranks", "")
    if not unit.facts.get("commid") or not nranks.isdigit():
        return ()
    seen = {int(u.facts["rank"]) for u in [unit, *peers] if u.facts.get("rank", "").isdigit()}
    return tuple(r for r in range(int(nranks)) if r not in seen)
