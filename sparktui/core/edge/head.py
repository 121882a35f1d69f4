"""``sparktui diagnose --edge ray://head``: every alive node scans its own logs, as a Ray actor, and only what
the correlation needs comes back.

:class:`RayEdge` lists the nodes and their log files as the pulled ``ray://`` source does
(:func:`~sparktui.core.sources.ray.ray_log_sources`: the same files, the same source names and nodes),
adds the files and containers the cluster file names for each node (:mod:`~.targets`: the Ray node that is
the cluster file's node, by name or address), connects to the cluster as a Ray driver whose runtime
environment is the :mod:`~.shipment` (sparktui's core and the catalogue), and places one
:class:`~.scanner.NodeScan` actor on each node: pinned to it
(``NodeAffinitySchedulingStrategy(soft=False)``), asking for no CPU, so it fits beside whatever the node
runs. What each actor hands over streams back as it is made and goes to the pipeline's intake (a
:class:`~sparktui.core.intake.sink.Sink`); read once, the intake merges it in source order, as it does a
directory scanned in worker processes, so the findings are those of the pulled logs.

A node whose actor has not said it is up within :data:`PLACE_SECONDS` (Ray could not place it, its runtime
environment or its worker process did not start), whose actor failed (its Python lacks what the scan
imports, its catalogue's digest differs) or died while scanning, is a finding of its own: one line, with the
reason Ray gave, in a source of its own that the catalogue's ``ray-edge-scan-not-run`` signature names. Its
Ray logs are then pulled through Ray's log API instead, and the cluster file's files and containers over
SSH, each from the byte after the last line its actor handed over (a container: from its reader's cursor),
so no line is counted twice. A node of the cluster file that is no alive Ray node gets the same finding and
its files and containers are read over SSH. The cluster file's sources of other kinds (a journal unit,
``/metrics``) are pulled as the cockpit reads them while following, and named as not read when read once.

Ray is imported when a scan starts, never with this module. One driver per process: one edge at a time,
run once.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import re
import threading
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any

from sparktui.core.analysis.handover import Done
from sparktui.core.analysis.scan import Scanned
from sparktui.core.catalogue import Catalogue
from sparktui.core.cluster import Cluster
from sparktui.core.edge import shipment
from sparktui.core.edge.scanner import Found, Item, Later, NodeScan, Reached, unpack
from sparktui.core.edge.targets import FILE, RAY, ClusterLog, Target, cluster_logs, match_nodes
from sparktui.core.errors import Refused, Unavailable
from sparktui.core.events import SourceNote, StateChange
from sparktui.core.intake.sink import Producer, Sink
from sparktui.core.sources.base import Cursor, LiveSource, Received, SourceGroup, expand, retrying
from sparktui.core.sources.bridge import Bridge
from sparktui.core.sources.open import Opener, SshContainer
from sparktui.core.sources.ray import DEFAULT_GLOBS, RayLogSource, parse_address, ray_log_sources, source_name

#: A Ray actor handle (Ray's own types do not follow a remote class's async generator methods).
ActorHandle = Any

#: Seconds a node's actor has to say it is up (placed, its runtime environment unpacked, the rules compiled).
PLACE_SECONDS = 60.0
#: Batches from one node waiting for the sink; beyond it the node's stream waits.
BATCHES = 64
#: The file name of the source that says a node's scan could not run there.
NOTE_FILE = "sparktui-edge"
#: The Ray namespace the actors live in.
NAMESPACE = "sparktui-edge"
#: Seconds the driver's shut-down waits for the threads still inside a Ray call once the actors are killed.
SHUTDOWN_SECONDS = 30.0
#: How a fallen-back node's logs are pulled, as its finding's line says.
RAY_API, SSH = "through the Ray log API", "over SSH"
#: The most of Ray's reason kept in a finding's line.
REASON_CHARS = 400

_CAUSES = re.compile(r"\s+(?:Some common causes|There are some potential root causes|The actor never ran)\b.*", re.S)
_EXCEPTION = re.compile(r"^\s*(?:[\w.]+\.)?(?:\w+Error|\w+Exception|CatalogueMismatch|Refused): .+")


@dataclass(slots=True)
class _TargetScan:
    """How far a node's scan of one target got: its last hand-over (and, streamed, its reader's cursor),
    and whether the target is done. ``ray`` is the pulled source of a Ray log, ``log`` the cluster file's
    source of a file or container: what reads the rest of it where the node's scan cannot."""

    ray: RayLogSource | None = None
    log: ClusterLog | None = None
    last: Scanned | None = None
    cursor: Cursor | None = None
    done: bool = False

    @property
    def target(self) -> Target:
        if self.log is not None:
            return self.log.target
        assert self.ray is not None
        return Target(self.ray.name, self.ray.node, RAY, self.ray.filename)


