"""How far start-up got, per node, rank and NCCL communicator; and the stalls that follow from it.

The tracker is fed stage markers (:class:`~sparktui.core.analysis.scan.StageEvent`: lines matched by a
track's stage patterns, see ``diagnostics/stages/``) and keeps one :class:`Unit` per thing that progresses on
its own, as its track declares: a communicator of one process, one rank of an engine on one node, or a node.
A stall signature then asks a declarative question of the units ("reached ``init_start``, never reached
``init_complete``, after the same process had completed another communicator") without any code of its own.

A communicator begins at its first visible line, whatever its stage: a log cut at ``Comm config``, or one that
starts half-way through set-up, is still tracked; a later marker implies the earlier stages. Its units on
every rank form one peer group, named by the commId, by the parent and split of a communicator split from
another, or failing both by its place among its process's communicators.

A stall found in a finished log is *corroborated* when something besides the log's end says the unit was
stuck: a peer that got further, a missing rank seen busy elsewhere, a peer that went quiet without beginning
it (see :meth:`StageTracker.quiet_peers`), or the log's own clock running on past the stage's
``stuck_after``. A live unit is stuck after ``stuck_after`` seconds without progress; before
that, once it has made none for :data:`PENDING_AFTER` seconds, it is a *pending* stall (a live session that
ends sooner can say what it would have named, and when).

Every lookup goes through an index (by unit key, by process, by peer group, by rank), so the cost of a
marker does not grow with the number of units seen before it.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from sparktui.core.analysis.scan import StageEvent
from sparktui.core.catalogue import Signature, StageDef, Track
from sparktui.core.events import Position
from sparktui.core.words import join, ranges

#: Seconds without progress after which a live unit that would be a stall (once its stage's ``stuck_after``
#: passes) is reported as pending: a healthy start-up goes from one stage to the next well within it.
PENDING_AFTER = 5.0


@dataclass(slots=True, eq=False)
class Unit:
    """One thing that progresses through a track's stages."""

    track: Track
    node: str
    key: str  # communicator pointer ("" until a line names it), rank tag, or "" for the node as a whole
    process: str  # node:pid for a communicator, node:rank-tag otherwise
    ordinal: int = 0  # its place among the units of its process
    rank: int | None = None
    reached: int = -1
    # Where each stage was first reached, and the line (raw) that reached it: one dict, not two, per unit.
    firsts: dict[str, tuple[Position, str]] = field(default_factory=dict)
    last: Position | None = None
    last_text: str = ""
    last_progress_at: float = 0.0  # the reader's clock when it last reached a new stage
    last_progress_time: float | None = None  # the log's own time of that line, where the line says it
    facts: dict[str, str] = field(default_factory=dict)
    completed_before: bool = False  # the process had completed another unit of the track first
    previous: Unit | None = None  # the unit of the same process that completed last before this one opened
    group: str = ""  # the peer group, set by the tracker
    filed: bool = False  # filed under its group (and its rank key, if any) by the tracker
    rank_key: tuple[str, str, str] | None = None  # (track, rank, nranks) it is filed under

    def reached_at(self, stage: str) -> Position | None:
        """Where it first reached ``stage`` (None if it did not)."""
        first = self.firsts.get(stage)
        return first[0] if first is not None else None

    def text_at(self, stage: str) -> str:
        """The line with which it first reached ``stage`` ("" if it did not)."""
        first = self.firsts.get(stage)
        return first[1] if first is not None else ""

    @property
    def stage(self) -> str:
        return self.track.stages[self.reached].id if self.reached >= 0 else ""

    @property
    def stage_label(self) -> str:
        return self.track.stages[self.reached].label if self.reached >= 0 else "not started"

    @property
    def done(self) -> bool:
        """Whether it reached its track's ``done`` stage (a communicator that is ready)."""
        return bool(self.track.done) and self.reached >= self.track.index(self.track.done)

    @property
    def finished(self) -> bool:
        """Whether it reached the last stage of its track."""
        return self.reached == len(self.track.stages) - 1

    @property
    def pid(self) -> str:
        return self.process.rpartition(":")[2] if self.track.unit == "communicator" else ""

    @property
    def who(self) -> str:
        """Who it is in a sentence: "rank 5 on node-b", or the process or node where no rank is known."""
        rank = self.facts.get("rank")
        if rank is not None:
            return f"rank {rank} on {self.node}"
        return f"process {self.pid} on {self.node}" if self.pid else self.node


