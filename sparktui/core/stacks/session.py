"""Where a capture of the stacks runs and how it reaches the nodes: a cluster's nodes over SSH, else the
nodes a session's ``ssh://`` sources are read from, else this machine; one SSH connection per node for the
capture, closed after it; over it, where asked, this machine's py-spy brought for the capture and taken away
after (:mod:`~sparktui.core.stacks.bring`). Shared by ``sparktui stacks`` and the cockpit."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from sparktui.core.audit import AuditLog
from sparktui.core.cluster import Cluster
from sparktui.core.stacks import bring as bringing
from sparktui.core.stacks.gather import NodeStacks, Progress, gather
from sparktui.core.stacks.script import Request

if TYPE_CHECKING:
    from sparktui.core.remote.runner import Runner

#: This machine, for a session without nodes.
LOCAL = {"local": ""}


@dataclass(frozen=True, slots=True)
class Bring:
    """py-spy to bring where ranks run without one: this machine's ``binary``; ``ask`` is shown the plan and
    says whether to go on; ``said`` is given each line the commands print (node, line)."""

    binary: Path
    ask: Callable[[bringing.Plan], Awaitable[bool]]
    said: Callable[[str, str], None]


def targets_of(cluster: Cluster | None, sources: Mapping[str, str] | None = None) -> tuple[dict[str, str], str]:
    """The nodes to capture on (name -> SSH target, "" for this machine) and how to say where they are:
    ``cluster``'s, else the SSH nodes of the session's ``sources`` (name -> target), else this machine."""
    if cluster is not None:
        return {n.name: n.ssh for n in cluster.nodes}, f"the nodes of {cluster.path}"
    if sources:
        return dict(sources), f"the nodes of the sources ({', '.join(sources)}; no cluster file)"
    return dict(LOCAL), "this machine (no nodes named, no cluster file)"


async def capture(
    targets: Mapping[str, str],
    request: Request,
    *,
    timeout: float,
    progress: Progress | None = None,
    audit: AuditLog | None = None,
    trust_new_host_key: bool = False,
    bring: Bring | None = None,
) -> list[NodeStacks]:
    """Every node of ``targets`` at once, each within ``timeout`` seconds; with ``bring``, again where py-spy
    was missing and was brought. Raises :class:`Refused` for a target that is no SSH target."""
    from sparktui.core.remote.runner import SshRunner  # asyncssh: only when a capture runs

    runner = SshRunner.to(targets, trust_new_host_key=trust_new_host_key)
    try:
        found = await gather(runner, list(targets), request, timeout=timeout, progress=progress, audit=audit)
        if bring is not None:
            found = await _brought(runner, found, bring, request, timeout, progress, audit)
        return found
    finally:
        await runner.close()


async def _brought(
    runner: Runner,
    found: list[NodeStacks],
    bring: Bring,
    request: Request,
    timeout: float,
    progress: Progress | None,
    audit: AuditLog | None,
) -> list[NodeStacks]:
    """``found`` again where py-spy was missing and was brought (when the user says so), and taken away after;
    a node it could not go to says why among its problems."""
    from sparktui.core.remote.runner import recorded  # asyncssh: only when a capture runs

    plan = bringing.plan(found)
    for refusal in plan.refused:
        next(n for n in found if refusal.startswith(f"{n.node}: ")).problems.append(refusal)
    if not plan.places or not await bring.ask(plan):
        return found
    put, remove = bringing.commands(plan.places, bring.binary.read_bytes())
    try:
        entries = await asyncio.gather(*(recorded(runner, c, bring.said, audit) for c in put))
        ready = sorted({e.node for e in entries if e.exit_code == 0})
        again = {
            n.node: n for n in await gather(runner, ready, request, timeout=timeout, progress=progress, audit=audit)
        }
    finally:
        await asyncio.gather(*(recorded(runner, c, bring.said, audit) for c in remove))
    return [again.get(n.node, n) for n in found]
