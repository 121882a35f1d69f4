"""Collecting a node's inventory: the script run once over the node's runner (its SSH connection, or this
machine for ``local``), audited like every command a playbook runs, and its sections parsed into one
:class:`NodeInventory`. A section that cannot be read leaves its facts unknown, with the reason; only a
node that cannot be asked at all is an error."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any, TypeVar

from sparktui.core.audit import AuditEntry, AuditLog
from sparktui.core.inventory import builds, parse
from sparktui.core.inventory.facts import NodeInventory
from sparktui.core.inventory.image import probe_facts
from sparktui.core.inventory.script import Output, Request, Section, nonce, script, split
from sparktui.core.remote.command import Command
from sparktui.core.remote.runner import Runner

#: The step name of the inventory in the audit log.
STEP = "inventory"
#: The most characters of the script's output kept in the audit log (as for a playbook's commands).
AUDIT_LIMIT = 1 << 20
T = TypeVar("T")


async def collect(runner: Runner, node: str, request: Request, audit: AuditLog | None = None) -> NodeInventory:
    """Run the inventory script on ``node`` and parse what it printed."""
    run = nonce()
    command = Command(STEP, node, "host", script(request, run), changes=False)
    lines: list[str] = []
    started, clock = datetime.now(UTC), time.monotonic()
    code = await runner.run(command, lambda _node, line: lines.append(line))
    seconds = time.monotonic() - clock
    if audit is not None:
        output = "".join(f"{line}\n" for line in lines)[:AUDIT_LIMIT]
        audit.add(AuditEntry(command.command, node, started, code, output, seconds, "host", "", STEP))
    found = split(lines, run)
    if code is None or not found.sections:
        said = next((line.removeprefix("[sparktui: ").removesuffix("]") for line in lines if line.strip()), "")
        return NodeInventory(node, seconds, error=said or f"the inventory script ended with exit {code}")
    return replace(inventory(node, found, request), seconds=seconds)


async def collect_all(
    runner: Runner, requests: Sequence[tuple[str, Request]], audit: AuditLog | None = None
) -> list[NodeInventory]:
    """Every node at once, each over its own connection."""
    return list(await asyncio.gather(*(collect(runner, node, request, audit) for node, request in requests)))


def inventory(node: str, output: Output, request: Request) -> NodeInventory:
    """The inventory in the sections of one run of the script made for ``request``."""
    unknown: dict[str, str] = {}

    def read(name: str, parser: Callable[[str], T]) -> T | None:
        section = output.get(name)
        if section is None:
            unknown[name] = "not printed (the script was cut off)"
            return None
        if section.code not in (0, None) and not _worth_reading(name, section):
            unknown[name] = _why(section)
            return None
        try:
            return parser(section.text)
        except (parse.Unreadable, builds.Unreadable) as exc:
            unknown[name] = str(exc)
            return None

    host = read("host", parse.host)
    container = read("container", parse.container)
    image_ref = request.image or (container.image if container is not None else "")
    facts: dict[str, Any] = {
        "node": node,
        "os": read("os", parse.os_release) or "",
        "gpus": read("gpus", parse.gpus),
        "cuda": read("cuda", parse.cuda) or "",
        "interfaces": read("ip", parse.interfaces) or (),
        "rdma": read("rdma", parse.rdma) or (),
        "fabric": read("fabric", parse.fabric) or (),
        "shm": read("shm", parse.df),
        "docker": read("docker_version", parse.docker_version) or "",
        "images": read("docker_images", parse.docker_images) or (),
        "containers": read("docker_ps", parse.docker_ps) or (),
        "container": container,
        "ray": read("ray_status", parse.ray_status),
        "model": read("model", parse.model),
        "disk": read("disk", parse.df),
        "ports": read("ports", parse.ports) or frozenset(),
        "probe": read("probe", probe_facts),
        "builds": read("builds", builds.host_builds) or (),
        "logind": read("logind", builds.logind),
    }
    named = output.get("image")
    if named is not None and named.code == 0:
        facts["image"] = read("image", lambda text: parse.image(text, image_ref))
    elif named is not None:
        unknown["image"] = _why(named)
    if host is not None:
        facts.update(kernel=host[1], arch=host[2], hostname=host[3], cmdline=host[4])
    return NodeInventory(**facts, unknown=unknown)


def _worth_reading(name: str, section: Section) -> bool:
    """Sections whose text says something even when their command failed: the probe's (its failure, even
    python3 missing in the image), ``ray status`` without a cluster (exit 1), the model's folder without a
    config.json, docker version with the daemon down (it prints the client and the reason), an RDMA tool
    that finds no RDMA subsystem."""
    return name == "probe" or (name in ("ray_status", "model", "docker_version", "rdma") and section.code != 127)


def _why(section: Section) -> str:
    said = next((line.strip() for line in section.lines if line.strip()), "")
    if section.code == 127 and said:
        return said
    return said[:300] or f"exit {section.code}"