@dataclass(frozen=True, slots=True)
class StallHit:
    """A unit that fits a stall signature, with the peers that did or did not get further, and what (besides
    the end of the log) says it was stuck: ``corroboration`` is "" when nothing does."""

    signature: Signature
    unit: Unit
    peers_ahead: tuple[Unit, ...]
    peers_missing: tuple[int, ...]  # ranks of the peer group that never printed the unit at all
    last_seen: tuple[Unit, ...] = ()  # for each missing rank found elsewhere: its most recent unit
    corroboration: str = ""
    folded: bool = False  # Ray folded some of the track's lines: who looks behind may only look so
    pending: float | None = None  # live, short of ``stuck_after``: the seconds without progress so far
    window: float = 0.0  # the stage's ``stuck_after``
    quiet: tuple[Unit, ...] = ()  # peers in the unit's previous communicator that began nothing after it
    cut: bool = False  # peers got further, but their lines do not go on well past its last one


class StageTracker:
    """Keeps the units of every track; pure, fed in line order per source."""

    def __init__(self, tracks: Iterable[Track]) -> None:
        self.tracks = {t.id: t for t in tracks}
        self.units: list[Unit] = []
        self._by_key: dict[tuple[str, str, str], Unit] = {}
        self._latest: dict[tuple[str, str], Unit] = {}  # (track, process) -> its most recently opened unit
        self._count: dict[tuple[str, str], int] = {}  # (track, process) -> units opened
        self._on_node: dict[tuple[str, str], Unit] = {}  # (track, node) -> its most recently opened unit
        self._done: dict[tuple[str, str], Unit] = {}  # (track, process) -> the unit it completed last
        self._after: dict[tuple[str, str], list[Unit]] = {}  # (track, process) -> done units not finished
        self._busy: dict[tuple[str, str], Unit] = {}  # (track, process) -> unit that last took an after-done line
        # (track, peer group) -> its units, and (track, rank, nranks) -> units, each by id(unit) in the order
        # filed: a unit refiled (its facts changed) leaves its old place at no cost, however many share it.
        # A group of one (most: a communicator none of whose peers logged) is the unit itself, not a dict of it.
        self._groups: dict[tuple[str, str], Unit | dict[int, Unit]] = {}
        self._by_rank: dict[tuple[str, str, str], dict[int, Unit]] = {}
        self.folded: set[str] = set()  # tracks some of whose lines stood for other processes' (Ray's dedup)

    def update(self, event: StageEvent) -> None:
        track = self.tracks[event.track]
        if event.repeated > 1:
            self.folded.add(track.id)
        stage = track.stages[event.stage]
        index = event.stage
        if track.unit == "communicator":
            found = self._communicator(track, stage, event)
            if found is None:
                return
            unit, index = found
        else:
            found_unit = self._unit_for(track, stage, event)
            if found_unit is None:
                return
            unit = found_unit
        self._learn(unit, event, overwrite=bool(event.facts.get(track.key)) or track.unit != "communicator")
        stage = track.stages[index]
        if stage.id not in unit.firsts:
            unit.firsts[stage.id] = (event.position, event.text)
        unit.last, unit.last_text = event.position, event.text
        if index > unit.reached:
            was_done = unit.done
            unit.reached = index
            unit.last_progress_at = event.at
            unit.last_progress_time = event.time
            slot = (track.id, unit.process)
            if unit.done and not was_done:
                self._done[slot] = unit
                self._after.setdefault(slot, []).append(unit)
            if unit.finished and unit in self._after.get(slot, ()):
                self._after[slot].remove(unit)

    def _communicator(self, track: Track, stage: StageDef, event: StageEvent) -> tuple[Unit, int] | None:
        """The unit a communicator track's line belongs to, and the stage it marks there."""
        if not event.process:
            return None  # without a process there is no telling whose communicator this is
        slot = (track.id, event.process)
        latest = self._latest.get(slot)
        if stage.process_level:
            # Once per process: it begins a unit only for a process seen for the first time.
            return (self._add(track, event), event.stage) if latest is None else None
        key = event.facts.get(track.key, "")
        if key:
            known = self._by_key.get((track.id, event.process, key))
            if known is not None and not (stage.opens and known.reached >= event.stage):
                return known, event.stage
            # A new communicator (even where a destroyed one had the same pointer), unless the process's
            # current one has not been named yet and is not past this stage: then this line names it.
            if latest is not None and not latest.key and latest.reached < event.stage:
                latest.key = key
                self._by_key[(track.id, latest.process, key)] = latest
                return latest, event.stage
            unit = self._add(track, event)
            unit.key = key
            self._by_key[(track.id, unit.process, key)] = unit
            return unit, event.stage
        if latest is not None and latest.done and stage.once_done:
            # After the unit is ready this line marks a later stage: NCCL connecting at a first collective.
            busy = self._busy.get(slot)
            pending = self._after.get(slot)
            target = busy if busy is not None and not busy.finished else (pending[-1] if pending else latest)
            self._busy[slot] = target
            return target, track.index(stage.once_done)
        if latest is None or latest.done or (stage.opens and latest.reached > event.stage):
            return self._add(track, event), event.stage
        return latest, event.stage

    def _unit_for(self, track: Track, stage: StageDef, event: StageEvent) -> Unit | None:
        """The unit of a rank or node track's line."""
        known = self._by_key.get((track.id, event.process, event.process))
        if known is not None:
            return known
        if not stage.opens:
            # A marker that is not the program's own text only advances what was already seen.
            return self._on_node.get((track.id, event.node))
        unit = self._add(track, event)
        unit.key = unit.process
        self._by_key[(track.id, unit.process, unit.process)] = unit
        return unit

    def _add(self, track: Track, event: StageEvent) -> Unit:
        slot = (track.id, event.process)
        ordinal = self._count.get(slot, 0)
        self._count[slot] = ordinal + 1
        previous = self._done.get(slot)
        unit = Unit(  # one copy of a node's and a process's name for all their units (there may be millions)
            track,
            sys.intern(event.node),
            "",
            sys.intern(event.process),
            ordinal,
            event.rank,
            completed_before=previous is not None,
            previous=previous,
        )
        self.units.append(unit)
        self._latest[slot] = unit
        self._on_node[(track.id, event.node)] = unit
        self._file(unit)
        return unit

    def _learn(self, unit: Unit, event: StageEvent, *, overwrite: bool) -> None:
        """Take the facts of a line; a line that names its communicator is believed over one that does not
        (a channel line may belong to another communicator of the same process)."""
        filing, facts, refile = unit.track.filing, unit.facts, False
        for k, v in event.facts.items():
            if v and (overwrite or k not in facts):
                refile = refile or (k in filing and facts.get(k) != v)
                facts[k] = v
        if refile:
            self._file(unit)

    def _group_of(self, unit: Unit) -> str:
        """The peer group: one communicator across ranks, or a whole engine."""
        track = unit.track
        if track.unit != "communicator":
            return track.id
        group = unit.facts.get(track.group) if track.group else None
        if group:
            return f"{track.group}:{group}"
        parent = self._by_key.get((track.id, unit.process, unit.facts.get(track.parent, ""))) if track.parent else None
        if parent is not None and parent is not unit:
            split = "/".join(unit.facts.get(f, "?") for f in track.split)
            return f"{parent.group}>{split}"
        return f"#{unit.ordinal}"

    def _file(self, unit: Unit) -> None:
        """(Re)file ``unit`` under its peer group and rank, which facts learnt later may change."""
        if unit.filed:
            self._leave((unit.track.id, unit.group), unit)
            if unit.rank_key is not None:
                del self._by_rank[unit.rank_key][id(unit)]
        unit.group = self._group_of(unit)
        rank = unit.facts.get("rank")
        unit.rank_key = (unit.track.id, rank, unit.facts.get("nranks", "")) if rank is not None else None
        unit.filed = True
        self._join((unit.track.id, unit.group), unit)
        if unit.rank_key is not None:
            self._by_rank.setdefault(unit.rank_key, {})[id(unit)] = unit

    def _join(self, group: tuple[str, str], unit: Unit) -> None:
        found = self._groups.get(group)
        if found is None:
            self._groups[group] = unit
        elif isinstance(found, Unit):
            self._groups[group] = {id(found): found, id(unit): unit}
        else:
            found[id(unit)] = unit

    def _leave(self, group: tuple[str, str], unit: Unit) -> None:
        found = self._groups[group]
        if isinstance(found, Unit) or len(found) == 1:
            del self._groups[group]  # no group left empty behind a unit refiled
        else:
            del found[id(unit)]

    def _members(self, group: tuple[str, str]) -> Iterable[Unit]:
        """The units of ``group`` in the order filed."""
        found = self._groups.get(group)
        return () if found is None else (found,) if isinstance(found, Unit) else found.values()

    def peers(self, unit: Unit) -> list[Unit]:
        """The other units of ``unit``'s peer group."""
        return [u for u in self._members((unit.track.id, unit.group)) if u is not unit]

    def stalls(
        self,
        signatures: Iterable[Signature],
        *,
        now: float | None = None,
        log_end: Mapping[str, float] | None = None,
        log_lines: Mapping[str, int] | None = None,
        down: Mapping[str, Sequence[Outage]] | None = None,
    ) -> Iterator[StallHit]:
        """Units that fit each stall signature. With ``now`` (a live source) a unit must also have made no
        progress for its stage's ``stuck_after`` seconds, not counting the time its source was down
        (``down``: each source's outages, on the same clock): a log that could not be read says nothing
        of the unit's progress then. Without it (a finished log) "stopped at" is
        enough, and ``log_end`` (the last time each source's own lines say) can corroborate it; peers that got
        further say it only where their logs go on well past the unit's last line (:func:`_went_on`, by
        ``log_end`` or by ``log_lines``, the lines each source has), or the hit is ``cut``. Each unit is
        claimed by the first signature it fits, most severe first and, at one severity, the one that asks most of
        the unit's facts (``where``) first, with the peers that tell its story.
        A live unit that fits but has waited only :data:`PENDING_AFTER` seconds or more comes with
        ``pending`` set (and claims nothing: it is not a stall yet)."""
        claimed: set[int] = set()
        pending: set[int] = set()  # units already reported as pending, for their most severe signature
        ordered = sorted(
            (s for s in signatures if s.stall is not None),
            key=lambda s: (-s.severity, -len(s.stall.where) if s.stall is not None else 0),
        )
        by_track: dict[str, list[Unit]] = {}
        for unit in self.units:
            by_track.setdefault(unit.track.id, []).append(unit)
        # What a peer group says is the same for each of its units: worked out once per group (a group of
        # thousands of units, a restart loop's, stays linear).
        ahead_of: dict[tuple[str, str, int], tuple[Unit, ...]] = {}
        claimed_ahead: set[tuple[str, str, int]] = set()
        reaching: dict[tuple[str, str, int], int] = {}
        ranks_in: dict[tuple[str, str], set[int]] = {}
        quiet_of: dict[tuple[str, str, str], tuple[Unit, ...]] = {}  # (track, group, previous group) -> quiet
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
                if any(unit.facts.get(fact) != value for fact, value in rule.where):
                    continue
                stuck_after = track.stages[unit.reached].stuck_after
                waited = None if now is None else now - unit.last_progress_at
                unread = 0.0
                if now is not None and down and unit.last is not None:
                    unread = downtime(down.get(unit.last.source, ()), unit.last_progress_at, now)
                    waited = now - unit.last_progress_at - unread  # only the time its log could be read
                if waited is not None and (waited < PENDING_AFTER or id(unit) in pending):
                    continue
                group = (track.id, unit.group)
                members = self._members(group)
                if group not in ranks_in:
                    ranks_in[group] = {int(u.facts["rank"]) for u in members if u.facts.get("rank", "").isdigit()}
                if rule.peer_reached is not None:
                    need = track.index(rule.peer_reached)
                    if (*group, need) not in reaching:
                        reaching[(*group, need)] = sum(u.reached >= need for u in members)
                    if reaching[(*group, need)] - (unit.reached >= need) == 0:
                        continue  # no peer (another unit than this one) got there
                if (*group, hi) not in ahead_of:
                    ahead_of[(*group, hi)] = tuple(u for u in members if u.reached >= hi)
                ahead = ahead_of[(*group, hi)]
                if waited is not None and waited < stuck_after:
                    pending.add(id(unit))
                    yield StallHit(sig, unit, ahead, (), pending=waited, window=stuck_after)
                    continue
                claimed.add(id(unit))
                if (*group, hi) not in claimed_ahead:
                    claimed_ahead.add((*group, hi))
                    claimed.update(id(u) for u in ahead)
                missing = _missing_ranks(unit, ranks_in[group])
                last_seen = self._last_units(unit, missing)
                before = unit.previous
                if before is not None and (*group, before.group) not in quiet_of:
                    quiet_of[(*group, before.group)] = self.quiet_peers(unit)
                quiet = quiet_of[(*group, before.group)] if before is not None else ()
                # With Ray folding identical lines, a rank that looks behind may have printed the same line.
                folded = track.id in self.folded
                if waited is not None:
                    why = f"no progress for {waited + unread:.0f} s"
                    if unread >= 1:
                        why += f"; {unit.node}'s log was unreadable for {unread:.0f} s of them"
                elif folded:
                    why = _corroboration(unit, (), (), last_seen, stuck_after, log_end or {})
                else:
                    why = _corroboration(unit, ahead, quiet, last_seen, stuck_after, log_end or {})
                cut = why == PEERS_AHEAD and not _went_on(unit, ahead, stuck_after, log_end or {}, log_lines or {})
                if cut:
                    why = ""
                if not why and track.stages[unit.reached].settled:
                    continue
                yield StallHit(sig, unit, ahead, missing, last_seen, why, folded, quiet=quiet, cut=cut)

    def quiet_peers(self, unit: Unit) -> tuple[Unit, ...]:
        """The peers that went quiet where ``unit``'s process went on: the units of the communicator its process
        completed last before opening ``unit`` (``unit.previous``) whose processes completed it too and then
        opened nothing more, so never began ``unit``'s communicator (nor any other) while this process did.

        A finished log in which one rank began a new communicator and its peers in the one before went quiet
        is asymmetric: in a healthy start-up every rank of a group calls into its new communicator, so a log
        cut at an arbitrary moment shows the others beginning it too, or a peer further on. Only ranks that
        fit into the new communicator are named: its size (or, before a line says it, the size of the one
        before, which a new group over the same ranks has) must leave room for every one of them beside the
        processes that did begin it, so that the ranks left out of a smaller group (the other half of a
        split) are never taken for absent. A process with any later unit, done or not, is not quiet."""
        before = unit.previous
        if before is None or unit.done:
            return ()
        track = unit.track
        began = {u.process for u in self._members((track.id, unit.group))}
        quiet = tuple(
            peer
            for peer in self.peers(before)
            if peer.done and peer.process not in began and self._latest.get((track.id, peer.process)) is peer
        )
        size = unit.facts.get("nranks") or before.facts.get("nranks", "")
        if not quiet or not size.isdigit() or len(began) + len(quiet) > int(size):
            return ()
        return quiet

    def _last_units(self, unit: Unit, ranks: tuple[int, ...]) -> tuple[Unit, ...]:
        """Where the ranks that never joined ``unit`` were last seen: their latest unit of the same size
        (so the evidence shows the other node too). A rank whose process has since begun a communicator that
        no line names yet (stopped at its first lines) is not counted: that may be ``unit``'s own."""
        found = []
        nranks = unit.facts.get("nranks", "")
        for rank in ranks:
            same = self._by_rank.get((unit.track.id, str(rank), nranks), {})
            latest = next((u for u in reversed(same.values()) if u.process != unit.process), None)
            if latest is None:
                continue
            since = self._latest.get((unit.track.id, latest.process))
            if since is not None and since is not latest and not since.done and since.group.startswith("#"):
                continue
            found.append(latest)
        return tuple(found)

    def nodes(self) -> list[str]:
        """Every node a stage marker came from, in the order they were first seen."""
        return list(dict.fromkeys(u.node for u in self.units))

    def summary(self) -> dict[str, dict[str, str]]:
        """Per node and track, a short phrase saying how far start-up got (per rank where ranks differ)."""
        out: dict[str, dict[str, str]] = {}
        units: dict[tuple[str, str], list[Unit]] = {}
        for unit in self.units:
            out.setdefault(unit.node, {})
            units.setdefault((unit.node, unit.track.id), []).append(unit)
        for (node, _), found in units.items():
            track = found[0].track
            out[node][track.id] = _progress(found) if track.unit == "communicator" else _furthest(found)
        return out


