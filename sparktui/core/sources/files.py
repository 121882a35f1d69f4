"""Log files, directories of them, compressed ones (gzip, xz) and streams (stdin, pipes, FIFOs), read in
blocks of complete lines.

Every file is one source. Reading never fails on content: undecodable bytes are replaced, CRLF is
normalised, escape sequences are removed before matching, and a line of several megabytes is cut into
pieces of :data:`MAX_LINE` bytes rather than held whole. A file that cannot be opened is reported with a
one-line reason and the other sources carry on; a compressed file that is corrupt or cut short gives every
line before the damage, then the reason. A stream is read once, from its start, and nothing of it is read
ahead (the node is learnt from its first block), so nothing is lost to a look at its head.
"""

from __future__ import annotations

import asyncio
import contextlib
import lzma
import stat
import threading
import zlib
from collections.abc import AsyncIterator, Callable, Generator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Generic, TypeVar

from sparktui.core.classify import NodeLearner
from sparktui.core.errors import Refused
from sparktui.core.lines import UTF8, BytesRead, LineSplitter, encoding_of
from sparktui.core.sources.base import Cursor, Extent, LiveSource, Received
from sparktui.core.text import display

BLOCK = 1 << 20
T = TypeVar("T")
_SNIFF = 8192
#: Compressed bytes fed to a decompressor at a time.
PIECE = 16 << 10
#: Compressed bytes fed at a time when a damaged piece is decompressed again.
SALVAGE_STEP = 64
#: The argument that names standard input.
STDIN = "-"
#: The compressed formats read, by suffix: a decompressor for one stream (gzip: one member) of each.
_DECOMPRESSORS: dict[str, Callable[[], zlib._Decompress | lzma.LZMADecompressor]] = {
    ".gz": lambda: zlib.decompressobj(wbits=31),
    ".xz": lzma.LZMADecompressor,
}
_GENERIC_STEMS = frozenset(
    {
        "log",
        "logs",
        "output",
        "out",
        "stdout",
        "stderr",
        "server",
        "engine",
        "console",
        "vllm",
        "sglang",
        "nccl",
        "ray",
        "docker",
        "container",
        "raylet",
        "gcs_server",
        "monitor",
        "driver",
        "api_server",
        "serve",
        "launch",
    }
)
_BINARY_SUFFIXES = frozenset(
    {
        ".tar",
        ".zip",
        ".png",
        ".jpg",
        ".jpeg",
        ".gif",
        ".pdf",
        ".so",
        ".bin",
        ".safetensors",
        ".pt",
        ".pth",
        ".whl",
        ".bz2",
        ".zst",
        ".npy",
    }
)


class SourceError(Exception):
    """A source that cannot be read; the message is one line meant for the user."""


@dataclass(frozen=True, slots=True)
class FileSource:
    """A log file to read once (or stdin): its path, the name it is shown by, and its node where known."""

    path: Path
    name: str  # shown to the user and used in evidence
    node: str | None = None  # known from elsewhere (a bundle's manifest); else found in the content

    def __post_init__(self) -> None:
        # The name and the node are shown as they are made inert here (see Inert, which the live sources use).
        object.__setattr__(self, "name", display(self.name))
        if self.node is not None:
            object.__setattr__(self, "node", display(self.node))

    @property
    def compressed(self) -> bool:
        return self.path.suffix in _DECOMPRESSORS

    @property
    def stream(self) -> bool:
        """Whether it is read once as it comes (stdin, a pipe, a FIFO, a device): not a regular file."""
        try:
            return not stat.S_ISREG(self.path.stat().st_mode)
        except OSError:
            return False

    def open(self) -> BinaryIO:
        try:
            return self.path.open("rb")
        except OSError as exc:
            raise SourceError(f"{self.name}: cannot open: {exc.strerror or exc}") from None

    def size(self) -> int:
        """Its size in bytes as stored (compressed, for a .gz file); 0 where it cannot be looked at."""
        try:
            return self.path.stat().st_size
        except OSError:
            return 0

    def learner(self, node: str) -> NodeLearner:
        """What learns the node of the file's lines as blocks of it are read (``node``: the one it has, made
        from its path), from its first MiB."""
        return NodeLearner(self.node, node, within=BLOCK)

    def default_node(self) -> str:
        """The node this file comes from, as its read learns it (:meth:`learner`) from its first MiB: as
        declared, else the host its NCCL lines name, else a name made from its path where its lines read as a
        log, and none where they are notes about the run (a stream is not looked into: what is read of it is
        gone)."""
        learner = self.learner(node_from_path(self.path))
        if not learner.decided and not self.stream:
            with contextlib.suppress(SourceError), contextlib.closing(self.blocks()) as blocks:
                for block in blocks:
                    learner.learn(block)
                    if learner.decided:
                        break
        return learner.node

    def blocks(self, counted: BytesRead | None = None) -> Generator[str, None, None]:
        """Decoded blocks of complete lines, without the final newline of each block; ``counted`` counts the
        bytes read, as stored (as :meth:`size` counts them). A read that fails raises :class:`SourceError`
        after every complete line read before it."""
        lines = LineSplitter()
        with self.open() as fh:
            try:
                for chunk in self._chunks(fh, counted or BytesRead()):
                    text = lines.feed_block(chunk)
                    if text is not None:
                        yield text
            except (OSError, EOFError, zlib.error, lzma.LZMAError) as exc:
                yield from lines.rest()
                raise SourceError(f"{self.name}: read failed: {exc}") from None
        yield from lines.rest()

    def _chunks(self, fh: BinaryIO, counted: BytesRead) -> Iterator[bytes]:
        """The file's bytes, decompressed as they are read where it is compressed (gzip members one after
        another, as gunzip reads them); damage raises after everything decompressed before it."""
        make = _DECOMPRESSORS.get(self.path.suffix)
        if make is None:
            # read1: what has come, up to a block; a pipe's first lines are not held until a block is full
            read = getattr(fh, "read1", fh.read)
            while chunk := read(BLOCK):
                counted.read += len(chunk)
                yield chunk
            return
        decompressor, fed = make(), False
        while raw := fh.read(PIECE):
            counted.read += len(raw)
            while raw:
                fed = True
                yield from _decompress(decompressor, raw)
                if not decompressor.eof:
                    break
                raw = decompressor.unused_data  # the next member, if any
                decompressor, fed = make(), False
        if fed:
            raise EOFError("the compressed data ends before its end-of-stream marker (the file was cut short)")


