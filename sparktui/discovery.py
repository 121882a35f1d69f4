"""``sparktui discover user@host...``: look at the nodes and write the cluster file.

For each node, over its SSH connection: the host name, the containers that run vLLM, SGLang or Ray
(through the node's Docker socket), whether a Ray session directory exists, and which engine processes
run outside containers. The node running a Ray head (or listed first) becomes the head.
"""

from __future__ import annotations

import asyncio
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from sparktui.core.sources import docker, ssh
from sparktui.core.sources.base import SourceRefused, SourceUnavailable

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$")
ENGINE_PROCESSES = r"vllm serve|vllm\.entrypoints|sglang\.launch_server|ray start|raylet|gcs_server"


@dataclass
class NodeLook:
    target: str  # as given: [user@]host[:port] or an ssh alias
    hostname: str = ""
    containers: list[docker.ContainerInfo] = field(default_factory=list)
    ray_session: bool = False
    processes: list[str] = field(default_factory=list)
    problem: str = ""

    @property
    def runs_ray_head(self) -> bool:
        return any(c.role == "ray-head" for c in self.containers) or any("--head" in p for p in self.processes)


async def look(target: str, *, trust_new_host_key: bool = False) -> NodeLook:
    """What runs on one node; a node that cannot be reached comes back with ``problem`` set."""
    seen = NodeLook(target)
    try:
        user, host, port = ssh.split_target(target)
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
        try:
            socket = await ssh.forward_docker_socket(node)
            seen.containers = await asyncio.to_thread(docker.discover_containers, f"unix://{socket}")
        except (SourceUnavailable, SourceRefused) as exc:
            seen.problem = f"docker: {exc}"
    except (SourceUnavailable, SourceRefused) as exc:
        seen.problem = str(exc)
    finally:
        await node.close()
    return seen


def _sh(command: str) -> str:
    return f"sh -c {shlex.quote(command)}"


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
    return "\n".join(out) + "\n"


def _node_name(look: NodeLook, taken: set[str]) -> str:
    """The host name where it names the node alone, else the address it was reached at."""
    try:
        address = ssh.split_target(look.target)[1]
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