#: A time a source was down (disconnected, retrying: not streaming, after it had streamed), from its start to
#: its end on the clock stalls are measured on; None for an end: down still.
Outage = tuple[float, float | None]


def downtime(outages: Iterable[Outage], since: float, now: float) -> float:
    """Seconds of ``outages`` between ``since`` and ``now`` (they do not overlap one another)."""
    total = 0.0
    for start, end in outages:
        total += max(0.0, min(now if end is None else end, now) - max(start, since))
    return total


#: The corroboration of a stall by peers that got past where it stopped.
PEERS_AHEAD = "peers got further"
#: Lines of one log, interleaving the ranks' start-up, that must follow a unit's last line for peers further
#: on in the same log to say it was behind them: fewer, and the log may be a window cut in mid start-up.
WENT_ON_LINES = 100
#: The corroboration of a stall by peers that went quiet without beginning it (:meth:`StageTracker.quiet_peers`).
WENT_QUIET = "its peers in the communicator before went quiet without beginning it"


def _went_on(
    unit: Unit, ahead: tuple[Unit, ...], stuck_after: float, log_end: Mapping[str, float], lines: Mapping[str, int]
) -> bool:
    """Whether the logs of the peers that got further go on well past ``unit``'s last line: by their clocks
    (``stuck_after`` seconds or more past its last progress), else, in the log it shares with them, by
    :data:`WENT_ON_LINES` lines. Separate logs that print no time cannot be set side by side: they are taken
    to go on, as a capture of whole logs does."""
    if unit.last is None:
        return True
    for peer in ahead:
        if peer.last is None:
            continue
        source = peer.last.source
        end = log_end.get(source)
        if end is not None and unit.last_progress_time is not None:
            went_on = end - unit.last_progress_time >= stuck_after
        else:
            went_on = source != unit.last.source or lines.get(source, 0) - unit.last.line >= WENT_ON_LINES
        if went_on:
            return True
    return False