class FileRead(LiveSource):
    """A file read once, to its end, as a live source: blocks of complete lines, the cursor the count of
    lines handed over. Without a declared node, the node is learnt from its content (:class:`NodeLearner`),
    else named from the path. A file that cannot be read raises :class:`Refused` with one
    line; what was read before stays read."""

    finite = True
    kind = "file, read once"

    def __init__(self, file: FileSource) -> None:
        self.file = file
        self.name = file.name
        self.node = file.node or node_from_path(file.path)
        self.counted = BytesRead()
        self.size = None if file.stream else file.size()

    def extent(self, cursor: Cursor | None) -> Extent:
        return Extent(self.counted.read, self.size)

    async def stream(self, cursor: Cursor | None) -> AsyncIterator[Received]:
        """The blocks are read on a thread: a FIFO with no writer yet, a slow pipe or a big compressed file
        keeps only this source waiting, never the loop the other sources run on."""
        skip = int(cursor) if isinstance(cursor, int) else 0
        done = 0
        self.counted = BytesRead()
        blocks = DaemonNext(self.file.blocks(self.counted), self.name)
        learner = self.file.learner(self.node)
        try:
            while (block := await blocks.next()) is not None:
                lines = block.split("\n")
                self.node = learner.learn(block)
                done += len(lines)
                if done > skip:
                    yield Received(tuple(lines[max(skip - done + len(lines), 0) :]), done)
        except SourceError as exc:
            raise Refused(str(exc)) from None
        finally:
            blocks.close()


class DaemonNext(Generic[T]):
    """An iterator (of blocks, of hand-overs) advanced on a daemon thread of its own, one item per call of
    :meth:`next` and none read ahead: a read that blocks (a FIFO with no writer yet, a pipe whose writer is
    quiet) neither keeps the process from exiting (the loop's executor threads are waited for at exit) nor
    stops the source from ending. Closed while a read is under way, the iterator is closed by its thread once
    the read returns."""

    def __init__(self, blocks: Iterator[T], name: str) -> None:
        self.blocks = blocks
        self.name = name
        self._asked = threading.Semaphore(0)
        self._closed = False
        self._thread: threading.Thread | None = None
        self._waiting: tuple[asyncio.AbstractEventLoop, asyncio.Future[T | None]] | None = None

    async def next(self) -> T | None:
        loop = asyncio.get_running_loop()
        done: asyncio.Future[T | None] = loop.create_future()
        self._waiting = (loop, done)
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name=f"read {self.name}", daemon=True)
            self._thread.start()
        self._asked.release()
        return await done

    def close(self) -> None:
        self._closed = True
        if self._thread is None:
            self._close()
        else:
            self._asked.release()  # an idle thread wakes and closes it; a reading one does once its read returns

    def _run(self) -> None:
        while True:
            self._asked.acquire()
            if self._closed or self._waiting is None:
                break
            loop, done = self._waiting
            block: T | None = None
            error: BaseException | None = None
            try:
                block = next(self.blocks, None)
            except BaseException as exc:  # handed to the awaiting task, raised there
                error = exc
            if self._closed:
                break
            with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits any more
                loop.call_soon_threadsafe(_settle, done, block, error)
        self._close()

    def _close(self) -> None:
        close = getattr(self.blocks, "close", None)  # a generator's; a plain iterator has nothing to close
        if close is not None:
            close()


