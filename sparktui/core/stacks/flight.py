"""PyTorch's flight recorder, read without torch: the per-rank dumps its watchdog writes on a timeout
(``TORCH_NCCL_TRACE_BUFFER_SIZE`` > 0 and ``TORCH_NCCL_DUMP_ON_TIMEOUT=1``; files named by
``TORCH_NCCL_DEBUG_INFO_TEMP_FILE`` followed by the rank) are pickles of plain data. They are unpickled by
:class:`PlainUnpickler`, which builds dicts, lists, tuples, strings, numbers, booleans and None and refuses
every global, so no code of the file runs.

:func:`analyse` names what torch's own analyzer (``torch/distributed/flight_recorder``, ``fr_trace``) names:
ranks of a group with no dump file, and per group and collective sequence number the ranks that never
joined it and the ranks whose collective differs in type, sizes or state from the others'.
"""

from __future__ import annotations

import ast
import io
import pickle
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: The most bytes read of one dump (the buffer holds at most a few thousand entries).
LIMIT = 256 << 20
_RANKED = re.compile(r"^(?P<prefix>.*?)(?P<rank>\d+)$")


class Unreadable(ValueError):
    """A dump that is no flight-recorder dump of plain data; the message says why in one line."""


class PlainUnpickler(pickle.Unpickler):
    """Builds plain data only: any global (a class, a function) is refused."""

    def find_class(self, module: str, name: str) -> Any:
        raise Unreadable(f"refers to {module}.{name}: a flight-recorder dump holds plain data only")

    def persistent_load(self, pid: Any) -> Any:
        raise Unreadable("holds a persistent reference: a flight-recorder dump holds plain data only")


@dataclass(frozen=True, slots=True)
class Dump:
    rank: int
    path: str
    version: str
    groups: Mapping[str, tuple[str, tuple[int, ...]]]  # pg name -> (desc, ranks)
    entries: tuple[Mapping[str, Any], ...]


def load(data: bytes, rank: int, path: str = "") -> Dump:
    """One rank's dump from its bytes. Raises :class:`Unreadable`."""
    try:
        raw = PlainUnpickler(io.BytesIO(data)).load()
    except Unreadable:
        raise
    except Exception as exc:  # a broken pickle raises many kinds of errors
        raise Unreadable(f"not a pickle: {type(exc).__name__}: {exc}") from None
    if not isinstance(raw, dict) or not isinstance(raw.get("entries"), list):
        raise Unreadable("no 'entries' list: not a flight-recorder dump")
    groups = {}
    for name, config in (raw.get("pg_config") or {}).items():
        if not isinstance(config, dict):
            raise Unreadable(f"pg_config {name!r} is not a table")
        groups[str(name)] = (str(config.get("desc", "")), _ranks(config.get("ranks", "[]")))
    entries = tuple(e for e in raw["entries"] if isinstance(e, dict))
    return Dump(rank, path, str(raw.get("version", "")), groups, entries)


def _ranks(text: Any) -> tuple[int, ...]:
    try:
        value = ast.literal_eval(text) if isinstance(text, str) else text
    except (ValueError, SyntaxError):
        raise Unreadable(f"pg_config ranks {text!r} is no list of ranks") from None
    if not isinstance(value, list | tuple) or not all(isinstance(r, int) for r in value):
        raise Unreadable(f"pg_config ranks {text!r} is no list of ranks")
    return tuple(value)


def read_folder(folder: Path, prefix: str | None = None) -> list[Dump]:
    """Every dump in ``folder`` whose name is ``prefix`` followed by a rank (the prefix inferred when all the
    files share one, as torch's analyzer infers it). Raises :class:`Unreadable`."""
    if not folder.is_dir():
        raise Unreadable("no such folder")
    files = sorted(p for p in folder.iterdir() if p.is_file())
    if prefix is None:
        prefixes = {m["prefix"] for p in files if (m := _RANKED.match(p.name))}
        if len(prefixes) != 1:
            raise Unreadable(f"cannot tell the dumps' prefix ({len(prefixes)} found): give --prefix")
        prefix = prefixes.pop()
    dumps = []
    for path in files:
        rest = path.name[len(prefix) :] if path.name.startswith(prefix) else ""
        if not rest.isdigit():
            continue
        if path.stat().st_size > LIMIT:
            raise Unreadable(f"{path.name}: larger than {LIMIT >> 20} MiB")
        try:
            dumps.append(load(path.read_bytes(), int(rest), str(path)))
        except Unreadable as exc:
            raise Unreadable(f"{path.name}: {exc}") from None
    if not dumps:
        raise Unreadable(f"no file named {prefix}<rank>")
    return dumps