def _corroboration(
    unit: Unit,
    ahead: tuple[Unit, ...],
    quiet: tuple[Unit, ...],
    last_seen: tuple[Unit, ...],
    stuck_after: float,
    log_end: Mapping[str, float],
) -> str:
    """What, besides the end of the log, says a unit of a finished log was stuck ("" for nothing)."""
    if ahead:
        return PEERS_AHEAD
    if quiet:
        return WENT_QUIET
    if last_seen:
        return "a rank that never joined was busy elsewhere"
    end = log_end.get(unit.last.source) if unit.last is not None else None
    if end is not None and unit.last_progress_time is not None and end - unit.last_progress_time >= stuck_after:
        return f"the log went on for {end - unit.last_progress_time:.0f} s without progress"
    return ""


def _furthest(units: list[Unit]) -> str:
    """The label of the furthest stage any of a node's units reached."""
    return max(units, key=lambda u: u.reached).stage_label


def _progress(units: list[Unit]) -> str:
    """How many of a node's communicators are ready, per process where its processes differ, and where the
    last open one stopped."""
    by_process: dict[str, list[Unit]] = {}
    for unit in units:
        by_process.setdefault(unit.process, []).append(unit)
    phrases = {p: _process_progress(found) for p, found in by_process.items()}
    if len(set(phrases.values())) == 1:
        phrase = next(iter(phrases.values()))
        return phrase if len(phrases) == 1 else f"{len(phrases)} processes: {phrase}"
    return "; ".join(f"{_rank_label(by_process[p])}: {phrase}" for p, phrase in phrases.items())


