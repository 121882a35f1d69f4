"""The cluster file: which nodes, how to reach them, what runs there.

Looked up as ``./sparktui.toml``, then ``$SPARKTUI_CONFIG_DIR/cluster.toml``, then
``$XDG_CONFIG_HOME/sparktui/cluster.toml`` (``~/.config/sparktui/cluster.toml``)::

    [[nodes]]
    name = "spark-a"                  # how the node is shown; NCCL host names in its logs should match
    ssh = "nvidia@192.168.100.10"     # [user@]host[:port] or a Host alias from ~/.ssh/config
    aliases = ["gx10-a1c2"]           # other names its logs give it (the host name NCCL prints), if any
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

from dataclasses import dataclass, field
from pathlib import Path

import regex

from sparktui.core import dirs, tomlfile
from sparktui.core.address import Address, ssh_address
from sparktui.core.errors import Invalid
from sparktui.core.kinds import fits
from sparktui.core.tomlfile import Table

ENGINES = ("vllm", "sglang")
ROLES = ("head", "worker")
_SSH = regex.compile(r"^(?:[A-Za-z0-9_.-]+@)?(?:[A-Za-z0-9_.-]+|\[[0-9A-Fa-f:.]+\])(?::(?P<port>\d{1,5}))?$")
_NAME = regex.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$")


class ConfigError(Invalid):
    """The cluster file names what is wrong, where, in one line."""


@dataclass(frozen=True, slots=True)
class Node:
    """A machine of the cluster file: its name, how to reach it (``ssh``, and taken apart, ``address``), its
    role, its extra log sources and the other names it goes by."""

    name: str
    ssh: str
    role: str
    sources: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()
    address: Address = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "address", ssh_address(self.ssh))

    @property
    def names(self) -> tuple[str, ...]:
        """Every name this machine goes by: its name, the host of its ``ssh``, its aliases."""
        return tuple(dict.fromkeys((self.name, self.address.host, *self.aliases)))

    def is_named(self, host: str) -> bool:
        """Whether ``host`` (as a log or the user names a machine) is this node, by :func:`same_host`."""
        return any(same_host(host, name) for name in self.names)


@dataclass(frozen=True, slots=True)
class Deployment:
    """What the cluster runs: the engine, its image and containers, and its launch command or script."""

    engine: str = "vllm"
    image: str = ""
    containers: tuple[str, ...] = ()
    launch: str = ""
    launch_script: str = ""


@dataclass(frozen=True, slots=True)
class Network:
    """The cluster file's network settings: the inter-node interface, the head's address and the RDMA HCA."""

    iface: str = ""
    head_ip: str = ""
    hca: str = ""


@dataclass(frozen=True, slots=True)
class Cluster:
    """A cluster file (``sparktui.toml``) read: its nodes (one of them the head), the deployment and the network."""

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

    def node_for(self, host: str) -> Node | None:
        """The node ``host`` names (its name, its ssh host, an alias, as :func:`same_host` compares), or None."""
        return next((n for n in self.nodes if n.is_named(host)), None)

    def source_uris(self) -> list[str]:
        """Every node's containers (over its SSH connection) and its extra sources."""
        return [uri for node in self.nodes for uri in self.containers_of(node) + list(node.sources)]

    def containers_of(self, node: Node) -> list[str]:
        """The deployment's containers on ``node``, as sources over its SSH connection."""
        return [f"ssh://{node.ssh}/docker/{c}" for c in self.deployment.containers]


_IPV4 = regex.compile(r"^\d{1,3}(?:\.\d{1,3}){3}$")


def same_host(a: str, b: str) -> bool:
    """The one rule by which two names are one machine: equal but for case and a trailing dot, or a short
    host name and a fully qualified one that starts with it (``spark-a`` and ``spark-a.lan``; never for
    addresses)."""
    x, y = a.casefold().rstrip("."), b.casefold().rstrip(".")
    if not x or not y:
        return False
    if x == y:
        return True
    if _IPV4.match(x) or _IPV4.match(y) or ":" in x or ":" in y:
        return False
    short, full = (x, y) if len(x) < len(y) else (y, x)
    return "." not in short and full.startswith(short + ".")


