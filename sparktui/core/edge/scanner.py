"""What runs on a node: the scan half of the analysis over that node's own log files, as one Ray actor.

:class:`NodeScan` is placed on its node by :mod:`~sparktui.core.edge.head` and started in the working
directory that Ray unpacked there from the :mod:`~sparktui.core.edge.shipment`: it loads the catalogue
shipped with it, refuses to run when its digest is not the one the driver sent (old and new catalogues
never mix), and compiles the rules once. :meth:`NodeScan.scan` is a streaming generator: batches of
hand-overs, each pickled and compressed into one ``bytes`` (:func:`pack`: what crosses the network is
exactly what it says), made by the very code that scans a directory in worker processes
(:func:`~sparktui.core.analysis.pool.scan_file`).

Each :class:`~sparktui.core.edge.targets.Target` is one source, named and placed as the pulled source of
the same log is. A file (of the node's Ray log folder, or a path the cluster file names) is cut into lines
as Ray's log API delivers them: a partial last line waits for its newline, as it does while a file is
followed there. A container's logs come from the node's own Docker engine (``DOCKER_HOST``, else its
socket), and its reader's cursor goes back with its hand-overs (:class:`Reached`), so that a pull of the
rest starts where the node stopped. Read once (``follow=False``), the files are read to their end, one after
another, then the containers' logs until now; followed, every target is followed side by side (files like
``tail -F``) and what their lines make is handed over as it comes. Followed, the node also lists its Ray log
folder again every :data:`RELIST_SECONDS` (:class:`Later`: the files the driver's listing matched), and each
file there that is no target yet (a worker started since: a job launched after the scan began) becomes one,
said first (:class:`Found`), then followed from its first line, as ``ray://`` does from the driver.
"""

from __future__ import annotations

import asyncio
import fnmatch
import os
import pickle
import time
import zlib
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from sparktui.core import catalogue as cat
from sparktui.core.analysis.handover import Done
from sparktui.core.analysis.pool import Task, scan_file
from sparktui.core.analysis.scan import Rules, Scan, Scanned
from sparktui.core.classify import NodeLearner
from sparktui.core.edge.shipment import load_shipped
from sparktui.core.edge.targets import CONTAINER, FILE, RAY, Target
from sparktui.core.errors import Refused
from sparktui.core.events import SourceNote, State, StateChange
from sparktui.core.lines import BytesRead, LineSplitter
from sparktui.core.remote.names import machine_names
from sparktui.core.sources.base import Cursor, LiveSource, Received, supervise
from sparktui.core.sources.follow import FollowedFile
from sparktui.core.sources.rotation import FilePosition

#: Bytes read from a file at a time (a scan's block).
BLOCK = 1 << 20
#: A followed node's batches waiting to be scanned; beyond it its files wait.
QUEUE_BATCHES = 64
#: Seconds at most before what happened to a followed file (missing, rotated away) is handed over.
CHANGES_EVERY = 0.5
#: zlib's level for a batch.
COMPRESSION = 6
#: Seconds between two listings of a followed node's Ray log folder, for the files that appear later.
RELIST_SECONDS = 2.0
#: The shipment's root, as unpacked on the node: this file is its sparktui/core/edge/scanner.py.
ROOT = Path(__file__).resolve().parents[3]


@dataclass(frozen=True, slots=True)
class Reached:
    """How far a streamed target's reader got (its cursor): where pulling the rest of it starts."""

    source: str
    cursor: Cursor


@dataclass(frozen=True, slots=True)
class Later:
    """What a followed node looks for in its Ray log folder after its scan began: files whose path in the
    folder matches one of ``globs`` (as the driver's listing matched them), named ``prefix`` + that path."""

    globs: tuple[str, ...]
    prefix: str


@dataclass(frozen=True, slots=True)
class Found:
    """A target a followed node found after its scan began (a new worker's log), handed over before its lines."""

    target: Target


#: What one batch holds: hand-overs, ends of files, (followed) what happened to a file and the files found.
Item = Scanned | Done | StateChange | SourceNote | Reached | Found


class CatalogueMismatch(Refused):
    """The catalogue a node loaded is not the one the driver analyses with."""


