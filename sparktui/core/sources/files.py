"""Log files, directories of them and gzip-compressed ones, read in blocks of complete lines.

Every file is one source. Reading never fails on content: undecodable bytes are replaced, CRLF is
normalised, escape sequences are removed before matching, and a line of several megabytes is cut into
pieces of :data:`MAX_LINE` bytes rather than held whole. A file that cannot be opened is reported with a
one-line reason and the other sources carry on.
"""

from __future__ import annotations

import gzip
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, cast

import regex

from sparktui.core.text import decode

BLOCK = 1 << 20
MAX_LINE = 8 << 20
_SNIFF = 8192
_NCCL_HOST = regex.compile(rb"^(?:\[[\d-]+ [\d:.]+\] )?([A-Za-z0-9][\w.-]*):\d+:\d+ \[\d+\] ", regex.MULTILINE)
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
        m = _NCCL_HOST.search(head)
        if m is not None:
            return str(m.group(1).decode("ascii", "replace"))
        return node_from_path(self.path)

    def blocks(self) -> Iterator[str]:
        """Decoded blocks of complete lines, without the final newline of each block."""
        with self.open() as fh:
            try:
                yield from read_blocks(fh)
            except (OSError, EOFError, gzip.BadGzipFile) as exc:
                raise SourceError(f"{self.name}: read failed: {exc}") from None


def read_blocks(fh: BinaryIO, block: int = BLOCK) -> Iterator[str]:
    pending = b""
    while True:
        chunk = fh.read(block)
        if not chunk:
            break
        data = pending + chunk
        cut = data.rfind(b"\n")
        if cut < 0:
            pending = data
            if len(data) >= MAX_LINE:  # a line with no end in sight: hand it over in pieces
                yield _text(data[:MAX_LINE])
                pending = data[MAX_LINE:]
            continue
        pending = data[cut + 1 :]
        yield _text(data[:cut])
    if pending:
        yield _text(pending.rstrip(b"\n"))


def _text(data: bytes) -> str:
    text = decode(data)
    if "\r" in text:
        text = text.replace("\r\n", "\n")
    return text


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
