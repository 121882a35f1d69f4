"""``sparktui discover user@host...``: look at the nodes and write the cluster file.

For each node, over its SSH connection: the host name, the containers that run vLLM, SGLang or Ray
(through the node's Docker socket), whether a Ray session directory exists, which engine processes run
outside containers, its IPv4 addresses and its RDMA devices. The node running a Ray head (or listed first)
becomes the head; the interface on which every node has an address in one subnet (one with RDMA devices
first) becomes the network NCCL, Gloo and Ray use.
"""

from __future__ import annotations

import asyncio
import ipaddress
import re
import shlex
from dataclasses import dataclass, field, replace
from pathlib import Path

from sparktui.core.address import ssh_address
from sparktui.core.errors import Refused, Unavailable
from sparktui.core.inventory.containers import ContainerInfo, discover_containers
from sparktui.core.remote import docker, ssh

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$")
ENGINE_PROCESSES = r"vllm serve|vllm\.entrypoints|sglang\.launch_server|ray start|raylet|gcs_server"
#: Interfaces that never carry traffic between nodes: loopback, Docker's and libvirt's bridges, veths.
VIRTUAL = re.compile(r"^(lo|docker\d+|br-[0-9a-f]+|virbr\d+|veth.*|cni\d+|flannel.*|cali.*|tailscale\d+)$")
# Each IPv4 address as "interface address/prefix", then each RDMA device with its network interface.
_ADDRESSES = "ip -o -4 addr show | awk '{print $2, $4}'"
_RDMA = (
    'for d in /sys/class/infiniband/*/device/net/*; do [ -e "$d" ] && echo "${d#/sys/class/infiniband/}"; done; true'
)


@dataclass
class NodeLook:
    """What ``sparktui discover`` saw on one machine: its name, containers, Ray session, engine processes,
    addresses and RDMA devices, or the problem that stopped it looking."""

    target: str  # as given: [user@]host[:port] or an ssh alias
    hostname: str = ""
    containers: list[ContainerInfo] = field(default_factory=list)
    ray_session: bool = False
    processes: list[str] = field(default_factory=list)
    addresses: list[tuple[str, str]] = field(default_factory=list)  # (interface, address/prefix)
    rdma: dict[str, str] = field(default_factory=dict)  # RDMA device -> its network interface
    problem: str = ""

    @property
    def runs_ray_head(self) -> bool:
        return any(c.role == "ray-head" for c in self.containers) or any("--head" in p for p in self.processes)


async def look(target: str, *, trust_new_host_key: bool = False) -> NodeLook:
    """What runs on one node; a node that cannot be reached comes back with ``problem`` set."""
    seen = NodeLook(target)
    try:
        user, host, port = ssh_address(target)
    except ValueError as exc:
        seen.problem = str(exc)
        return seen
    node = ssh.SshNode(host, user=user, port=port, trust_new_host_key=trust_new_host_key)
    try:
        seen.hostname = (await node.run("hostname", f"{target}: hostname")).decode(errors="replace").strip()
        # each remote command is exec'ed on its own: compound ones go through sh -c
        ray_dir = await node.run(_sh("test -d /tmp/ray/session_latest && echo yes || true"), f"{target}: ray")
        seen.ray_session = ray_dir.strip() == b"yes"
        found = await node.run(_sh(f"pgrep -af {shlex.quote(ENGINE_PROCESSES)} || true"), f"{target}: processes")
        seen.processes = [line for line in found.decode(errors="replace").splitlines() if "pgrep" not in line]
        listed = await node.run(_sh(_ADDRESSES), f"{target}: addresses")
        seen.addresses = [(w[0].split("@")[0], w[1]) for w in _words(listed) if len(w) == 2]
        devices = await node.run(_sh(_RDMA), f"{target}: RDMA devices")
        seen.rdma = {w[0].split("/")[0]: w[0].rsplit("/", 1)[-1] for w in _words(devices) if "/" in w[0]}
        try:
            socket = await node.forward_unix(docker.SOCKET)
            engine = docker.node_engine(target)
            seen.containers = await asyncio.to_thread(discover_containers, f"unix://{socket}", engine)
        except (Unavailable, Refused) as exc:
            seen.problem = f"docker: {exc}"
    except (Unavailable, Refused) as exc:
        seen.problem = str(exc)
    finally:
        await node.close()
    return seen


def _sh(command: str) -> str:
    return f"sh -c {shlex.quote(command)}"


def _words(output: bytes) -> list[list[str]]:
    return [line.split() for line in output.decode(errors="replace").splitlines() if line.strip()]


@dataclass(frozen=True, slots=True)
class Link:
    """The interface the nodes share, as seen from the head."""

    iface: str
    head_ip: str
    subnet: str
    hca: tuple[str, ...]  # the head's RDMA devices on an interface every node shares a subnet on (every rail)


