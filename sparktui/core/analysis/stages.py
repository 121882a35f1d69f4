"""How far start-up got, per node, rank and NCCL communicator; and the stalls that follow from it.

The tracker is fed stage markers (:class:`~sparktui.core.analysis.scan.StageEvent`: lines matched by a
track's stage patterns, see ``diagnostics/stages/``) and keeps one :class:`Unit` per thing that progresses on
its own, as its track declares: a communicator of one process, one rank of an engine on one node, or a node.
A stall signature then asks a declarative question of the units ("reached ``init_start``, never reached
``init_complete``, after the same process had completed another communicator") without any code of its own.

Every lookup goes through an index (by unit key, by process, by peer group, by rank), so the cost of a
marker does not grow with the number of units seen before it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from sparktui.core.analysis.scan import StageEvent
from sparktui.core.catalogue import Signature, Track
from sparktui.core.events import Position


@dataclass(slots=True, eq=False)
class Unit:
    """One thing that progresses through a track's stages."""

    track: Track
    node: str
    key: str  # communicator pointer, rank tag or "" for the node as a whole
    process: str  # node:pid for a communicator, node:rank-tag otherwise
    rank: int | None = None
    reached: int = -1
    positions: dict[str, Position] = field(default_factory=dict)
    texts: dict[str, str] = field(default_factory=dict)  # the line (raw) that first reached each stage
    last: Position | None = None
    last_text: str = ""
    last_progress_at: float = 0.0
    facts: dict[str, str] = field(default_factory=dict)
    completed_before: bool = False  # the process had completed another unit of the track first

    @property
    def stage(self) -> str:
        return self.track.stages[self.reached].id if self.reached >= 0 else ""

    @property
    def stage_label(self) -> str:
        return self.track.stages[self.reached].label if self.reached >= 0 else "not started"

    @property
    def peer_group(self) -> str:
        """Units that must progress together: one communicator across ranks, or a whole engine."""
        group = self.facts.get(self.track.group) if self.track.group else None
        return f"{self.track.group}:{group}" if group else self.track.id

    @property
    def done(self) -> bool:
        """Whether it reached its track's ``done`` stage (a communicator that is ready)."""
        return bool(self.track.done) and self.reached >= self.track.index(self.track.done)


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
        self.process_facts: dict[tuple[str, str], dict[str, str]] = {}  # (track, node) -> facts
        self._by_key: dict[tuple[str, str, str], Unit] = {}
        self._latest: dict[tuple[str, str], Unit] = {}  # (track, process) -> its most recently opened unit
        self._on_node: dict[tuple[str, str], Unit] = {}  # (track, node) -> its most recently opened unit
        self._done: set[tuple[str, str]] = set()  # (track, process) that completed a unit
        self._groups: dict[tuple[str, str], list[Unit]] = {}  # (track, peer group) -> units
        self._by_rank: dict[tuple[str, str, str], list[Unit]] = {}  # (track, rank, nranks) -> units
        self._filed: dict[int, tuple[str, tuple[str, str, str] | None]] = {}  # id(unit) -> (group, rank key)

    def update(self, event: StageEvent) -> None:
        track = self.tracks[event.track]
        stage = track.stages[event.stage]
        if stage.process_level:
            self.process_facts.setdefault((track.id, event.node), {}).update(event.facts)
            return
        unit = self._unit_for(track, event)
        if unit is None:
            return
        before = (unit.facts.get(track.group), unit.facts.get("rank"), unit.facts.get("nranks"))
        unit.facts.update({k: v for k, v in event.facts.items() if v})
        if (unit.facts.get(track.group), unit.facts.get("rank"), unit.facts.get("nranks")) != before:
            self._file(unit)
        if stage.id not in unit.positions:
            unit.positions[stage.id] = event.position
            unit.texts[stage.id] = event.text
        unit.last, unit.last_text = event.position, event.text
        if event.stage > unit.reached:
            unit.reached = event.stage
            unit.last_progress_at = event.at
            if unit.done:
                self._done.add((track.id, unit.process))

    def _unit_for(self, track: Track, event: StageEvent) -> Unit | None:
        stage = track.stages[event.stage]
        if track.unit == "communicator":
            key = event.facts.get(track.key, "")
            known = self._by_key.get((track.id, event.process, key)) if key else None
            if stage.opens and key:  # a new communicator, even where a destroyed one had the same pointer
                completed = (track.id, event.process) in self._done
                return self._add(Unit(track, event.node, key, event.process, event.rank, completed_before=completed))
            return known or self._latest.get((track.id, event.process))
        known = self._by_key.get((track.id, event.process, event.process))
        if known is not None:
            return known
        if not stage.opens:
            # A marker that is not the program's own text only advances what was already seen.
            return self._on_node.get((track.id, event.node))
        return self._add(Unit(track, event.node, event.process, event.process, event.rank))

    def _add(self, unit: Unit) -> Unit:
        self.units.append(unit)
        self._by_key[(unit.track.id, unit.process, unit.key)] = unit
        self._latest[(unit.track.id, unit.process)] = unit
        self._on_node[(unit.track.id, unit.node)] = unit
        self._file(unit)
        return unit

    def _file(self, unit: Unit) -> None:
        """(Re)file ``unit`` under its peer group and rank, which facts learnt later may change."""
        old = self._filed.get(id(unit))
        if old is not None:
            self._groups[(unit.track.id, old[0])].remove(unit)
            if old[1] is not None:
                self._by_rank[old[1]].remove(unit)
        rank = unit.facts.get("rank")
        by_rank = (unit.track.id, rank, unit.facts.get("nranks", "")) if rank is not None else None
        self._filed[id(unit)] = (unit.peer_group, by_rank)
        self._groups.setdefault((unit.track.id, unit.peer_group), []).append(unit)
        if by_rank is not None:
            self._by_rank.setdefault(by_rank, []).append(unit)

    def stalls(self, signatures: Iterable[Signature], *, now: float | None = None) -> Iterator[StallHit]:
        """Units that fit each stall signature. With ``now`` (a live source) a unit must also have made no
        progress for the signature's ``live_after`` seconds; without it (a finished log) "stopped at"
        is enough. Each unit is claimed by the first signature it fits, most severe first."""
        claimed: set[int] = set()
        ordered = sorted((s for s in signatures if s.stall is not None), key=lambda s: -s.severity)
        by_track: dict[str, list[Unit]] = {}
        for unit in self.units:
            by_track.setdefault(unit.track.id, []).append(unit)
        for sig in ordered:
            rule = sig.stall
            assert rule is not None
            track = self.tracks.get(rule.track)
            if track is None:
                continue
            lo, hi = track.index(rule.reached), track.index(rule.not_reached)
            for unit in by_track.get(track.id, ()):
                if id(unit) in claimed or not lo <= unit.reached < hi:
                    continue
                if rule.after_completed is not None and unit.completed_before != rule.after_completed:
                    continue
                if now is not None and now - unit.last_progress_at < rule.live_after:
                    continue
                peers = [u for u in self._groups.get((track.id, unit.peer_group), ()) if u is not unit]
                ahead = tuple(u for u in peers if u.reached >= hi)
                if rule.peer_reached is not None:
                    need = track.index(rule.peer_reached)
                    if not any(u.reached >= need for u in peers):
                        continue
                claimed.add(id(unit))
                missing = _missing_ranks(unit, peers)
                yield StallHit(sig, unit, ahead, missing, self._last_units(unit, missing))

    def _last_units(self, unit: Unit, ranks: tuple[int, ...]) -> tuple[Unit, ...]:
        """Where the ranks that never joined ``unit`` were last seen: their latest unit of the same size
        (so the evidence shows the other node too)."""
        found = []
        nranks = unit.facts.get("nranks", "")
        for rank in ranks:
            candidates = [
                u for u in self._by_rank.get((unit.track.id, str(rank), nranks), ()) if u.process != unit.process
            ]
            if candidates:
                found.append(candidates[-1])
        return tuple(found)

    def summary(self) -> dict[str, dict[str, str]]:
        """Per node and track, a short phrase saying how far start-up got."""
        out: dict[str, dict[str, str]] = {}
        units: dict[tuple[str, str], list[Unit]] = {}
        for unit in self.units:
            out.setdefault(unit.node, {})
            units.setdefault((unit.node, unit.track.id), []).append(unit)
        for (node, _), found in units.items():
            track = found[0].track
            out[node][track.id] = _progress(found) if track.unit == "communicator" else _furthest(found)
        return out


def _furthest(units: list[Unit]) -> str:
    """The label of the furthest stage any of a node's units reached."""
    return max(units, key=lambda u: u.reached).stage_label


def _progress(units: list[Unit]) -> str:
    """How many of a node's communicators are ready, and where the last open one stopped."""
    done = sum(1 for u in units if u.done)
    phrase = f"{done} of {len(units)} {units[0].track.unit}s ready"
    open_ = [u for u in units if not u.done]
    if open_:
        last = open_[-1]
        phrase += f"; {last.track.unit} {last.key} stopped at: {last.stage_label}"
    return phrase


def _missing_ranks(unit: Unit, peers: list[Unit]) -> tuple[int, ...]:
    nranks = unit.facts.get("nranks", "")
    if not unit.facts.get(unit.track.group) or not nranks.isdigit():
        return ()
    seen = {int(u.facts["rank"]) for u in [unit, *peers] if u.facts.get("rank", "").isdigit()}
    return tuple(r for r in range(int(nranks)) if r not in seen)
