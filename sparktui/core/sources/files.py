"""Log files, directories of them and gzip-compressed ones, read in blocks of complete lines.

Every file is one source. Reading never fails on content: undecodable bytes are replaced, CRLF is
normalised, escape sequences are removed before matching, and a line of several megabytes is cut into
pieces of :data:`MAX_LINE` bytes rather than held whole. A file that cannot be opened is reported with a
one-line reason and the other sources carry on.
"""

from __future__ import annotations

import asyncio
import gzip
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, cast

from sparktui.core.classify import node_in
from sparktui.core.errors import Refused
from sparktui.core.lines import LineSplitter
from sparktui.core.sources.base import Cursor, LiveSource, Received
from sparktui.core.text import decode

BLOCK = 1 << 20
_SNIFF = 8192
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
        ".xz",
        ".bz2",
        ".zst",
        ".npy",
    }
)


class SourceError(Exception):
    """A source that cannot be read; the message is one line meant for the user."""


@dataclass(frozen=True, slots=True)
class FileSource:
    path: Path
    name: str  # shown to the user and used in evidence
    node: str | None = None  # known from elsewhere (a bundle's manifest); else found in the content

    @property
    def compressed(self) -> bool:
        return self.path.suffix == ".gz"

    def open(self) -> BinaryIO:
        try:
            if self.compressed:
                return cast(BinaryIO, gzip.open(self.path, "rb"))
            return self.path.open("rb")
        except OSError as exc:
            raise SourceError(f"{self.name}: cannot open: {exc.strerror or exc}") from None

    def size(self) -> int:
        """Its size in bytes as stored (compressed, for a .gz file); 0 where it cannot be looked at."""
        try:
            return self.path.stat().st_size
        except OSError:
            return 0

    def default_node(self) -> str:
        """The node this file comes from: as declared, else the host in its NCCL lines, else a name made
        from the path."""
        if self.node:
            return self.node
        try:
            with self.open() as fh:
                head = fh.read(256 * 1024)
        except (OSError, EOFError, SourceError):
            head = b""
        return node_in(decode(head)) or node_from_path(self.path)

    def blocks(self) -> Iterator[str]:
        """Decoded blocks of complete lines, without the final newline of each block."""
        with self.open() as fh:
            try:
                yield from read_blocks(fh)
            except (OSError, EOFError, gzip.BadGzipFile) as exc:
                raise SourceError(f"{self.name}: read failed: {exc}") from None


class FileRead(LiveSource):
    """A file read once, to its end, as a live source: blocks of complete lines, the cursor the count of
    lines handed over. Without a declared node, the node is learnt from the first block (the host in its
    NCCL lines), else named from the path. A file that cannot be read raises :class:`Refused` with one
    line; what was read before stays read."""

    finite = True

    def __init__(self, file: FileSource) -> None:
        self.file = file
        self.name = file.name
        self.node = file.node or node_from_path(file.path)

    async def stream(self, cursor: Cursor | None) -> AsyncIterator[Received]:
        skip = int(cursor) if isinstance(cursor, int) else 0
        done = 0
        try:
            for block in self.file.blocks():
                lines = block.split("\n")
                if done == 0 and not self.file.node:
                    self.node = node_in(block) or self.node
                done += len(lines)
                if done > skip:
                    yield Received(tuple(lines[max(skip - done + len(lines), 0) :]), done)
                await asyncio.sleep(0)  # let the other sources and the consumer run between blocks
        except SourceError as exc:
            raise Refused(str(exc)) from None


def read_blocks(fh: BinaryIO, block: int = BLOCK) -> Iterator[str]:
    """Decoded blocks of complete lines, read ``block`` bytes at a time."""
    lines = LineSplitter()
    while chunk := fh.read(block):
        text = lines.feed_block(chunk)
        if text is not None:
            yield text
    yield from lines.rest()


def node_from_path(path: Path) -> str:
    name = path.name
    for suffix in (".gz", ".log", ".txt", ".out", ".err"):
        name = name.removesuffix(suffix)
    if name.lower() in _GENERIC_STEMS and path.parent.name:
        return path.parent.name
    return name or path.name


def looks_binary(path: Path) -> bool:
    if path.suffix.lower() in _BINARY_SUFFIXES:
        return True
    if path.suffix == ".gz":
        return False
    try:
        with path.open("rb") as fh:
            head = fh.read(_SNIFF)
    except OSError:
        return False  # reported when it is read
    return head.count(0) > len(head) // 10


def unique_names(sources: list[FileSource]) -> list[FileSource]:
    seen: dict[str, int] = {}
    for s in sources:
        seen[s.name] = seen.get(s.name, 0) + 1
    return [FileSource(s.path, str(s.path) if seen[s.name] > 1 else s.name, s.node) for s in sources]
