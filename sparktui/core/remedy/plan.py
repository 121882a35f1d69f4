"""What running a playbook needs around the pure renderer and the runner, shared by ``sparktui play`` and
the cockpit: the nodes and how to reach them (from the cluster file or named by hand), the values probed
on the nodes before rendering, and where the audit entries go."""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sparktui.core import cluster as config
from sparktui.core.audit import AuditLog
from sparktui.core.dirs import state_dir
from sparktui.core.errors import Refused
from sparktui.core.launch.docker_run import Recreate, RecreateError, docker_run
from sparktui.core.launch.sglang_to_vllm import Translation
from sparktui.core.remedy import playbook as pb
from sparktui.core.remedy import render as rd
from sparktui.core.remote.command import Command
from sparktui.core.remote.runner import SshRunner
from sparktui.core.sources.bundle import AUDIT
from sparktui.core.text import display

if TYPE_CHECKING:
    from sparktui.core.remedy.actions import OfferRollback, Outcome
    from sparktui.core.remote.runner import Output, Runner


def nodes_of(cluster: config.Cluster) -> rd.Nodes:
    return rd.Nodes(cluster.head.name, tuple(w.name for w in cluster.workers))


def targets(cluster: config.Cluster | None, nodes: rd.Nodes) -> dict[str, str]:
    """How to reach each node over SSH: its ``ssh`` entry in the cluster file, else its name (a host or a
    ~/.ssh/config alias)."""
    known = {n.name: n.ssh for n in cluster.nodes} if cluster is not None else {}
    return {name: known.get(name, name) for name in nodes.all}


def translations(
    playbook: pb.Playbook, cluster: Mapping[str, str] | None, given: Mapping[str, str] | None = None
) -> list[tuple[str, Translation | str]]:
    """For each parameter taken from the cluster file's SGLang launch (``sglang:KEY``, not given by hand):
    its translation, to show what did not carry over, or why there is none."""
    found: list[tuple[str, Translation | str]] = []
    for param in playbook.params:
        for source in param.sources:
            if source.startswith("sglang:") and param.name not in (given or {}):
                translation = rd.translated(cluster, source.partition(":")[2])
                if translation is not None:
                    found.append((param.name, translation))
    return found


def audit_log(incidents: Sequence[Path] = ()) -> AuditLog:
    """The user's audit log (in the state directory), plus the ``audit.jsonl`` of each incident folder given,
    so the incident's report lists what ran."""
    return AuditLog((state_dir() / "audit.jsonl", *(Path(d) / AUDIT for d in incidents)))


class ProbeError(Exception):
    """A probe could not find its value on a node; one line."""


async def probe(
    playbook: pb.Playbook,
    values: Mapping[str, str],
    nodes: rd.Nodes,
    runner: Runner,
    finding_nodes: Sequence[str] = (),
) -> tuple[dict[str, dict[str, str]], list[str]]:
    """Values found on the nodes themselves (``probe:`` parameters), per node, and notes on what they could
    not carry over. Only read-only commands run (``docker inspect``), once per node."""
    per_node: dict[str, dict[str, str]] = {}
    notes: list[str] = []
    read: dict[str, Recreate] = {}
    for param in playbook.params:
        source = param.probe
        if source is None or param.name in values:
            continue
        container = values.get("container")
        if container is None:
            raise ProbeError(
                f"{playbook.id}: no value for container, whose settings {param.name} is read from; "
                "give one with --set container=NAME (or containers = [...] in the cluster file)"
            )
        for node in rd.probed_on(playbook, param.name, nodes, finding_nodes):
            if node not in read:
                read[node] = await _recreate(runner, node, container)
                notes += [f"{node}: {note}" for note in read[node].notes]
            per_node.setdefault(node, {})[param.name] = _PARTS[source](read[node])
    return per_node, notes


async def probe_over_ssh(
    playbook: pb.Playbook,
    values: Mapping[str, str],
    nodes: rd.Nodes,
    reach: Mapping[str, str],
    finding_nodes: Sequence[str] = (),
) -> tuple[dict[str, dict[str, str]], list[str]]:
    """:func:`probe` over SSH connections to the nodes (``reach``: see :func:`targets`), closed afterwards."""

    try:
        runner = SshRunner.to(reach)
    except Refused as exc:
        raise ProbeError(str(exc)) from None
    try:
        return await probe(playbook, values, nodes, runner, finding_nodes)
    finally:
        await runner.close()


async def execute_over_ssh(
    rendered: rd.Rendered,
    reach: Mapping[str, str],
    *,
    readonly: bool,
    audit: AuditLog,
    output: Output,
    offer_rollback: OfferRollback,
) -> Outcome:
    """Run a rendered playbook over SSH connections to the nodes, closed afterwards."""
    from sparktui.core.remedy import actions  # the one module that changes nodes

    runner = SshRunner.to(reach)
    try:
        return await actions.execute(
            rendered, runner, readonly=readonly, audit=audit, output=output, offer_rollback=offer_rollback
        )
    finally:
        await runner.close()


#: What each probe takes from the ``docker run`` that creates the container again.
_PARTS: dict[str, Callable[[Recreate], str]] = {
    "probe:docker-run": lambda r: r.line,
    "probe:docker-run-options": lambda r: shlex.join(r.options),
    "probe:docker-run-image": lambda r: shlex.quote(r.image),
    "probe:docker-run-command": lambda r: shlex.join(r.command),
}


async def _recreate(runner: Runner, node: str, container: str) -> Recreate:
    inspected = await _json(runner, node, f"docker inspect --type container -- {shlex.quote(container)}")
    image = await _json(runner, node, f"docker image inspect -- {shlex.quote(str(inspected.get('Image')))}")
    try:
        return docker_run(inspected, image)
    except RecreateError as exc:
        raise ProbeError(f"{node}: {exc}") from None


async def _json(runner: Runner, node: str, command: str) -> dict[str, Any]:
    printed: list[str] = []
    code = await runner.run(Command("probe", node, "host", command), lambda n, line: printed.append(line))
    text = "\n".join(printed)
    if code != 0:
        first = next((line for line in text.splitlines() if line.strip()), f"exit {code}")
        raise ProbeError(f"{node}: `{command}` failed: {display(first)}")
    try:
        found = json.loads(text)
    except ValueError:
        raise ProbeError(f"{node}: `{command}` did not print JSON") from None
    if not isinstance(found, list) or not found or not isinstance(found[0], dict):
        raise ProbeError(f"{node}: `{command}` found nothing")
    return found[0]
