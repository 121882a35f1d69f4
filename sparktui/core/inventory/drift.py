"""Drift: one table of facts across nodes, ``clush -b`` style. A fact every node shares is one row with one
value; a fact that differs lists each value with the nodes that have it. Pure: built from each node's
facts (:mod:`sparktui.core.inventory.names`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from sparktui.core.inventory.facts import Value
from sparktui.core.inventory.names import ENV_PREFIX
from sparktui.core.words import size

#: The environment variables compared (those that decide how NCCL, Gloo, UCX, vLLM and Ray connect).
ENV_DRIFT = ("NCCL_", "GLOO_", "UCX_", "VLLM_", "TP_", "OMPI_MCA_", "RAY_", "MASTER_")
UNSET = "(unset)"
UNKNOWN = "(unknown)"


def _short(value: Value) -> str:
    """A digest shortened as Docker shows one (sha256:0123456789ab)."""
    text = str(value)
    algorithm, colon, rest = text.partition(":")
    if colon and len(rest) > 12:
        return f"{algorithm}:{rest[:12]}"
    return text[:12] if len(text) > 40 and all(c in "0123456789abcdef" for c in text) else text


def _plain(value: Value) -> str:
    if isinstance(value, tuple):
        return " ".join(str(v) for v in value) if value else "(none)"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if value == "":
        return "(none)"
    return str(value)


def _bytes(value: Value) -> str:
    if not isinstance(value, int):
        return _plain(value)
    return size(value)


#: The rows, in order: (label, fact, how its value is shown).
ROWS: tuple[tuple[str, str, Callable[[Value], str]], ...] = (
    ("image", "image.ref", _plain),
    ("image id", "image.id", _short),
    ("image digest", "image.digest", _short),
    ("vllm", "probe.vllm", _plain),
    ("sglang", "probe.sglang", _plain),
    ("torch", "probe.torch", _plain),
    ("transformers", "probe.transformers", _plain),
    ("ray", "probe.ray", _plain),
    ("python", "probe.python", _plain),
    ("nccl", "probe.nccl", _plain),
    ("nccl build", "probe.nccl_build", _short),
    ("nccl library", "probe.nccl_path", _plain),
    ("torch cuda", "probe.torch_cuda", _plain),
    ("executor default", "probe.executor_default", _plain),
    ("gpus", "gpu.names", _plain),
    ("driver", "gpu.driver", _plain),
    ("driver cuda", "gpu.cuda", _plain),
    ("os", "node.os", _plain),
    ("kernel", "node.kernel", _plain),
    ("arch", "node.arch", _plain),
    ("docker", "docker.version", _plain),
    ("interfaces", "net.interfaces", _plain),
    ("rdma", "net.rdma_devices", _plain),
    ("ray cluster", "ray.nodes", _plain),
    ("/dev/shm", "container.shm_bytes", _bytes),
    ("model", "model.architectures", _plain),
)


@dataclass(frozen=True, slots=True)
class Row:
    """One fact across nodes: each distinct value with the nodes that have it, most common first."""

    label: str
    fact: str
    groups: tuple[tuple[str, tuple[str, ...]], ...]

    @property
    def differs(self) -> bool:
        return len(self.groups) > 1


@dataclass(frozen=True, slots=True)
class Drift:
    """The drift table: the facts that should agree across the nodes, one row each, and which of them differ."""

    nodes: tuple[str, ...]
    rows: tuple[Row, ...]

    @property
    def differing(self) -> tuple[Row, ...]:
        return tuple(r for r in self.rows if r.differs)

    def as_dict(self) -> dict[str, object]:
        return {
            "nodes": list(self.nodes),
            "rows": [
                {
                    "label": r.label,
                    "fact": r.fact,
                    "differs": r.differs,
                    "values": [{"value": v, "nodes": list(n)} for v, n in r.groups],
                }
                for r in self.rows
            ],
        }


def drift(facts: Mapping[str, Mapping[str, Value]]) -> Drift:
    """The table for ``facts`` (node name -> its facts). A row no node knows is left out; a node that does
    not know a fact others know shows ``(unknown)``, an environment variable a node does not set
    ``(unset)``."""
    nodes = tuple(facts)
    rows = []
    for label, name, show in ROWS:
        if any(name in f for f in facts.values()):
            rows.append(_row(label, name, {n: show(f[name]) if name in f else UNKNOWN for n, f in facts.items()}))
    names = sorted({k for f in facts.values() for k in f if k.startswith(ENV_PREFIX) and k[4:].startswith(ENV_DRIFT)})
    for name in names:
        rows.append(_row(name[4:], name, {n: _plain(f[name]) if name in f else UNSET for n, f in facts.items()}))
    return Drift(nodes, tuple(rows))


def _row(label: str, name: str, shown: Mapping[str, str]) -> Row:
    groups: dict[str, list[str]] = {}
    for node, value in shown.items():
        groups.setdefault(value, []).append(node)
    ordered = sorted(groups.items(), key=lambda item: -len(item[1]))
    return Row(label, name, tuple((value, tuple(n)) for value, n in ordered))


def lines(table: Drift, *, width: int = 16, only_differing: bool = False) -> list[str]:
    """The table as plain text lines: ``label  value`` where all agree, else one line per value with its
    nodes, the first after the label."""
    out = []
    for row in table.rows:
        if only_differing and not row.differs:
            continue
        if not row.differs:
            out.append(f"{row.label:<{width}} {row.groups[0][0]}")
            continue
        for i, (value, nodes) in enumerate(row.groups):
            out.append(f"{row.label if i == 0 else '':<{width}} {_nodes(nodes)}: {value}")
    return out


def _nodes(nodes: Sequence[str]) -> str:
    return ",".join(nodes)
