"""One remediation flow, the one ``sparktui play`` and the cockpit both follow: resolve the values → translate
an SGLang launch → probe the nodes → render → approve → execute → verify.

A :class:`Plan` holds one playbook about to run on some nodes: where its values come from (the finding's
facts, the cluster file, what the user gave), what was read on the nodes, and what it renders to. The front
ends only show it and ask: the nodes a playbook runs on, the reading of the nodes, the rendering, the
approvals, the run over each node's SSH connection and the last line of a run are all decided here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from sparktui.core.audit import AuditLog
from sparktui.core.cluster import Cluster, same_host
from sparktui.core.dirs import state_dir
from sparktui.core.errors import Refused
from sparktui.core.inventory import probes
from sparktui.core.inventory.probes import ProbeError
from sparktui.core.launch.docker_run import Recreate
from sparktui.core.launch.sglang_to_vllm import Translation
from sparktui.core.remedy import actions
from sparktui.core.remedy.approvals import Approvals, cluster_id
from sparktui.core.remedy.playbook import Param, Playbook, PlaybookError
from sparktui.core.remedy.render import HeadAndWorkers, Rendered, missing, probed_on, render, resolve, translated
from sparktui.core.remote.runner import Output, SshRunner
from sparktui.core.sources.bundle import AUDIT

__all__ = ["Plan", "ProbeError", "final", "nodes_for", "placed"]


def nodes_for(cluster: Cluster | None, named: Sequence[str] = (), finding_nodes: Sequence[str] = ()) -> HeadAndWorkers:
    """The nodes a playbook runs on: those the user named (head first), else the cluster file's, else the
    nodes of the finding it fixes, else this machine."""
    return placed(cluster, named, finding_nodes)[0]


def placed(
    cluster: Cluster | None, named: Sequence[str] = (), finding_nodes: Sequence[str] = ()
) -> tuple[HeadAndWorkers, str]:
    """The nodes of :func:`nodes_for`, and in words for the user which they are and why."""
    if named:
        nodes = HeadAndWorkers(named[0], tuple(named[1:]))
        return nodes, f"{', '.join(nodes.all)} (named with --node)"
    if cluster is not None:
        nodes = HeadAndWorkers(cluster.head.name, tuple(w.name for w in cluster.workers))
        return nodes, f"{', '.join(nodes.all)} (the nodes of {cluster.path})"
    if finding_nodes:
        nodes = HeadAndWorkers(finding_nodes[0], tuple(finding_nodes[1:]))
        return nodes, f"{', '.join(nodes.all)} (the nodes of the finding it fixes)"
    return HeadAndWorkers("local"), "this machine (no --node, no cluster file, no nodes from --from)"


def audit_log(incidents: Sequence[Path] = ()) -> AuditLog:
    """The user's audit log (in the state directory), plus the ``audit.jsonl`` of each incident folder given,
    so the incident's report lists what ran."""
    return AuditLog((state_dir() / "audit.jsonl", *(Path(d) / AUDIT for d in incidents)))