@dataclass(slots=True)
class Totals:
    """What the edge moved: the results' bytes as they crossed, the package once, the logs read on the nodes."""

    results: int = 0
    package: int = 0
    read: int = 0  # bytes of log files the nodes scanned
    nodes: list[str] = field(default_factory=list)  # scanned at the edge
    pulled: list[str] = field(default_factory=list)  # fell back to the log API (and SSH)
    unread: list[str] = field(default_factory=list)  # the cluster file's sources of no kind read here


class RayEdge(Producer):
    """The edge scan of the cluster at ``address`` (``ray://head[:port]``): the files :func:`ray_log_sources`
    lists (``glob``, ``node_filter``), read once (``follow=False``, then it ends) or followed."""

    def __init__(
        self,
        address: str,
        catalogue: Catalogue,
        glob: str | None = None,
        *,
        follow: bool,
        node_filter: str | None = None,
        place_seconds: float = PLACE_SECONDS,
        cluster: Cluster | None = None,
        trust_new_host_key: bool = False,
    ) -> None:
        parse_address(address)
        self.name = address
        self.catalogue = catalogue
        self.glob, self.node_filter = glob, node_filter
        self.follow = follow
        self.finite = not follow
        self.place_seconds = place_seconds
        self.cluster = cluster
        self.opener = Opener(trust_new_host_key=trust_new_host_key)
        self.totals = Totals()
        self._ray = _Driver()

    async def run(self, sink: Sink) -> None:
        """List, ship, place, stream; returns when every node's files are read (or never, followed)."""
        sources = await retrying(self.name, self._list, sink.report, ended=lambda s: f"{len(s)} sources")
        if not sources:
            return
        nodes: dict[str, list[_TargetScan]] = {}
        for source in sources:
            nodes.setdefault(source.node_id, []).append(_TargetScan(ray=source))
        elsewhere, others, added = self._cluster_logs(nodes)
        # Listed as the logs would be pulled: Ray's, then the cluster file's, node by node in its order.
        ray = [p for files in nodes.values() for p in files if p.ray is not None]
        sink.listed([(p.target.name, p.target.node) for p in [*ray, *added]])
        pulls = [self._unread(uri, sink) for uri in others]
        pulls += [
            self._fall_back(
                files, f"could not start: it is not an alive node of the Ray cluster at {self.name}", sink, node
            )
            for node, files in elsewhere.items()
        ]
        package = await asyncio.to_thread(shipment.build, self.catalogue)
        self.totals.package = package.size
        try:
            await asyncio.to_thread(self._connect, package)
        except Exception as exc:  # no driver, no actor: every node is pulled
            reason = f"could not start: no Ray driver could connect to {self.name}: {_reason(exc)}"
            await asyncio.gather(*pulls, *(self._fall_back(files, reason, sink) for files in nodes.values()))
            return
        try:
            await asyncio.gather(
                *pulls, *(self._node(node_id, files, package.digest, sink) for node_id, files in nodes.items())
            )
        finally:
            await asyncio.to_thread(self._ray.shutdown)

    def _cluster_logs(
        self, nodes: dict[str, list[_TargetScan]]
    ) -> tuple[dict[str, list[_TargetScan]], list[str], list[_TargetScan]]:
        """Add to each Ray node's targets the files and containers the cluster file names for it; returns
        the cluster file's nodes that are no alive Ray node, with theirs, the sources of other kinds, and
        every target added, in the cluster file's order."""
        if self.cluster is None:
            return {}, [], []
        by_name = {files[0].target.node: files for files in nodes.values()}
        matched = match_nodes(by_name, self.cluster)
        elsewhere: dict[str, list[_TargetScan]] = {}
        others: list[str] = []
        added: list[_TargetScan] = []
        for node in self.cluster.nodes:
            logs, theirs = cluster_logs(self.cluster, node)
            others += theirs
            ray_name = next((r for r, n in matched.items() if n == node), None)
            files = by_name[ray_name] if ray_name is not None else elsewhere.setdefault(node.name, [])
            theirs_here = [_TargetScan(log=log) for log in logs]
            files += theirs_here
            added += theirs_here
        return {n: files for n, files in elsewhere.items() if files}, others, added

    async def _unread(self, uri: str, sink: Sink) -> None:
        """A source of the cluster file of a kind no node reads (a journal unit, ``/metrics``): pulled, as
        the cockpit reads it, while following; read once, it is named as not read."""
        if not self.follow:
            self.totals.unread.append(uri)
            return
        for found in self.opener.open([uri]):
            for source in await expand(found, sink.report) if isinstance(found, SourceGroup) else [found]:
                await sink.read(source)

    async def _list(self) -> list[RayLogSource]:
        """The files, as the pulled source lists them (read once, an unreachable head ends it: refused)."""
        try:
            return await asyncio.to_thread(
                ray_log_sources, self.name, self.glob, node_filter=self.node_filter, follow=self.follow
            )
        except Unavailable as exc:
            if self.follow:
                raise
            raise Refused(str(exc)) from None

    def _connect(self, package: shipment.Shipment) -> None:
        import ray

        ray.init(
            address=str(parse_address(self.name)),
            namespace=NAMESPACE,
            runtime_env={"working_dir": str(package.path)},
            log_to_driver=False,
            logging_level=logging.ERROR,
        )

    async def _node(self, node_id: str, files: list[_TargetScan], digest: str, sink: Sink) -> None:
        """One node: its actor placed and checked in time, then its stream until it ends or breaks."""
        node = files[0].target.node
        try:
            actor = await asyncio.to_thread(self._place, node_id, node, files, digest)
        except Exception as exc:
            await self._fall_back(files, f"could not start: {_reason(exc)}", sink)
            return
        if isinstance(actor, str):
            await self._fall_back(files, actor, sink)
            return
        self.totals.nodes.append(node)
        by_name = {p.target.name: p for p in files}
        stream = Bridge(
            lambda: self._ray.stream(actor),
            limit=BATCHES,
            name=f"edge scan {node}",
            interrupt=lambda: self._ray.kill(actor),
        )
        try:
            while (batches := await stream.take()) is not None:
                for data in batches:
                    self.totals.results += len(data)
                    for item in unpack(data):
                        self._take(item, node_id, files, by_name, sink)
        except Exception as exc:
            await self._fall_back(files, f"stopped: {_reason(exc)}", sink)
        finally:
            stream.close()
            await asyncio.to_thread(self._ray.kill, actor)

    def _take(
        self, item: Item, node_id: str, files: list[_TargetScan], by_name: dict[str, _TargetScan], sink: Sink
    ) -> None:
        if isinstance(item, StateChange | SourceNote):
            sink.report(item)
            return
        if isinstance(item, Found):  # a Ray log the node found since: listed, then its lines; pulled like the others
            t = item.target
            found = _TargetScan(ray=RayLogSource(self.name, node_id, t.where, node_name=t.node, follow=self.follow))
            files.append(found)
            by_name[t.name] = found
            sink.listed([(t.name, t.node)])
            return
        progress = by_name[item.source]
        if isinstance(item, Reached):
            progress.cursor = item.cursor
            return
        if isinstance(item, Done):
            progress.done = True
        else:  # counted as it comes: a followed file is never done, and a session ends with it still read
            self.totals.read += item.read_bytes - (progress.last.read_bytes if progress.last is not None else 0)
            progress.last = item
        sink.scanned(item)

    def _place(self, node_id: str, node: str, files: list[_TargetScan], digest: str) -> ActorHandle | str:
        """The node's actor once it said it is up; or why not, when it did not say so in time."""
        import ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        remote: Any = ray.remote(NodeScan)
        with self._ray.call():
            actor = remote.options(
                num_cpus=0,
                max_restarts=0,
                scheduling_strategy=NodeAffinitySchedulingStrategy(node_id, soft=False),
            ).remote(digest, node, [p.target for p in files], follow=self.follow, later=self._later(node))
            self._ray.made(actor)
            hello = actor.hello.remote()
            ready, _ = ray.wait([hello], timeout=self.place_seconds)
            if not ready:
                state = _actor_state(actor, self.name)
                self._ray.kill(actor)
                return f"did not start within {self.place_seconds:.0f} s (Ray lists its actor as {state})"
            ray.get(hello)
            return actor

    def _later(self, node: str) -> Later | None:
        """Followed, what the node's scan looks for in its Ray log folder later: the files the listing matched."""
        if not self.follow:
            return None
        return Later((self.glob,) if self.glob else DEFAULT_GLOBS, source_name(self.name, node, ""))

    async def _fall_back(self, files: list[_TargetScan], why: str, sink: Sink, node: str | None = None) -> None:
        """Say why the node's scan could not run there, then pull what its actor did not hand over: Ray's
        logs through the log API, the cluster file's files and containers over SSH."""
        node = node or files[0].target.node
        self.totals.pulled.append(node)
        ways = [RAY_API] if any(p.ray is not None for p in files) else []
        ways += [SSH] if any(p.log is not None for p in files) else []
        line = f"sparktui edge: the scan of node {node} {why}; its logs are pulled {' and '.join(ways)} instead"
        note = NodeNote(source_name(self.name, node, NOTE_FILE), node, line)
        await asyncio.gather(sink.read(note), *(self._pull(p, sink) for p in files if not p.done))

    async def _pull(self, progress: _TargetScan, sink: Sink) -> None:
        """The rest of one target, read here: from the byte after its last hand-over (a file), or from its
        reader's last cursor (a container)."""
        start = progress.last.read_bytes if progress.last is not None else 0
        if progress.ray is not None:
            s = progress.ray
            pull = RayLogSource(s.address, s.node_id, s.filename, node_name=s.node, follow=self.follow, start=start)
            await sink.read(pull, progress.last)
            return
        assert progress.log is not None
        log = progress.log
        node = self.opener.node_for(log.ssh)
        if progress.target.kind == FILE:
            from sparktui.core.sources.ssh import SshFileSource  # asyncssh: only when a file is pulled

            file = SshFileSource(node, log.ssh.target, progress.target.name, follow=self.follow, start=start)
            await sink.read(file, progress.last)
            return
        group = SshContainer(log.uri, node, progress.target.where, follow=self.follow, start=progress.cursor)
        for source in await expand(group, sink.report):
            await sink.read(source, progress.last)