def find(cwd: Path | None = None) -> Path | None:
    candidates = [(cwd or Path.cwd()) / "sparktui.toml", *(d / "cluster.toml" for d in dirs.config_dirs())]
    return next((p for p in candidates if tomlfile.present(p)), None)


def load(path: Path) -> Cluster:
    doc = Table(
        tomlfile.read(path, lambda reason: ConfigError(f"{path}: {reason}")),
        lambda key, reason: ConfigError(f"{path}: {key}: {reason}"),
    )
    for key in doc.data:
        if key not in ("nodes", "deployment", "network"):
            raise doc.fail(key, "unknown key (expected [[nodes]], [deployment], [network])")
    if not doc.data.get("nodes"):
        raise doc.fail("nodes", "needs at least one [[nodes]] table")
    nodes = tuple(_node(raw) for raw in doc.tables("nodes"))
    names = [n.name for n in nodes]
    for name in names:
        if names.count(name) > 1:
            raise doc.fail("nodes", f"the name {name!r} is used twice")
    heads = [n for n in nodes if n.role == "head"]
    if len(heads) != 1:
        raise doc.fail("nodes.role", f"exactly one node must be the head (found {len(heads)})")
    return Cluster(
        path,
        nodes,
        _deployment(doc.table("deployment", required=False)),
        _network(doc.table("network", required=False)),
    )


def _node(raw: Table) -> Node:
    raw.known(("name", "ssh", "role", "sources", "aliases"))
    name = raw.data.get("name")
    if not isinstance(name, str) or not _NAME.match(name):
        raise raw.fail("name", "a node name of letters, digits, '.', '_' or '-'")
    ssh = raw.data.get("ssh", name)
    shape = _SSH.match(ssh) if isinstance(ssh, str) else None
    if shape is None or not 0 < int(shape.group("port") or 22) < 65536:
        raise raw.fail("ssh", f"{ssh!r} is not [user@]host[:port] or an ssh Host alias")
    role = raw.data.get("role", "worker")
    if role not in ROLES:
        raise raw.fail("role", f"{role!r} is not head or worker")
    sources = raw.texts("sources", required=False)
    if not all(sources):
        raise raw.fail("sources", "needs an array of source URIs")
    aliases = raw.texts("aliases", required=False)
    if not all(fits("host", a) for a in aliases):
        raise raw.fail("aliases", "needs an array of host names")
    return Node(name, ssh, role, tuple(sources), tuple(aliases))


def _deployment(raw: Table) -> Deployment:
    raw.known(("engine", "containers", "image", "launch", "launch_script"))
    engine = raw.data.get("engine", "vllm")
    if engine not in ENGINES:
        raise raw.fail("engine", f"{engine!r} is not vllm or sglang")
    containers = raw.texts("containers", required=False)
    if not all(_NAME.match(c) for c in containers):
        raise raw.fail("containers", "needs an array of container names")
    image, launch, script = (raw.text(k, required=False, empty=True) for k in ("image", "launch", "launch_script"))
    _fit(raw, "image", image, "image")
    _fit(raw, "launch_script", script, "path")
    return Deployment(engine, image, tuple(containers), launch, script)


def _network(raw: Table) -> Network:
    raw.known(("iface", "head_ip", "hca"))
    iface, head_ip, hca = (raw.text(k, required=False, empty=True) for k in ("iface", "head_ip", "hca"))
    _fit(raw, "iface", iface, "iface")
    _fit(raw, "head_ip", head_ip, "host")
    return Network(iface, head_ip, hca)


def _fit(table: Table, key: str, value: str, kind: str) -> None:
    """Refuse a value that playbooks, which take it as a ``kind``, would refuse: here the key can be named."""
    if value and not fits(kind, value):
        raise table.fail(key, f"{value[:200]!r} is not a valid {kind}")