def _settle(done: asyncio.Future[T | None], block: T | None, error: BaseException | None) -> None:
    if done.done():
        return
    if error is None:
        done.set_result(block)
    else:
        done.set_exception(error)


def _decompress(decompressor: zlib._Decompress | lzma.LZMADecompressor, raw: bytes) -> Iterator[bytes]:
    """What ``raw`` decompresses to. Where it holds damage, gzip's piece is decompressed again from the
    state before it, a few bytes at a time, so that every byte before the damage comes out first."""
    if isinstance(decompressor, lzma.LZMADecompressor):  # cannot be copied: xz loses the piece
        yield decompressor.decompress(raw)
        return
    before = decompressor.copy()
    try:
        yield decompressor.decompress(raw)
    except zlib.error:
        for at in range(0, len(raw), SALVAGE_STEP):
            yield before.decompress(raw[at : at + SALVAGE_STEP])  # raises again at the damage
        raise


#: The descriptor that ``-`` reads: 0, standard input, unless the cockpit moved standard input elsewhere to give
#: descriptor 0 to the terminal for its keys (:func:`sparktui.commands.cockpit.keys_from_terminal`).
stdin_fd = 0


def stdin() -> FileSource:
    """Standard input (the argument ``-``), read once as a stream."""
    return FileSource(Path("/dev/stdin" if stdin_fd == 0 else f"/dev/fd/{stdin_fd}"), "stdin")


def node_from_path(path: Path) -> str:
    """The node a file's path names (its name, or its folder's for a generic name), inert to show."""
    name = path.name
    for suffix in (*_DECOMPRESSORS, ".log", ".txt", ".out", ".err"):
        name = name.removesuffix(suffix)
    if name.lower() in _GENERIC_STEMS and path.parent.name:
        return _inert(path.parent.name)
    return _inert(name or path.name)


def _inert(name: str) -> str:
    """``name`` as :func:`display` shows it; one that is all escape sequences (shown as nothing) spelt out
    instead, each character that is not printable ASCII as its escape: a node is never nameless."""
    return display(name) or "".join(c if " " <= c <= "~" else c.encode("unicode_escape").decode() for c in name)


def looks_binary(path: Path) -> bool:
    if path.suffix.lower() in _BINARY_SUFFIXES:
        return True
    if path.suffix in _DECOMPRESSORS:
        return False
    try:
        with path.open("rb") as fh:
            head = fh.read(_SNIFF)
    except OSError:
        return False  # reported when it is read
    return head.count(0) > len(head) // 10 and encoding_of(head) == UTF8  # UTF-16 text is half zeros


def unique_names(sources: list[FileSource]) -> list[FileSource]:
    """``sources`` each with a name of its own (its path where names repeat) and, where the files' names would
    give several of them one node (``spark-a/worker.log``, ``spark-b/worker.log``), the folder that tells them
    apart as the node (``spark-a``, ``spark-b``). A node known from elsewhere (a bundle's) is kept."""
    seen: dict[str, int] = {}
    for s in sources:
        seen[s.name] = seen.get(s.name, 0) + 1
    by_node: dict[str, list[Path]] = {}
    for s in sources:
        if s.node is None and s.path.name != "stdin":
            by_node.setdefault(node_from_path(s.path), []).append(s.path)
    nodes: dict[Path, str] = {}
    for paths in by_node.values():
        if len(set(paths)) > 1:
            nodes.update(_telling_folders(paths))
    return [
        FileSource(s.path, str(s.path) if seen[s.name] > 1 else s.name, s.node or nodes.get(s.path)) for s in sources
    ]


def _telling_folders(paths: list[Path]) -> dict[Path, str]:
    """Each path's nearest folder whose name differs among ``paths`` (none where no level tells them apart)."""
    folders = [p.absolute().parent.parts for p in paths]
    for depth in range(1, min(map(len, folders))):
        names = [parts[-depth] for parts in folders]
        if len(set(names)) == len(set(paths)):
            return {p: name for p, name in zip(paths, names, strict=True)}
    return {}