def network(head: NodeLook, workers: list[NodeLook]) -> Link | None:
    """The interface on which the head and every worker have an address in one subnet, under the same
    name on each; one with RDMA devices first. Its ``hca`` names the RDMA devices of every such interface: a
    Spark's cage is two rails (rocep1s0f1 and its twin roceP2p1s0f1 on an interface of its own), and naming one
    alone halves the link (``sparktui check`` calls it rdma-one-rail-of-two). None when there is no worker or
    no such interface."""
    if not workers:
        return None
    found: list[Link] = []
    for iface, cidr in head.addresses:
        if VIRTUAL.match(iface):
            continue
        try:
            address = ipaddress.ip_interface(cidr)
        except ValueError:
            continue
        if all(_has_address(w, iface, address.network) for w in workers):
            hca = tuple(sorted(dev for dev, net in head.rdma.items() if net == iface))
            found.append(Link(iface, str(address.ip), str(address.network), hca))
    chosen = max(found, key=lambda n: bool(n.hca), default=None)
    rails = tuple(sorted({dev for link in found for dev in link.hca}, key=str.casefold))
    return replace(chosen, hca=rails) if chosen is not None else None


def _has_address(node: NodeLook, iface: str, subnet: ipaddress.IPv4Network | ipaddress.IPv6Network) -> bool:
    for name, cidr in node.addresses:
        try:
            if name == iface and ipaddress.ip_interface(cidr) in subnet:
                return True
        except ValueError:
            continue
    return False


def cluster_file(looks: list[NodeLook]) -> str:
    """The cluster file for what was seen, with comments on anything that needs a person's eye."""
    head = next((n for n in looks if n.runs_ray_head), looks[0])
    engines = {c.role for n in looks for c in n.containers if c.role in ("vllm", "sglang")}
    containers = sorted({c.name for n in looks for c in n.containers})
    images = sorted({c.image for n in looks for c in n.containers if c.role in ("vllm", "sglang", "ray-head")})
    out = ["# Written by `sparktui discover`; check it, then run `sparktui`.", ""]
    names: set[str] = set()
    for n in looks:
        name = _node_name(n, names)
        names.add(name)
        out += [
            "[[nodes]]",
            f"name = {_q(name)}",
            f"ssh = {_q(n.target)}",
            f'role = "{"head" if n is head else "worker"}"',
        ]
        if n.ray_session:
            out.append(f"sources = [{_q(f'ssh://{n.target}/ray')}]")
        if n.problem:
            out.append(f"# could not look at this node: {n.problem}")
        for p in n.processes:
            out.append(f"# engine process outside a container: {p[:160]}")
        out.append("")
    out.append("[deployment]")
    out.append(f'engine = "{"sglang" if engines == {"sglang"} else "vllm"}"')
    if len(images) == 1:
        out.append(f"image = {_q(images[0])}")
    elif images:
        out.append(f"# the nodes run different images: {', '.join(images)}")
    out.append(f"containers = [{', '.join(_q(c) for c in containers)}]")
    out += ["", *_network_lines(head, [n for n in looks if n is not head])]
    return "\n".join(out) + "\n"


def _network_lines(head: NodeLook, workers: list[NodeLook]) -> list[str]:
    chosen = network(head, workers)
    if chosen is None:
        return [
            "# [network]: no interface found on which every node has an address in one subnet; set",
            "# iface, head_ip and hca by hand",
        ]
    lines = ["[network]", f"iface = {_q(chosen.iface)}  # every node has an address in {chosen.subnet} on it"]
    lines.append(f"head_ip = {_q(chosen.head_ip)}")
    lines.append(f"hca = {_q(','.join(chosen.hca))}" + ("" if chosen.hca else f"  # no RDMA device on {chosen.iface}"))
    others = sorted(
        {f"{dev} ({net})" for n in (head, *workers) for dev, net in n.rdma.items() if dev not in chosen.hca}
    )
    if others:
        lines.append(f"# other RDMA devices seen: {', '.join(others)}")
    return lines


def _node_name(look: NodeLook, taken: set[str]) -> str:
    """The host name where it names the node alone, else the address it was reached at."""
    try:
        address = ssh_address(look.target)[1]
    except ValueError:
        address = ""
    for name in (look.hostname, address):
        if name and NAME.match(name) and name not in taken:
            return name
    n = 2
    while f"node-{n}" in taken:
        n += 1
    return f"node-{n}"


def _q(value: str) -> str:
    escaped = value.replace("\\", "\\\\").replace('"', '\\"')
    return '"' + "".join(c if c.isprintable() else f"\\u{ord(c):04x}" for c in escaped) + '"'


async def discover(targets: list[str], *, trust_new_host_key: bool = False) -> list[NodeLook]:
    return list(await asyncio.gather(*(look(t, trust_new_host_key=trust_new_host_key) for t in targets)))


def write(path: Path, text: str, *, force: bool) -> None:
    if path.exists() and not force:
        raise FileExistsError(f"{path} exists; use --force to replace it")
    path.write_text(text, encoding="utf-8")