def _process_progress(units: list[Unit]) -> str:
    done = sum(1 for u in units if u.done)
    phrase = f"{done} of {len(units)} {units[0].track.unit}s ready"
    open_ = [u for u in units if not u.done]
    if open_:
        last = open_[-1]
        phrase += f"; the last open one stopped at: {last.stage_label}"
    elif not units[-1].finished:
        phrase += f"; the last one stopped at: {units[-1].stage_label}"
    return phrase


def _rank_label(units: list[Unit]) -> str:
    ranks = [u.facts["rank"] for u in units if "rank" in u.facts]
    pid = units[0].process.rpartition(":")[2]
    return f"rank {ranks[0]} (pid {pid})" if ranks else f"pid {pid}"


def who(units: Iterable[Unit]) -> str:
    """Units named the way a reader counts them: "rank 3 on node-d", "ranks 0-2 on node-a and rank 5 on
    node-b", "8 processes on gpu-a" where no rank is known."""
    by_node: dict[str, list[Unit]] = {}
    for unit in units:
        by_node.setdefault(unit.node, []).append(unit)
    parts = []
    for node, found in by_node.items():
        ranks = sorted({int(r) for u in found if (r := u.facts.get("rank", "")).isdigit()})
        if len(found) == 1:
            parts.append(found[0].who)
        elif ranks and len(ranks) == len(found):
            parts.append(f"{'rank' if len(ranks) == 1 else 'ranks'} {ranges(ranks)} on {node}")
        else:
            parts.append(f"{len(found)} processes on {node}")
    return join(parts)


def _missing_ranks(unit: Unit, seen: set[int]) -> tuple[int, ...]:
    """The ranks of ``unit``'s communicator that no unit of its peer group (``seen``: their ranks) has."""
    nranks = unit.facts.get("nranks", "")
    if unit.group.startswith("#") or not nranks.isdigit():
        return ()
    return tuple(r for r in range(int(nranks)) if r not in seen)
