"""The cluster file: which nodes, how to reach them, what runs there.

Looked up as ``./sparktui.toml``, then ``$SPARKTUI_CONFIG_DIR/cluster.toml``, then
``$XDG_CONFIG_HOME/sparktui/cluster.toml`` (``~/.config/sparktui/cluster.toml``)::

    [[nodes]]
    name = "spark-a"                  # how the node is shown; NCCL host names in its logs should match
    ssh = "nvidia@192.168.100.10"     # [user@]host[:port] or a Host alias from ~/.ssh/config
    role = "head"                     # head (exactly one) or worker
    sources = ["ssh://spark-a/journal/docker"]   # extra sources besides the deployment's containers

    [deployment]
    engine = "vllm"                   # vllm or sglang
    image = "nvcr.io/nvidia/vllm:26.05-py3"
    containers = ["vllm_node"]        # container names on every node
    launch = "vllm serve ... --tensor-parallel-size 2"   # the launch command, or:
    launch_script = "/home/nvidia/run_cluster.sh"

    [network]                         # what NCCL, Gloo and Ray use between the nodes
    iface = "enp1s0f1np1"             # the interface, the same name on every node
    head_ip = "192.168.100.10"        # the head's IPv4 address on it
    hca = "rocep1s0f1,roceP2p1s0f1"   # RDMA devices for NCCL_IB_HCA ("" where there are none)

A file that cannot be used is rejected with one line naming the file, the key and the reason.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import regex

from sparktui.core import dirs, tomlfile
from sparktui.core.errors import Invalid
from sparktui.core.kinds import fits

ENGINES = ("vllm", "sglang")
ROLES = ("head", "worker")
_SSH = regex.compile(r"^(?:[A-Za-z0-9_.-]+@)?(?:[A-Za-z0-9_.-]+|\[[0-9A-Fa-f:.]+\])(?::(?P<port>\d{1,5}))?$")
_NAME = regex.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$")


class ConfigError(Invalid):
    """The cluster file names what is wrong, where, in one line."""


@dataclass(frozen=True, slots=True)
class Node:
    name: str
    ssh: str
    role: str
    sources: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Deployment:
    engine: str = "vllm"
    image: str = ""
    containers: tuple[str, ...] = ()
    launch: str = ""
    launch_script: str = ""


@dataclass(frozen=True, slots=True)
class Network:
    iface: str = ""
    head_ip: str = ""
    hca: str = ""


@dataclass(frozen=True, slots=True)
class Cluster:
    path: Path
    nodes: tuple[Node, ...]
    deployment: Deployment
    network: Network = Network()

    @property
    def head(self) -> Node:
        return next(n for n in self.nodes if n.role == "head")

    @property
    def workers(self) -> tuple[Node, ...]:
        return tuple(n for n in self.nodes if n.role == "worker")

    def values(self) -> dict[str, str]:
        """What playbooks take from the cluster file (``cluster:KEY`` in their parameters)."""
        d = self.deployment
        found = {
            "container": d.containers[0] if d.containers else "",
            "image": d.image,
            "launch": d.launch,
            "launch_script": d.launch_script,
            "engine": d.engine,
            "head": self.head.name,
            "iface": self.network.iface,
            "head_ip": self.network.head_ip,
        }
        values = {k: v for k, v in found.items() if v}
        if self.network.iface:  # an interface without RDMA devices: hca is known to be none
            values["hca"] = self.network.hca
        return values

    def source_uris(self) -> list[str]:
        """Every node's containers (over its SSH connection) and its extra sources."""
        uris: list[str] = []
        for node in self.nodes:
            uris += [f"ssh://{node.ssh}/docker/{c}" for c in self.deployment.containers]
            uris += list(node.sources)
        return uris


def find(cwd: Path | None = None) -> Path | None:
    candidates = [(cwd or Path.cwd()) / "sparktui.toml", *(d / "cluster.toml" for d in dirs.config_dirs())]
    return next((p for p in candidates if p.is_file()), None)


