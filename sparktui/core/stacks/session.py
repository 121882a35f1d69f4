"""Where a capture of the stacks runs and how it reaches the nodes: a cluster's nodes over SSH, else the
nodes a session's ``ssh://`` sources are read from, else this machine; one SSH connection per node for the
capture, closed after it. Shared by ``sparktui stacks`` and the cockpit."""

from __future__ import annotations

from collections.abc import Mapping

from sparktui.core.audit import AuditLog
from sparktui.core.cluster import Cluster
from sparktui.core.stacks.gather import NodeStacks, Progress, gather
from sparktui.core.stacks.script import Request

#: This machine, for a session without nodes.
LOCAL = {"local": ""}


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
) -> list[NodeStacks]:
    """Every node of ``targets`` at once, each within ``timeout`` seconds. Raises :class:`Refused` for a
    target that is no SSH target."""
    from sparktui.core.remote.runner import SshRunner  # asyncssh: only when a capture runs

    runner = SshRunner.to(targets, trust_new_host_key=trust_new_host_key)
    try:
        return await gather(runner, list(targets), request, timeout=timeout, progress=progress, audit=audit)
    finally:
        await runner.close()
