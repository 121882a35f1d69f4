"""What running a playbook needs around the pure renderer and the runner, shared by ``sparktui play`` and
the cockpit: the nodes and how to reach them (from the cluster file or named by hand) and where the audit
entries go."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from sparktui import config
from sparktui.core import playbooks as pb
from sparktui.core.audit import AuditLog
from sparktui.core.bundle import AUDIT
from sparktui.core.spool import state_dir


def nodes_of(cluster: config.Cluster) -> pb.Nodes:
    return pb.Nodes(cluster.head.name, tuple(w.name for w in cluster.workers))


def targets(cluster: config.Cluster | None, nodes: pb.Nodes) -> dict[str, str]:
    """How to reach each node over SSH: its ``ssh`` entry in the cluster file, else its name (a host or a
    ~/.ssh/config alias)."""
    known = {n.name: n.ssh for n in cluster.nodes} if cluster is not None else {}
    return {name: known.get(name, name) for name in nodes.all}


def audit_log(incidents: Sequence[Path] = ()) -> AuditLog:
    """The user's audit log (in the state directory), plus the ``audit.jsonl`` of each incident folder given,
    so the incident's report lists what ran."""
    return AuditLog((state_dir() / "audit.jsonl", *(Path(d) / AUDIT for d in incidents)))