def load(path: Path) -> Cluster:
    doc = tomlfile.read(path, lambda reason: ConfigError(f"{path}: {reason}"))
    unknown = set(doc) - {"nodes", "deployment", "network"}
    if unknown:
        raise ConfigError(f"{path}: {sorted(unknown)[0]}: unknown key (expected [[nodes]], [deployment], [network])")
    raw_nodes = doc.get("nodes")
    if not isinstance(raw_nodes, list) or not raw_nodes:
        raise ConfigError(f"{path}: nodes: needs at least one [[nodes]] table")
    nodes = tuple(_node(path, i, raw) for i, raw in enumerate(raw_nodes))
    names = [n.name for n in nodes]
    for name in names:
        if names.count(name) > 1:
            raise ConfigError(f"{path}: nodes: the name {name!r} is used twice")
    heads = [n for n in nodes if n.role == "head"]
    if len(heads) != 1:
        raise ConfigError(f"{path}: nodes.role: exactly one node must be the head (found {len(heads)})")
    return Cluster(path, nodes, _deployment(path, doc.get("deployment", {})), _network(path, doc.get("network", {})))


def _node(path: Path, index: int, raw: Any) -> Node:
    where = f"{path}: nodes[{index}]"
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: must be a table")
    unknown = set(raw) - {"name", "ssh", "role", "sources"}
    if unknown:
        raise ConfigError(f"{where}.{sorted(unknown)[0]}: unknown key (name, ssh, role, sources)")
    name = raw.get("name")
    if not isinstance(name, str) or not _NAME.match(name):
        raise ConfigError(f"{where}.name: a node name of letters, digits, '.', '_' or '-'")
    ssh = raw.get("ssh", name)
    shape = _SSH.match(ssh) if isinstance(ssh, str) else None
    if shape is None or not 0 < int(shape.group("port") or 22) < 65536:
        raise ConfigError(f"{where}.ssh: {ssh!r} is not [user@]host[:port] or an ssh Host alias")
    role = raw.get("role", "worker")
    if role not in ROLES:
        raise ConfigError(f"{where}.role: {role!r} is not head or worker")
    sources = raw.get("sources", [])
    if not isinstance(sources, list) or not all(isinstance(s, str) and s for s in sources):
        raise ConfigError(f"{where}.sources: needs an array of source URIs")
    return Node(name, ssh, role, tuple(sources))


def _table(path: Path, name: str, raw: Any, keys: tuple[str, ...], strings: tuple[str, ...]) -> dict[str, Any]:
    """``raw`` as the table ``name``: only ``keys`` in it, and a string at each of ``strings`` given."""
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: {name}: must be a table")
    unknown = set(raw) - set(keys)
    if unknown:
        raise ConfigError(f"{path}: {name}.{sorted(unknown)[0]}: unknown key ({', '.join(keys)})")
    for key in strings:
        if not isinstance(raw.get(key, ""), str):
            raise ConfigError(f"{path}: {name}.{key}: needs a string")
    return raw


def _deployment(path: Path, raw: Any) -> Deployment:
    strings = ("image", "launch", "launch_script")
    raw = _table(path, "deployment", raw, ("engine", "containers", *strings), strings)
    engine = raw.get("engine", "vllm")
    if engine not in ENGINES:
        raise ConfigError(f"{path}: deployment.engine: {engine!r} is not vllm or sglang")
    containers = raw.get("containers", [])
    if not isinstance(containers, list) or not all(isinstance(c, str) and _NAME.match(c) for c in containers):
        raise ConfigError(f"{path}: deployment.containers: needs an array of container names")
    _fit(f"{path}: deployment.image", raw.get("image", ""), "image")
    _fit(f"{path}: deployment.launch_script", raw.get("launch_script", ""), "path")
    return Deployment(
        engine, raw.get("image", ""), tuple(containers), raw.get("launch", ""), raw.get("launch_script", "")
    )


def _network(path: Path, raw: Any) -> Network:
    keys = ("iface", "head_ip", "hca")
    raw = _table(path, "network", raw, keys, keys)
    _fit(f"{path}: network.iface", raw.get("iface", ""), "iface")
    _fit(f"{path}: network.head_ip", raw.get("head_ip", ""), "host")
    return Network(raw.get("iface", ""), raw.get("head_ip", ""), raw.get("hca", ""))


def _fit(where: str, value: str, kind: str) -> None:
    """Refuse a value that playbooks, which take it as a ``kind``, would refuse: here the key can be named."""
    if value and not fits(kind, value):
        raise ConfigError(f"{where}: {value[:200]!r} is not a valid {kind}")
