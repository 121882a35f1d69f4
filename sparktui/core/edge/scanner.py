"""What runs on a node: the scan half of the analysis over that node's own log files, as one Ray actor.

:class:`NodeScan` is placed on its node by :mod:`~sparktui.core.edge.nodes` and started in the working
directory that Ray unpacked there from the :mod:`~sparktui.core.edge.shipment`: it loads the catalogue
shipped with it, refuses to run when its digest is not the one the driver sent (old and new catalogues
never mix), and compiles the rules once. :meth:`NodeScan.scan` is a streaming generator: batches of
hand-overs, each pickled and compressed into one ``bytes`` (:func:`pack`: what crosses the network is
exactly what it says), made by the very code that scans a directory in worker processes
(:func:`~sparktui.core.analysis.pool.scan_file`).

Each file is one source, named and placed as the pulled ``ray://`` source of the same file is
(:func:`~sparktui.core.sources.ray.source_name`, the node's Ray name), and cut into lines as Ray's log API
delivers them: a partial last line waits for its newline, as it does while a file is followed there. Read
once (``follow=False``), the files are read to their end, one after another; followed, they are followed
like ``tail -F``, side by side, and what their lines make is handed over as it comes.
"""

from __future__ import annotations

import asyncio
import os
import pickle
import zlib
from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path

from sparktui.core import catalogue as cat
from sparktui.core.analysis.pool import Done, Task, scan_file
from sparktui.core.analysis.scan import Rules, Scan, Scanned
from sparktui.core.edge.shipment import load_shipped
from sparktui.core.errors import Refused
from sparktui.core.events import State, StateChange
from sparktui.core.lines import BytesRead, LineSplitter
from sparktui.core.sources.base import Received, supervise
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
#: The shipment's root, as unpacked on the node: this file is its sparktui/core/edge/scanner.py.
ROOT = Path(__file__).resolve().parents[3]

#: What one batch holds: hand-overs, ends of files, and (followed) what happened to a file.
Item = Scanned | Done | StateChange


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

    def node_after(self, first_block: str, node: str) -> str:
        return node


class NodeScan:
    """One node's scan. ``files`` are (source name, path) pairs, a path relative to the node's Ray log
    folder or absolute; ``logs`` is that folder (asked of Ray on the node when not given)."""

    def __init__(
        self,
        digest: str,
        node: str,
        files: Sequence[tuple[str, str]],
        *,
        follow: bool,
        logs: str | None = None,
        root: Path = ROOT,
    ) -> None:
        catalogue = load_shipped(root)
        found = cat.digest(catalogue)
        if found != digest:
            raise CatalogueMismatch(
                f"the catalogue shipped to node {node} has digest {found[:12]}, not {digest[:12]} as the driver's: "
                "old and new catalogues never mix"
            )
        self.digest, self.node, self.follow = digest, node, follow
        folder = Path(logs if logs is not None else _ray_logs())
        self.files = [(name, folder / path) for name, path in files]
        self.rules = Rules(catalogue)

    async def hello(self) -> tuple[str, int]:
        """The digest it runs with and its process id: it is up, with its catalogue checked."""
        return self.digest, os.getpid()

    async def scan(self) -> AsyncIterator[bytes]:
        """The files' hand-overs, pickled batch by batch; read once, the last batch holds the last file's
        :class:`Done`, then the generator ends; followed, it never ends."""
        if not self.follow:
            for name, path in self.files:
                for item in scan_file(self.rules, Task(LogFile(path, name, self.node), self.node)):
                    yield pack([item])
            return
        async for batch in self._followed():
            yield pack(batch)

    async def _followed(self) -> AsyncIterator[list[Item]]:
        """Every file followed at once; one batch for what arrived while the previous one was scanned, and
        what happened to the files (a file missing, rotated away) at most :data:`CHANGES_EVERY` s later."""
        waiting: asyncio.Queue[tuple[str, Received]] = asyncio.Queue(QUEUE_BATCHES)
        scans = {name: Scan(self.rules, name, self.node) for name, _ in self.files}
        offsets = dict.fromkeys(scans, 0)
        changes: list[StateChange] = []

        async def deliver(name: str, received: Received) -> None:
            await waiting.put((name, received))

        tasks = [
            asyncio.create_task(supervise(FollowedFile(path, name, self.node), deliver, changes.append))
            for name, path in self.files
        ]
        try:
            while True:
                try:  # asyncio.timeout: wait_for can swallow a cancel that comes as the get succeeds
                    async with asyncio.timeout(CHANGES_EVERY):
                        arrived = [await waiting.get()]
                except TimeoutError:
                    arrived = []
                while not waiting.empty():
                    arrived.append(waiting.get_nowait())
                batch: list[Item] = [c for c in changes if c.state is not State.CONNECTING]
                changes.clear()
                fed: dict[str, Scan] = {}
                for name, received in arrived:
                    offsets[name] = FilePosition.of(received.cursor).offset
                    if received.lines:
                        scans[name].feed("\n".join(received.lines))
                        fed[name] = scans[name]
                batch += [scan.take(read_bytes=offsets[name]) for name, scan in fed.items()]
                if batch:
                    yield batch
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)


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