@dataclass
class Plan:
    """``playbook`` on ``nodes``, with values from ``facts`` (the finding it fixes), the cluster file and
    ``given`` (typed by the user: ``--set``, the values screen)."""

    playbook: Playbook
    nodes: HeadAndWorkers
    cluster: Cluster | None = None
    facts: Mapping[str, str] = field(default_factory=dict)
    finding_nodes: Sequence[str] = ()
    given: dict[str, str] = field(default_factory=dict)
    probed: dict[str, dict[str, str]] | None = None  # values read on the nodes, once read
    notes: list[str] = field(default_factory=list)  # what the reading could not carry over
    chosen: bool = False  # the user named the nodes (--node): a finding's node none of them is runs on them all

    # -- values --------------------------------------------------------------------------------------

    def values(self) -> dict[str, str]:
        """Each parameter's value: given, else from the finding, the cluster file or its default."""
        return resolve(self.playbook, self.facts, self._cluster_values(), self.given)

    def missing(self) -> tuple[Param, ...]:
        """Every parameter still without a value (all of them at once, not one per try)."""
        return missing(self.playbook, self.values())

    def translations(self) -> list[tuple[str, Translation | str]]:
        """For each parameter taken from the cluster file's SGLang launch (``sglang:KEY``, not given): its
        translation, to show what did not carry over, or why there is none."""
        found: list[tuple[str, Translation | str]] = []
        for param in self.playbook.params:
            for source in param.sources:
                if source.startswith("sglang:") and param.name not in self.given:
                    translation = translated(self._cluster_values(), source.partition(":")[2])
                    if translation is not None:
                        found.append((param.name, translation))
        return found

    # -- where the finding is --------------------------------------------------------------------------

    def finding_on(self) -> tuple[str, ...]:
        """The nodes a step for the finding's nodes runs on: each node of the finding placed on the node it
        runs on that is the same machine (its name, its ssh host, an alias: :func:`~sparktui.core.cluster.
        same_host`); all the nodes chosen with ``--node`` where the finding's cannot all be placed. Raises
        :class:`PlaybookError` naming the nodes that cannot be placed, and how to choose."""
        found = {host: self._placed(host) for host in self.finding_nodes}
        lost = [host for host, node in found.items() if node is None]
        if not lost or not self._for_finding():
            return tuple(dict.fromkeys(n for n in found.values() if n is not None))
        if self.chosen:
            return self.nodes.all
        raise PlaybookError(self.unplaced(lost))

    def unplaced(self, lost: Sequence[str] = ()) -> str:
        """Why the finding's nodes cannot be placed on the nodes this runs on, and how to choose; "" when they
        can (or no step runs on the finding's nodes)."""
        lost = lost or [host for host in self.finding_nodes if self._placed(host) is None]
        if not lost or not self._for_finding() or self.chosen:
            return ""
        hosts = ", ".join(lost)
        where = f"the nodes of {self.cluster.path}" if self.cluster is not None else "the nodes it runs on"
        fix = f', or name it in {self.cluster.path} (aliases = ["{lost[0]}"] in its [[nodes]])' if self.cluster else ""
        return (
            f"{self.playbook.id}: cannot place {hosts} (where the finding is) on {where} "
            f"({', '.join(self.nodes.all)}): choose the node with `sparktui play {self.playbook.id} --node NAME`{fix}"
        )

    def _for_finding(self) -> bool:
        return any(step.on == "finding" for step in (*self.playbook.steps, *self.playbook.rollback))

    def _placed(self, host: str) -> str | None:
        """The node this runs on that ``host`` names, or None."""
        for name in self.nodes.all:
            node = self.cluster.node_for(name) if self.cluster is not None else None
            if node.is_named(host) if node is not None else same_host(name, host):
                return name
        return None

    @property
    def reach(self) -> dict[str, str]:
        """How to reach each node over SSH: its ``ssh`` entry in the cluster file, else its name (a host or a
        ~/.ssh/config alias)."""
        known = {n.name: n.ssh for n in self.cluster.nodes} if self.cluster is not None else {}
        return {name: known.get(name, name) for name in self.nodes.all}

    def _cluster_values(self) -> dict[str, str] | None:
        return self.cluster.values() if self.cluster is not None else None

    # -- reading the nodes, rendering ------------------------------------------------------------------

    @property
    def needs_probe(self) -> bool:
        """Whether values must be read on the nodes (and have not been) before the commands are known."""
        return self.probed is None and any(p.probe and p.name not in self.given for p in self.playbook.params)

    async def probe(self) -> None:
        """Read on the nodes what the playbook takes from them (``docker inspect``: read-only commands), once
        per node, over SSH connections closed afterwards. Raises :class:`ProbeError` with one line."""
        values = self.values()
        try:
            finding_on = self.finding_on()
        except PlaybookError as exc:
            raise ProbeError(str(exc)) from None
        try:
            runner = SshRunner.to(self.reach)
        except Refused as exc:
            raise ProbeError(str(exc)) from None
        per_node: dict[str, dict[str, str]] = {}
        notes: list[str] = []
        read: dict[str, Recreate] = {}
        try:
            for param in self.playbook.params:
                source = param.probe
                if source is None or param.name in values:
                    continue
                container = values.get("container")
                if container is None:
                    raise ProbeError(
                        f"{self.playbook.id}: no value for container, whose settings {param.name} is read from; "
                        "give one with --set container=NAME (or containers = [...] in the cluster file)"
                    )
                for node in probed_on(self.playbook, param.name, self.nodes, finding_on):
                    if node not in read:
                        read[node] = await probes.container(runner, node, container)
                        notes += [f"{node}: {note}" for note in read[node].notes]
                    per_node.setdefault(node, {})[param.name] = probes.PARTS[source](read[node])
        finally:
            await runner.close()
        self.probed, self.notes = per_node, notes

    def render(self, *, preview: bool = False) -> Rendered:
        """The exact commands per node, with what was read on the nodes. A ``preview`` shows each value it
        lacks as ``<name>`` (never to be run); otherwise a missing or refused value raises
        :class:`~sparktui.core.remedy.playbook.PlaybookError`."""
        return render(
            self.playbook, self.values(), self.nodes, self.finding_on(), per_node=self.probed, preview=preview
        )

    # -- approving, running ----------------------------------------------------------------------------

    def refused(self, readonly: bool) -> str:
        """Why read-only mode refuses this playbook, or ""; decided before anything is asked or read."""
        return self.playbook.refused(readonly)

    def approved(self, approvals: Approvals) -> bool:
        """Whether the user chose to run this playbook on this cluster without being asked."""
        return approvals.granted(cluster_id(self.cluster, self.nodes.all), self.playbook)

    def approve(self, approvals: Approvals) -> None:
        """Run this playbook on this cluster without asking from now on (until it is edited)."""
        approvals.grant(cluster_id(self.cluster, self.nodes.all), self.playbook)

    async def execute(
        self,
        rendered: Rendered,
        *,
        readonly: bool,
        audit: AuditLog,
        output: Output,
        offer_rollback: actions.OfferRollback | None,
    ) -> actions.Outcome:
        """Run ``rendered`` over SSH connections to the nodes (closed afterwards); each command is audited.
        Raises :class:`~sparktui.core.remedy.actions.ActionError` or
        :class:`~sparktui.core.errors.Refused` when it cannot start, with one line."""
        runner = SshRunner.to(self.reach)
        try:
            return await actions.execute(
                rendered, runner, readonly=readonly, audit=audit, output=output, offer_rollback=offer_rollback
            )
        finally:
            await runner.close()


def final(rendered: Rendered, outcome: actions.Outcome) -> str:
    """The last line of a run: succeeded (verified, or every command exited 0), or failed, and then rolled
    back, left as is, or nothing changed."""
    if outcome.ok:
        if rendered.check.kind == "none":
            return "Succeeded: every command exited 0 (this playbook has no verification)."
        note = outcome.verdict.note if outcome.verdict is not None else ""
        return f"Succeeded, verified: {note}"
    if outcome.rolled_back:
        ran, failed = len(outcome.rolled_back), sum(e.exit_code != 0 for e in outcome.rolled_back)
        if failed:
            return f"Failed, rollback ran, but {failed} of its {ran} commands failed: {outcome.failure}"
        return f"Failed, rolled back (the rollback ran {ran} commands): {outcome.failure}"
    if not outcome.changed:
        return f"Failed before changing anything (only checks ran): {outcome.failure}"
    why = "the rollback was declined" if rendered.rollback else "this playbook has no rollback"
    return f"Failed, left as is ({why}): {outcome.failure}"