class NodeNote(LiveSource):
    """One line that sparktui says about a node (its scan could not run there), as a source that ends."""

    finite = True

    def __init__(self, name: str, node: str, text: str) -> None:
        self.name, self.node, self.text = name, node, text

    async def stream(self, cursor: Cursor | None) -> AsyncIterator[Received]:
        if cursor is None:
            yield Received((self.text,), 1)


class _Driver:
    """The calls a run makes through this process's Ray driver, from the threads it starts. Ray ends the whole
    process (status 1, not a word on stderr) when a call reaches the driver's core worker after
    ``ray.shutdown()``, as a node's stream still waiting in ``ray.wait`` for its actor's next batch did when a
    followed run was stopped. So :meth:`shutdown` kills the actors first, which ends every call waiting on
    one, lets no call start, and shuts the driver down once every call has returned."""

    def __init__(self) -> None:
        self._state = threading.Condition()  # guards the three fields below
        self._calls = 0
        self._ending = False
        self._actors: list[ActorHandle] = []

    @contextlib.contextmanager
    def call(self) -> Iterator[None]:
        """Around every use of the driver that may run while it is shut down (raises once it is)."""
        with self._state:
            if self._ending:
                raise Unavailable("the Ray driver is shutting down")
            self._calls += 1
        try:
            yield
        finally:
            with self._state:
                self._calls -= 1
                self._state.notify_all()

    def made(self, actor: ActorHandle) -> None:
        """An actor placed, for :meth:`shutdown` to kill (at once, where it has begun)."""
        with self._state:
            self._actors.append(actor)
            ending = self._ending
        if ending:
            _kill(actor)

    def stream(self, actor: ActorHandle) -> Iterator[bytes]:
        """What the actor's scan hands over, batch by batch; Ray's references let go of within the call."""
        import ray

        with self.call():
            batches = actor.scan.remote()
            try:
                for ref in batches:
                    yield ray.get(ref)
            finally:
                batches = ref = None  # let go of inside the call: Ray frees them through the driver

    def kill(self, actor: ActorHandle) -> None:
        with contextlib.suppress(Unavailable), self.call():
            _kill(actor)

    def shutdown(self) -> None:
        import ray

        with self._state:
            self._ending = True
            actors = list(self._actors)
        for actor in actors:
            _kill(actor)
        with self._state:
            self._state.wait_for(lambda: self._calls == 0, timeout=SHUTDOWN_SECONDS)
        gc.collect()  # what still holds a Ray reference in a cycle (an exception kept) is freed while it can be
        ray.shutdown()


