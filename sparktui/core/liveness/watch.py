"""The live watch of one session, on a thread of its own: told by the front end each time the logs grow
(:meth:`Watcher.feed`, from the pipeline's updates), it reads every rank's stack on the session's nodes when
:mod:`~sparktui.core.liveness.pacing` says so, a few dumps a second apart (the node script of
``sparktui stacks``, bounded per node, every node at once), judges the reading
(:mod:`~sparktui.core.liveness.verdict`) and hands the front end what it now knows (:class:`Live`). Between
readings it looks at the nodes' GPUs every ``probe_seconds`` (the same script without dumps) for one that
sits wedged: high utilisation on low power, the honest signal on a GB10, whose memory counter reads 0.

Ranks are named by the node the cluster names them by: a rank's ``NCCL_HOSTID`` where its launcher set one,
else the node's name, this machine's host name for a session without nodes. Read-only on the nodes."""

from __future__ import annotations

import asyncio
import re
import socket
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from sparktui.core import settings
from sparktui.core.cluster import Cluster
from sparktui.core.errors import Refused, Unavailable
from sparktui.core.events import Finding
from sparktui.core.liveness.pacing import Pacer
from sparktui.core.liveness.verdict import Reading, Words, builtin_words, finding, hung_ranks, judge
from sparktui.core.outbox import Update
from sparktui.core.settings import LivenessSettings
from sparktui.core.stacks import snapshot as snapshots
from sparktui.core.stacks.compare import compare
from sparktui.core.stacks.kinds import WaitKind, builtin_kinds
from sparktui.core.stacks.ranks import Gpu, Rank
from sparktui.core.stacks.script import Request

if TYPE_CHECKING:  # the gathering brings asyncssh: imported when a reading runs, not with a session's start
    from sparktui.core.stacks.gather import NodeStacks

#: Seconds between two looks at whether a reading is due.
STEP = 0.25
#: Seconds each dump of one rank may take.
PER_DUMP = 4
#: Seconds a node has to answer, besides the rounds themselves.
SLACK = 8.0
#: The ranks are looked for once each quiet spell, ``quiet_seconds / LOOKS_PER_QUIET`` into it (2 s by default).
LOOKS_PER_QUIET = 5
#: A GPU this busy (per cent) on less than the wedged power is wedged.
WEDGED_UTILISATION = 90.0
_NUMBER = re.compile(r"\d+(?:\.\d+)?")


@dataclass(frozen=True, slots=True)
class Live:
    """What the watch knows now: the last reading, the hang finding while one stands and when it was first
    named (wall clock), the GPUs seen wedged, and what could not be done."""

    reading: Reading | None = None
    finding: Finding | None = None
    detected_at: datetime | None = None
    wedged: tuple[str, ...] = ()
    problems: tuple[str, ...] = ()
    hung_since: Mapping[str, datetime] = field(default_factory=dict)  # each hung job: when first named
    jobs: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # each job seen: the nodes of its ranks

    def said(self) -> list[tuple[str, datetime, str, str]]:
        """Each hung group: its job, when it was first named, who it waits on, and its own sentence."""
        groups = self.reading.hung if self.reading is not None and self.finding is not None else ()
        return [
            (g.job, self.hung_since.get(g.job, self.taken), "; ".join(hung_ranks(g)), g.findings[0]) for g in groups
        ]

    @property
    def taken(self) -> datetime:
        return self.reading.taken if self.reading is not None else datetime.now(UTC)

    @property
    def state(self) -> str:
        return self.reading.state if self.reading is not None else "watching"


async def _capture(targets: Mapping[str, str], request: Request, timeout: float) -> list[NodeStacks]:
    from sparktui.core.stacks.session import capture  # asyncssh: only when a reading runs

    return await capture(targets, request, timeout=timeout)