class LogFile:
    """A node's log file read to its end in blocks of complete lines, as :func:`scan_file` reads files; its
    node is the one it was given (the Ray node), whatever its lines say, as for the pulled source."""

    def __init__(self, path: Path, name: str, node: str) -> None:
        self.path, self.name, self.node = path, name, node

    def blocks(self, counted: BytesRead | None = None) -> Iterator[str]:
        """``counted`` holds, before each block, the byte offset after the last of its lines: where a pull
        of the rest of the file would start."""
        lines = LineSplitter()
        try:
            with self.path.open("rb") as fh:
                while chunk := fh.read(BLOCK):
                    text = lines.feed_block(chunk)
                    if text is not None:
                        if counted is not None:
                            counted.read = lines.offset
                        yield text
        except OSError as exc:
            raise OSError(f"{self.name}: {exc.strerror or exc}") from None

    def learner(self, node: str) -> NodeLearner:
        return NodeLearner(node, node)  # the node it was given: Ray says whose log it is


class NodeScan:
    """One node's scan of ``targets``; ``logs`` is the node's Ray log folder, which a ``ray`` target's file
    is in (asked of Ray on the node when not given)."""

    def __init__(
        self,
        digest: str,
        node: str,
        targets: Sequence[Target],
        *,
        follow: bool,
        logs: str | None = None,
        root: Path = ROOT,
        later: Later | None = None,
    ) -> None:
        catalogue = load_shipped(root)
        found = cat.digest(catalogue)
        if found != digest:
            raise CatalogueMismatch(
                f"the catalogue shipped to node {node} has digest {found[:12]}, not {digest[:12]} as the driver's: "
                "old and new catalogues never mix"
            )
        self.digest, self.node, self.follow = digest, node, follow
        self.targets = list(targets)
        self.later = later if follow else None
        self.folder = Path(logs) if logs is not None else None
        if self.folder is None and (self.later is not None or any(t.kind == RAY for t in self.targets)):
            self.folder = Path(_ray_logs())
        self.rules = Rules(catalogue)
        self.names = machine_names(os.uname().nodename)

    def _new_files(self, known: set[str]) -> list[Target]:
        """The files of the Ray log folder :attr:`later` looks for that are not among ``known`` (paths in the
        folder), in name order; none where the folder cannot be listed (this time)."""
        assert self.later is not None and self.folder is not None
        found = []
        for folder, _, files in os.walk(self.folder):
            for file in files:
                where = Path(folder, file).relative_to(self.folder).as_posix()
                if where not in known and any(fnmatch.fnmatchcase(where, g) for g in self.later.globs):
                    found.append(Target(self.later.prefix + where, self.node, RAY, where))
        return sorted(found, key=lambda t: t.where)

    async def hello(self) -> tuple[str, int]:
        """The digest it runs with and its process id: it is up, with its catalogue checked."""
        return self.digest, os.getpid()

    async def scan(self) -> AsyncIterator[bytes]:
        """The targets' hand-overs, pickled batch by batch; read once, the files one after another, then the
        containers' logs to now, the last batch holding the last :class:`Done`, then the generator ends;
        followed, it never ends."""
        streamed = [t for t in self.targets if self.follow or t.streamed]
        for target in self.targets:
            if target not in streamed:
                file = LogFile(self._path(target), target.name, target.node)
                for item in scan_file(self.rules, Task(file, target.node, self._known(target))):
                    yield pack([item])
        if streamed:
            async for batch in self._streamed(streamed):
                yield pack(batch)

    def _path(self, target: Target) -> Path:
        if target.kind == RAY:
            assert self.folder is not None
            return self.folder / target.where
        return Path(target.where)

    def _known(self, target: Target) -> frozenset[str]:
        """The machine's names, for a log whose pulled source asks them of the machine (a file over SSH)."""
        return self.names if target.kind == FILE else frozenset()

    def _source(self, target: Target) -> LiveSource:
        if target.kind != CONTAINER:
            return FollowedFile(self._path(target), target.name, target.node)
        from sparktui.core.sources.docker import DockerSource  # the Docker SDK: only where a container is read

        return DockerSource(target.where, name=target.name, node=target.node, follow=self.follow)

    async def _streamed(self, targets: list[Target]) -> AsyncIterator[list[Item]]:
        """Every target streamed at once; one batch for what arrived while the previous one was scanned, and
        what happened to the targets (a file missing, rotated away) at most :data:`CHANGES_EVERY` s later.
        Followed, it never ends; read once, it ends when every target did, each with its :class:`Done`."""
        waiting: asyncio.Queue[tuple[str, Received]] = asyncio.Queue(QUEUE_BATCHES)
        scans = {t.name: Scan(self.rules, t.name, t.node, self._known(t)) for t in targets}
        offsets = dict.fromkeys(scans, 0)
        kinds = {t.name: t.kind for t in targets}
        changes: list[StateChange | SourceNote] = []
        failed: dict[str, str] = {}

        def report(change: StateChange | SourceNote) -> None:
            if isinstance(change, StateChange) and change.state is State.FAILED:
                failed[change.source] = change.detail
            changes.append(change)

        async def deliver(name: str, received: Received) -> None:
            await waiting.put((name, received))

        async def read(target: Target) -> None:
            try:
                source = self._source(target)
            except ImportError as exc:  # this node's Python lacks the Docker SDK
                report(StateChange(target.name, State.FAILED, f"cannot read containers on node {self.node}: {exc}"))
                return
            await supervise(source, deliver, report)

        tasks = {t.name: asyncio.create_task(read(t)) for t in targets}
        ended: set[str] = set()
        known = {t.where for t in targets if t.kind == RAY}
        listed = time.monotonic()
        try:
            while len(ended) < len(tasks):
                found: list[Item] = []
                if self.later is not None and time.monotonic() - listed >= RELIST_SECONDS:
                    for target in await asyncio.to_thread(self._new_files, known):
                        known.add(target.where)
                        scans[target.name] = Scan(self.rules, target.name, target.node)
                        offsets[target.name], kinds[target.name] = 0, target.kind
                        tasks[target.name] = asyncio.create_task(read(target))
                        found.append(Found(target))
                    listed = time.monotonic()
                try:  # asyncio.timeout: wait_for can swallow a cancel that comes as the get succeeds
                    async with asyncio.timeout(CHANGES_EVERY):
                        arrived = [await waiting.get()]
                except TimeoutError:
                    arrived = []
                while not waiting.empty():
                    arrived.append(waiting.get_nowait())
                finished = {n for n, t in tasks.items() if t.done() and n not in ended} if waiting.empty() else set()
                quiet = (State.CONNECTING, State.FAILED)  # the head says these: on listing a source, with its Done
                said = [c for c in changes if isinstance(c, SourceNote) or c.state not in quiet]
                batch: list[Item] = [*found, *said]
                changes.clear()
                fed: dict[str, Scan] = {}
                at: dict[str, Cursor] = {}
                for name, received in arrived:
                    if kinds[name] == CONTAINER:
                        at[name] = received.cursor
                    else:
                        offsets[name] = FilePosition.of(received.cursor).offset
                    if received.lines:
                        scans[name].feed("\n".join(received.lines))
                        fed[name] = scans[name]
                batch += [scans[name].take(read_bytes=offsets[name]) for name in fed]
                batch += [Reached(name, cursor) for name, cursor in at.items()]
                for name in sorted(finished):
                    if name not in fed:
                        batch.append(scans[name].take(read_bytes=offsets[name]))
                    batch.append(Done(name, failed.get(name, "")))
                    ended.add(name)
                if batch:
                    yield batch
        finally:
            for task in tasks.values():
                task.cancel()
            await asyncio.gather(*tasks.values(), return_exceptions=True)


def pack(batch: list[Item]) -> bytes:
    """A batch as it crosses the network: pickled, then compressed (stage markers, most of what a scan hands
    over, repeat themselves: zlib makes them about ten times smaller, for a few percent of the scan's time)."""
    return zlib.compress(pickle.dumps(batch, protocol=pickle.HIGHEST_PROTOCOL), COMPRESSION)


def unpack(data: bytes) -> list[Item]:
    """A batch as :func:`pack` made it. Only what the driver's own actors sent is ever unpacked."""
    batch: list[Item] = pickle.loads(zlib.decompress(data))
    return batch


def _ray_logs() -> str:
    """This node's Ray log folder (``<temp dir>/session_*/logs``), from the Ray worker this runs in."""
    import ray._private.worker

    node = ray._private.worker.global_worker.node
    if node is None:
        raise Refused("not running in a Ray worker: no Ray log folder to read")
    return str(node.get_logs_dir_path())