def _kill(actor: ActorHandle) -> None:
    import ray

    with contextlib.suppress(Exception):  # already gone, or the driver is shutting down: nothing left to stop
        ray.kill(actor)


def _actor_state(actor: ActorHandle, address: str) -> str:
    """Where Ray says a pending actor is (``PENDING_CREATION``, ``DEPENDENCIES_UNREADY``...)."""
    from ray.util.state import get_actor

    try:
        state = get_actor(actor._actor_id.hex(), address=str(parse_address(address)), timeout=10)
    except Exception as exc:
        return f"unknown: {_reason(exc)}"
    return str(state.state) if state is not None else "unknown to the head"


def _reason(exc: BaseException) -> str:
    """Ray's reason for an actor that could not start or died, in one line: the sentence that says why
    (``The actor is dead because its worker process has died...``), or the exception a creation task
    raised (``ModuleNotFoundError: No module named 'regex'``), without the list of common causes."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    raised = [line for line in lines if _EXCEPTION.match(line)]
    said = [line for line in lines if line.startswith(("The actor is dead", "The actor is not schedulable"))]
    if said and (not raised or "worker process has died" in said[-1]):
        chosen = said[-1]
    elif raised:
        chosen = raised[-1]
    else:
        chosen = lines[0] if lines else type(exc).__name__
    chosen = _CAUSES.sub("", chosen).strip()
    return chosen if len(chosen) <= REASON_CHARS else chosen[: REASON_CHARS - 1] + "…"
