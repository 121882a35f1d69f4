"""Large log corpora made of the real captures in ``tests/fixtures``, for the throughput bench.

A *capture* is one captured log file (an NCCL rank's output, a vLLM server's, a Ray session file), kept
whole and in line order. Two corpora are built from them:

* the **directory**: one file per node, each a run of whole captures one after another, as if the node had
  been restarted between them. The host names and pids that the captures carry in their prefixes are
  rewritten so that every node is its own host and every restart its own processes; nothing else changes,
  and a rewritten field keeps its format (a pid keeps its number of digits, a node's host name is
  ``node-007``, an address ``10.0.7.1``).
* the **shuffled** file: the directory's lines in one file, in a seeded random order: the worst case for a
  reader that keeps state per source, node and process, since no two neighbouring lines belong together.

The fields rewritten are the ones ``sparktui/core/classify.py`` and ``diagnostics/formats/prefixes.toml``
read a node or a process from, as far as the captures have them: NCCL's ``host:pid:tid [dev]``, the
``pid=`` and ``ip=`` of Ray's and vLLM's process prefixes, the pid and thread of Ray's C++ prefix, and
the capture scripts' own ``host NAME pid N`` and NCCL's ``NCCL_HOSTID set by environment to NAME``.
Numbers in free text ("Process 2812 has 1004 MiB in use") are left alone: they cannot be told apart
from other numbers safely.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"
#: Captured logs: program output (``*.log``) and Ray's session files (``*.out``). The ``meta.txt`` and
#: ``versions.txt`` next to them describe a capture, and ``commands/`` holds command output, not logs.
LOG_SUFFIXES = (".log", ".out")
#: Changing how corpora are made invalidates corpora kept in a ``--work`` folder.
FORMAT = 1
_BUCKET = 64 << 20  # the shuffle holds one bucket of about this many bytes in memory at a time

#: Each pattern names the fields it rewrites: ``host``, ``ip`` or any other group, which is a pid or a
#: thread id (one numbering: a process's main thread has its pid as its id).
_FIELDS = (
    # NCCL: host:pid:tid [cudaDev], at the start of a line or behind a time stamp or a process prefix.
    re.compile(rb"(?<![\w.:-])(?P<host>[A-Za-z0-9_][\w.-]*):(?P<pid>\d+):(?P<tid>\d+)(?= \[\d+\] )"),
    # Ray's and vLLM's process prefix: (APIServer pid=30614), (autoscaler +2s, ip=127.0.0.1).
    re.compile(rb"\((?:[^()\n]*[ ,(])?pid=(?P<pid>\d+)"),
    re.compile(rb"\((?:[^()\n]*[ ,(])?ip=(?P<ip>\d{1,3}(?:\.\d{1,3}){3})\)"),
    # Ray's C++ prefix: [2026-11-30 04:31:10,809 I 4399 4408] (pid, thread).
    re.compile(rb"(?m)^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} [IWEF] (?P<pid>\d+) (?P<tid>\d+)\]"),
    # The capture scripts' first line, and NCCL saying its host id.
    re.compile(rb"\bhost (?P<host>[A-Za-z0-9_][\w.-]*) pid (?P<pid>\d+)\b"),
    re.compile(rb"NCCL_HOSTID set by environment to (?P<host>[A-Za-z0-9_][\w.-]*)"),
)
_LETTER = re.compile(rb"[A-Za-z]")


@dataclass(frozen=True, slots=True)
class Capture:
    """One captured log, cut where its host names, addresses and pids are: ``literals`` has one more item
    than ``fields``, and the text is the literals with the (kind, value) fields between them."""

    name: str
    literals: tuple[bytes, ...]
    fields: tuple[tuple[str, bytes], ...]

    @property
    def size(self) -> int:
        return sum(map(len, self.literals)) + sum(len(v) for _, v in self.fields)

    def render(self, values: dict[tuple[str, bytes], bytes]) -> bytes:
        """The capture with every field replaced by ``values[field]``."""
        out = [self.literals[0]]
        for field, literal in zip(self.fields, self.literals[1:], strict=True):
            out += (values[field], literal)
        return b"".join(out)


def parse_capture(name: str, data: bytes) -> Capture:
    """Cut ``data`` at the fields of :data:`_FIELDS`; a log that does not end its last line gets a newline."""
    if not data.endswith(b"\n"):
        data += b"\n"
    spans: list[tuple[int, int, str]] = []
    for pattern in _FIELDS:
        for m in pattern.finditer(data):
            found = m.groupdict()
            if found.get("host") is not None and not _LETTER.search(found["host"]):
                continue  # a time (12:30:45 [0] ) is not a host
            for group, value in found.items():
                if value is not None:
                    kind = group if group in ("host", "ip") else "pid"
                    spans.append((m.start(group), m.end(group), kind))
    spans.sort()
    literals: list[bytes] = []
    fields: list[tuple[str, bytes]] = []
    at = 0
    for start, end, kind in spans:
        if start < at:
            continue  # two patterns found the same field
        literals.append(data[at:start])
        fields.append((kind, data[start:end]))
        at = end
    literals.append(data[at:])
    return Capture(name, tuple(literals), tuple(fields))


def load_captures(root: Path = FIXTURES) -> list[Capture]:
    """Every captured log under ``root``, in path order."""
    paths = sorted(p for p in root.rglob("*") if p.suffix in LOG_SUFFIXES and p.is_file())
    return [parse_capture(str(p.relative_to(root)), p.read_bytes()) for p in paths]


def host_name(node: int) -> str:
    return f"node-{node:03d}"


class Node:
    """One node of the corpus: its host name and address, and fresh pids for each restart."""

    def __init__(self, index: int, seed: int) -> None:
        self.host = host_name(index).encode()
        self.network = f"10.{(index >> 8) & 255}.{index & 255}.".encode()  # the node's addresses: .1, .2...
        self._rng = random.Random(f"{seed}:{index}")
        self._used: set[bytes] = set()

    def values(self, capture: Capture) -> dict[tuple[str, bytes], bytes]:
        """What the fields of one run (restart) of ``capture`` on this node become: each host the capture
        names is this node (a second one gets a suffix), each address too, and each pid and thread id a
        number of as many digits that no earlier run on this node used."""
        values: dict[tuple[str, bytes], bytes] = {}
        hosts = ips = 0
        for field in dict.fromkeys(capture.fields):
            kind, old = field
            if kind == "host":
                values[field] = self.host if not hosts else self.host + b"-%d" % hosts
                hosts += 1
            elif kind == "ip":
                values[field] = self.network + b"%d" % (ips + 1)
                ips += 1
            else:
                values[field] = self._fresh_pid(len(old))
        return values

    def shuffled(self, captures: Sequence[Capture]) -> list[Capture]:
        deck = list(captures)
        self._rng.shuffle(deck)
        return deck

    def _fresh_pid(self, digits: int) -> bytes:
        while True:
            low, high = 10 ** (digits - 1), min(10**digits - 1, 4_194_303)  # Linux's largest pid
            for _ in range(64):
                pid = b"%d" % self._rng.randint(max(low, 2), high)
                if pid not in self._used:
                    self._used.add(pid)
                    return pid
            digits += 1  # this many digits are used up on this node: take one more


@dataclass(frozen=True, slots=True)
class Corpus:
    """A corpus on disk: ``path`` is a directory of node logs or one file."""

    kind: str  # "directory" or "shuffled"
    path: Path
    size: int  # bytes
    lines: int
    files: int

    @property
    def mib(self) -> float:
        return self.size / (1 << 20)


def node_logs(captures: Sequence[Capture], nodes: int, total: int, seed: int) -> Iterator[tuple[str, bytes]]:
    """(file name, content) of each node's log: whole captures, dealt from a shuffled deck of all of them
    (so each appears about as often), until the node holds about its share of what is left of ``total``
    bytes (the capture that would overshoot the share by more than it fills is put back)."""
    left = total
    for index in range(nodes):
        share = left // (nodes - index)
        node = Node(index, seed)
        deck: list[Capture] = []
        parts: list[bytes] = []
        size = 0
        while size < share:
            if not deck:
                deck = node.shuffled(captures)
            if parts and size + deck[-1].size - share > share - size:
                break
            capture = deck.pop()
            parts.append(capture.render(node.values(capture)))
            size += len(parts[-1])
        left -= size
        yield f"{host_name(index)}.log", b"".join(parts)


def build_directory(path: Path, captures: Sequence[Capture], nodes: int, total: int, seed: int) -> Corpus:
    """Write the directory corpus of ``nodes`` node logs, about ``total`` bytes in all, into ``path``."""
    path.mkdir(parents=True)
    size = lines = 0
    for name, data in node_logs(captures, nodes, total, seed):
        (path / name).write_bytes(data)
        size += len(data)
        lines += data.count(b"\n")
    return Corpus("directory", path, size, lines, nodes)


def build_shuffled(directory: Corpus, path: Path, seed: int) -> Corpus:
    """Write the lines of ``directory`` to the file ``path`` in a seeded random order. The lines are dealt
    at random into buckets of about :data:`_BUCKET` bytes on disk, then each bucket is shuffled in memory
    and appended: a uniform shuffle that never holds more than a bucket."""
    rng = random.Random(f"{seed}:shuffle")
    count = max(1, -(-directory.size // _BUCKET))
    buckets = [path.with_name(f"{path.name}.bucket{k}") for k in range(count)]
    outs = [b.open("wb") for b in buckets]
    try:
        for file in sorted(directory.path.iterdir()):
            lines = file.read_bytes().split(b"\n")[:-1]
            dealt: list[list[bytes]] = [[] for _ in buckets]
            for line, k in zip(lines, rng.choices(range(count), k=len(lines)), strict=True):
                dealt[k].append(line)
            for out, part in zip(outs, dealt, strict=True):
                if part:
                    out.write(b"\n".join(part) + b"\n")
    finally:
        for out in outs:
            out.close()
    with path.open("wb") as fh:
        for bucket in buckets:
            lines = bucket.read_bytes().split(b"\n")[:-1]
            bucket.unlink()
            rng.shuffle(lines)
            if lines:
                fh.write(b"\n".join(lines) + b"\n")
    return Corpus("shuffled", path, path.stat().st_size, directory.lines, 1)


def digest(captures: Sequence[Capture]) -> str:
    """A fingerprint of the captures, so that a kept corpus is remade when the fixtures change."""
    h = hashlib.sha256()
    for c in captures:
        h.update(c.name.encode() + b"\0" + c.render({f: f[1] for f in c.fields}) + b"\0")
    return h.hexdigest()[:16]


def prepare(
    work: Path, kind: str, megabytes: int, nodes: int, seed: int, captures: Sequence[Capture]
) -> tuple[Corpus, bool]:
    """The corpus of ``kind`` and size in ``work``: the one kept there when it was made the same way from
    the same captures, else a new one. Returns the corpus and whether it was made now."""
    key = {"format": FORMAT, "kind": kind, "mb": megabytes, "nodes": nodes, "seed": seed, "fixtures": digest(captures)}
    stem = f"{kind}-{megabytes}mb"
    manifest = work / f"{stem}.json"
    path = work / (stem if kind == "directory" else f"{stem}.log")
    if manifest.exists() and path.exists():
        kept = json.loads(manifest.read_text())
        if kept.get("key") == key:
            return Corpus(kind, path, kept["size"], kept["lines"], kept["files"]), False
    manifest.unlink(missing_ok=True)
    remove(path)
    if kind == "directory":
        corpus = build_directory(path, captures, nodes, megabytes << 20, seed)
    else:
        directory, _ = prepare(work, "directory", megabytes, nodes, seed, captures)
        corpus = build_shuffled(directory, path, seed)
    fields = asdict(corpus)
    fields.pop("path")
    fields.pop("kind")
    manifest.write_text(json.dumps({"key": key, **fields}, indent=1) + "\n")
    return corpus, True


def remove(path: Path) -> None:
    """Delete a corpus: a file, or a directory of node logs."""
    if path.is_dir():
        for child in path.iterdir():
            child.unlink()
        path.rmdir()
    elif path.exists():
        path.unlink()