@dataclass
class Analysis:
    ranks: list[int]
    missing_dumps: list[int] = field(default_factory=list)
    not_joined: list[tuple[str, int, str, list[int]]] = field(default_factory=list)  # (group, seq, op, ranks)
    mismatched: list[tuple[str, int, str, list[str]]] = field(default_factory=list)  # (group, seq, what, ranks)
    findings: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "version": 1,
            "ranks": self.ranks,
            "missing_dump_files": self.missing_dumps,
            "not_joined": [{"group": g, "seq": s, "op": o, "missing_ranks": r} for g, s, o, r in self.not_joined],
            "mismatched": [{"group": g, "seq": s, "what": w, "ranks": r} for g, s, w, r in self.mismatched],
            "findings": self.findings,
        }


def analyse(dumps: Sequence[Dump]) -> Analysis:
    """What the dumps say across the ranks (pure)."""
    result = Analysis(sorted(d.rank for d in dumps))
    members: dict[tuple[str, tuple[int, ...]], str] = {}
    for d in dumps:
        for name, (desc, ranks) in d.groups.items():
            members[(name, ranks)] = desc
    have = {d.rank for d in dumps}
    every = sorted({r for (_, ranks) in members for r in ranks})
    result.missing_dumps = [r for r in every if r not in have]
    if result.missing_dumps:
        result.findings.append(f"no dump file from {_ranks_text(result.missing_dumps)} (missing dump files)")
    for (name, ranks), desc in members.items():
        label = f"{name} ({desc})" if desc else name
        per_rank: dict[int, dict[int, Mapping[str, Any]]] = {}
        for d in dumps:
            if d.rank not in ranks or d.groups.get(name, ("", ()))[1] != ranks:
                continue
            per_rank[d.rank] = {
                int(e["collective_seq_id"]): e
                for e in d.entries
                if _group_of(e) == name and not e.get("is_p2p") and isinstance(e.get("collective_seq_id"), int)
            }
        if not per_rank:
            continue
        start = max((min(seqs) for seqs in per_rank.values() if seqs), default=0)
        seqs = sorted({s for seqs in per_rank.values() for s in seqs if s >= start})
        for seq in seqs:
            present = {r: e[seq] for r, e in per_rank.items() if seq in e}
            absent = [r for r in per_rank if r not in present]
            op = Counter(str(e.get("profiling_name", "")) for e in present.values()).most_common(1)[0][0]
            if absent:
                result.not_joined.append((label, seq, op, absent))
                result.findings.append(
                    f"group {label}: {_ranks_text(absent)} never joined collective #{seq} ({op}), which "
                    f"{_ranks_text(sorted(present))} {'is' if len(present) == 1 else 'are'} in"
                )
                break  # what follows is no longer paired reliably (torch's analyzer stops the group too)
            odd = _odd_ones(present)
            if odd:
                what, ranks_odd = odd
                result.mismatched.append((label, seq, what, ranks_odd))
                result.findings.append(f"group {label}: collective #{seq} differs in {what}: {'; '.join(ranks_odd)}")
                break
    return result


def _group_of(entry: Mapping[str, Any]) -> str:
    pg = entry.get("process_group")
    return str(pg[0]) if isinstance(pg, list | tuple) and pg else ""


def _odd_ones(present: Mapping[int, Mapping[str, Any]]) -> tuple[str, list[str]] | None:
    """The first way the ranks' entries for one collective differ: type, then sizes, then state."""
    for what, key in (
        ("type", "profiling_name"),
        ("input sizes", "input_sizes"),
        ("output sizes", "output_sizes"),
        ("state", "state"),
    ):
        values = {r: repr(e.get(key)) for r, e in present.items()}
        if len(set(values.values())) > 1:
            common = Counter(values.values()).most_common(1)[0][0]
            return what, [f"rank {r}: {v}" for r, v in sorted(values.items()) if v != common] + [
                f"the others: {common}"
            ]
    return None


def _ranks_text(ranks: Sequence[int]) -> str:
    return f"rank {ranks[0]}" if len(ranks) == 1 else "ranks " + ", ".join(str(r) for r in ranks)