class Watcher:
    """The watch over ``targets`` (node -> SSH target, "" for this machine); ``on_change`` is called on the
    watch's thread with each new :class:`Live`."""

    def __init__(
        self,
        targets: Mapping[str, str],
        where: str,
        settings: LivenessSettings,
        *,
        py_spy: str = "",
        ras_port: int = 0,
        on_change: Callable[[Live], None] | None = None,
        kinds: Sequence[WaitKind] | None = None,
        words: Words | None = None,
    ) -> None:
        self.targets = dict(targets)
        self.where = where
        self.settings = settings
        self.py_spy = py_spy
        self.ras_port = ras_port
        self.on_change = on_change
        self.kinds = tuple(kinds) if kinds is not None else builtin_kinds()
        self.words = words or builtin_words()
        self.live = Live()
        self.pacer = Pacer(settings, time.monotonic())
        self.readings = 0
        self._counts: dict[str, int] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._gpus = True  # until a look finds none
        self._known: dict[str, tuple[int, ...]] = {}  # each node's rank processes on its host, as last found
        self._jobs: dict[str, dict[str, None]] = {}  # each job seen this session: its ranks' nodes, in order
        self._alive: dict[str, frozenset[tuple[str, int]]] = {}  # each job's rank processes, as last found
        self._short: set[str] = set()  # the jobs found with fewer ranks than their world size, read once for it

    # -- the front end's side -------------------------------------------------------------------------

    def feed(self, update: Update) -> None:
        """The pipeline's update: the logs grew when a source handed over more lines than before."""
        grew = False
        for name, tally in update.tallies.items():
            if tally.lines != self._counts.get(name, 0):
                self._counts[name] = tally.lines
                grew = True
        if grew:
            with self._lock:
                self.pacer.lines(time.monotonic())

    def start(self) -> Watcher:
        if self._thread is None and self.settings.enabled:
            self._thread = threading.Thread(target=self._run, name="sparktui liveness", daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()

    def join(self, timeout: float | None = None) -> None:
        if self._thread is not None:
            self._thread.join(timeout)

    # -- the watch's own thread -------------------------------------------------------------------------

    def _run(self) -> None:
        asyncio.run(self._main())

    async def _main(self) -> None:
        probed = time.monotonic()  # the first look waits its turn: a session's first seconds are its sources'
        while not self._stop.is_set():
            now = time.monotonic()
            with self._lock:
                reason = self.pacer.due(now)
                quiet = self.pacer.quiet(now)
            if reason:
                await self._read(now)
            elif quiet >= self.settings.quiet_seconds / LOOKS_PER_QUIET and probed < now - quiet:
                # early in each quiet spell: the ranks found now, so that a reading only dumps them, and a rank
                # that leaves its job soon after is seen go (a reading is then due at once)
                probed = now
                await self._probe()
            elif self._gpus and now - probed >= self.settings.probe_seconds:
                probed = now
                await self._probe()
            await asyncio.sleep(STEP)

    def request(self, samples: int, node: str) -> Request:
        """A reading's request (``samples`` dumps, NCCL's RAS asked), or a look's (none: the ranks and GPUs)."""
        known = self._known.get(node, ()) if samples else ()
        ras = self.ras_port if samples else 0
        return Request(
            samples, self.settings.round_seconds, per_dump=PER_DUMP, py_spy=self.py_spy, known=known, ras_port=ras
        )

    async def _nodes(self, samples: int) -> list[NodeStacks] | str:
        """Every node at once, each dumping the rank processes the last look found there (else looking)."""
        timeout = samples * (self.settings.round_seconds + PER_DUMP) + SLACK
        try:
            found = await asyncio.gather(
                *(
                    _capture({node: target}, self.request(samples, node), timeout)
                    for node, target in self.targets.items()
                )
            )
        except (Refused, Unavailable, OSError) as exc:
            return f"stacks not read: {exc}"
        nodes = [n for each in found for n in each]
        self._known = {n.node: tuple(r.pid for r in n.ranks if r.place == "host" and not r.gone) for n in nodes}
        self._roll_call([named(r) for n in nodes for r in n.ranks if not r.gone])
        return nodes

    def _roll_call(self, ranks: Sequence[Rank]) -> None:
        """Remember each job's nodes. A rank seen before that ended while others of its job run on, or a job
        first found with fewer ranks than its world size (its odd rank may have left before any look saw it; a
        job is read for this once, since its other ranks may run on nodes not watched), makes a reading due."""
        alive: dict[str, set[tuple[str, int]]] = {}
        worlds: dict[str, int] = {}
        for r in ranks:
            self._jobs.setdefault(r.job, {})[r.node] = None
            alive.setdefault(r.job, set()).add((r.node, r.pid))
            if r.world is not None:
                worlds[r.job] = r.world
        vanished = any(self._alive.get(job, frozenset()) - now for job, now in alive.items())
        short = {job for job, now in alive.items() if len(now) < worlds.get(job, 0)} - self._short
        self._short |= short
        self._alive = {job: frozenset(now) for job, now in alive.items()}
        if vanished or short:
            with self._lock:
                self.pacer.vanished = True

    async def _probe(self) -> None:
        """The GPUs of every node, without a dump: is one wedged?"""
        found = await self._nodes(0)
        if isinstance(found, str):
            return
        gpus = [(n.node, g) for n in found for g in n.gpus]
        self._gpus = bool(gpus)
        wedged = tuple(f"{node}: {g}" for node, g in gpus if is_wedged(g, self.settings.wedged_watts))
        with self._lock:
            self.pacer.wedged = bool(wedged)
        if wedged != self.live.wedged:
            self._publish(replace(self.live, wedged=wedged))

    async def _read(self, began: float) -> None:
        started = time.monotonic()
        found = await self._nodes(self.settings.rounds)
        self.readings += 1
        if isinstance(found, str):
            with self._lock:
                self.pacer.read(began, "unread")
            self._publish(replace(self.live, problems=(found,)))
            return
        ranks = [named(r) for node in found for r in node.ranks]
        groups = compare(ranks, self.kinds)
        problems = [p for node in found for p in node.problems]
        ras = [(node_name(node.node), said) for node in found for said in node.ras]
        taken = snapshots.of(groups, problems, self.where, seconds=time.monotonic() - started, ras=ras)
        reading = judge(groups, taken, self.kinds)
        hang = finding(reading, self.words)
        self._gpus = any(n.gpus for n in found)
        with self._lock:
            self.pacer.read(began, reading.state)
        now = datetime.now(UTC)
        since = {g.job: self.live.hung_since.get(g.job, now) for g in reading.hung}
        detected = min(since.values(), default=None)
        if hang is not None and detected is not None:
            hang = replace(hang, detected_at=detected.isoformat(timespec="milliseconds"))
        self._publish(Live(reading, hang, detected, self.live.wedged, tuple(problems), since))

    def _publish(self, live: Live) -> None:
        self.live = live = replace(live, jobs={job: tuple(nodes) for job, nodes in self._jobs.items()})
        if self.on_change is not None:
            self.on_change(live)


def for_session(
    cluster: Cluster | None, sources: Mapping[str, str], on_change: Callable[[Live], None] | None = None
) -> tuple[Watcher, str]:
    """The watch of a live session over ``cluster``'s nodes, else those its sources are read from
    (``sources``: name -> SSH target, as ``W`` captures on), else this machine, with the user's settings; and
    what kept the settings from being used ("" when nothing did)."""
    from sparktui.core.stacks.session import targets_of  # beside the gathering: asyncssh, not at start

    problem = ""
    try:
        found = settings.load()
    except settings.SettingsError as exc:
        found, problem = settings.Settings(), f"settings not used, the defaults are: {exc}"
    targets, where = targets_of(cluster, sources)
    watcher = Watcher(
        targets, where, found.liveness, py_spy=found.stacks.py_spy, ras_port=found.stacks.ras_port, on_change=on_change
    )
    return watcher, problem


def named(rank: Rank) -> Rank:
    """``rank`` on the node the cluster names it by: its ``NCCL_HOSTID``, else its node's name."""
    host = rank.env.get("NCCL_HOSTID") or node_name(rank.node)
    return rank if host == rank.node else replace(rank, node=host)


def node_name(node: str) -> str:
    """A node as the cluster names it: this machine's host name for "local"."""
    return socket.gethostname() if node == "local" else node


def is_wedged(gpu: Gpu, watts: float) -> bool:
    """A GPU at :data:`WEDGED_UTILISATION` or more drawing less than ``watts`` (a kernel spinning in place);
    False where either reading is missing."""
    util, power = _NUMBER.search(gpu.utilization), _NUMBER.search(gpu.power)
    return util is not None and power is not None and float(util[0]) >= WEDGED_UTILISATION and float(power[0]) < watts
