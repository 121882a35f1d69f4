"""The pre-launch check: every node's inventory (collected at once, one round trip each), the launch command,
and the checks of ``diagnostics/checks/`` over them, giving findings of the diagnosis taxonomy with their
remediations, the drift table, and a verdict per node and overall: ``block`` (will fail), ``slow`` (will
work badly) or ``ready``.

:func:`judge` is pure (inventories and a launch in, a :class:`Preflight` out); :func:`preflight` runs the
collection first.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from sparktui.core.audit import AuditLog
from sparktui.core.cluster import Cluster
from sparktui.core.events import Finding, Position, finding_dict
from sparktui.core.inventory import collect, fabric, rules
from sparktui.core.inventory.drift import Drift, drift
from sparktui.core.inventory.facts import NodeInventory, Value
from sparktui.core.inventory.names import Facts, launch_facts, node_facts
from sparktui.core.inventory.rules import Outcome, Rule, shown
from sparktui.core.inventory.script import PROBE_BUDGET, Request
from sparktui.core.launch.serve import Launch, LaunchError, parse_launch
from sparktui.core.remote.runner import Runner, SshRunner

VERDICT_ORDER = ("ready", "slow", "block")
#: The verdict a firing check of each kind gives.
GIVES = {"block": "block", "slow": "slow", "advice": "ready"}
#: Where a check's finding points: a check has no log line, so its node stands for the source.
CHECK_SOURCE = "check"


@dataclass(frozen=True, slots=True)
class NodeToCheck:
    """A node to check: its name, and whether it is the head (where the server listens, Ray's head runs)."""

    name: str
    head: bool = False


@dataclass(frozen=True, slots=True)
class NotChecked:
    """A check that could not decide, on which node ("" for a check over every node), and the facts it
    lacked with why each was of no use."""

    rule: Rule
    node: str
    lacking: tuple[tuple[str, str], ...]

    @property
    def why(self) -> str:
        return "; ".join(f"{name}: {reason}" for name, reason in self.lacking)


@dataclass(frozen=True, slots=True)
class Preflight:
    """What ``sparktui check`` concludes: each node's inventory, the findings of the checks, what could not be
    checked, a verdict per node and overall, and the drift table."""

    inventories: tuple[NodeInventory, ...]
    launch: Launch | None
    findings: tuple[Finding, ...]
    not_checked: tuple[NotChecked, ...]
    verdicts: Mapping[str, str]  # node -> verdict
    verdict: str  # overall
    drift: Drift
    facts: Mapping[str, Facts] = field(default_factory=dict)
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "version": 1,
            "verdict": self.verdict,
            "nodes": {
                inv.node: {
                    "verdict": self.verdicts.get(inv.node, "block"),
                    "seconds": round(inv.seconds, 3),
                    "error": inv.error or None,
                    "facts": {k: rules.as_json(v) for k, v in sorted(self.facts[inv.node].values.items())}
                    if inv.node in self.facts
                    else {},
                    "unknown": dict(sorted(self.facts[inv.node].reasons.items())) if inv.node in self.facts else {},
                }
                for inv in self.inventories
            },
            "launch": None if self.launch is None else self.launch.command,
            "findings": [finding_dict(i, f) for i, f in enumerate(self.findings, 1)],
            "not_checked": [
                {"check": n.rule.id, "node": n.node or None, "lacking": dict(n.lacking)} for n in self.not_checked
            ],
            "drift": self.drift.as_dict(),
            "fabric": [asdict(row) for row in fabric.rows(self.inventories)],
            "builds": {inv.node: [asdict(b) for b in inv.all_builds()] for inv in self.inventories},
            "seconds": round(self.seconds, 3),
        }


@dataclass(frozen=True, slots=True)
class Plan:
    """Which nodes to check and how: ``targets`` maps each node's name to how it is reached (``[user@]host
    [:port]`` or an ssh alias; "" for this machine), ``head`` is the head's name, ``where`` says in words
    where the nodes came from."""

    targets: Mapping[str, str]
    head: str
    request: Request
    launch: Launch | None
    where: str


def plan(
    cluster: Cluster | None,
    nodes: Sequence[str] = (),
    *,
    launch: str = "",
    image: str = "",
    containers: Sequence[str] = (),
    model: str = "",
    probe: bool = True,
    probe_budget: int = PROBE_BUDGET,
) -> Plan:
    """The nodes named (the first is the head), else the cluster file's (its image, containers and launch
    where not given), else this machine. Raises :class:`LaunchError` for a launch that cannot be read and
    ValueError for a node named twice."""
    if nodes:
        cluster = None
    command = launch or (cluster.deployment.launch if cluster is not None else "")
    read = parse_launch(command) if command else None
    image = image or (cluster.deployment.image if cluster is not None else "")
    names = tuple(containers) or (cluster.deployment.containers if cluster is not None else ())
    if read is not None and read.container and not names:
        names = (read.container,)
    model = model or (read.model if read is not None else "")
    request = Request(image=image, containers=names, model=model, probe=probe, probe_budget=probe_budget)
    if nodes:
        if len(set(nodes)) < len(nodes):
            raise ValueError(f"{next(n for n in nodes if nodes.count(n) > 1)}: named twice")
        return Plan({n: n for n in nodes}, nodes[0], request, read, "the nodes named")
    if cluster is not None:
        targets = {n.name: n.ssh for n in cluster.nodes}
        return Plan(targets, cluster.head.name, request, read, f"the nodes of {cluster.path}")
    return Plan({"local": ""}, "local", request, read, "this machine (no nodes named, no cluster file)")


async def run(plan: Plan, checks: Sequence[Rule], *, trust: bool = False, audit: AuditLog | None = None) -> Preflight:
    """Check ``plan``'s nodes over SSH connections of their own (this machine for "local"), then read the
    launch again with the head's own vLLM parser where the probe found it (which flags take no value).
    Raises :class:`Refused` for a node that is no SSH target."""
    runner = SshRunner.to(plan.targets, trust_new_host_key=trust)
    targets = [NodeToCheck(name, name == plan.head) for name in plan.targets]
    try:
        result = await preflight(runner, targets, plan.request, plan.launch, checks, audit)
    finally:
        await runner.close()
    head = next((inv for inv in result.inventories if inv.node == plan.head), None)
    flags = head.probe.vllm_flags if head is not None and head.probe is not None else None
    if plan.launch is None or not flags or plan.launch.engine != "vllm":
        return result
    try:
        launch = parse_launch(plan.launch.command, {name for name, flag in flags.items() if not flag.takes_value})
    except LaunchError:
        return result
    if launch == plan.launch:
        return result
    return replace(judge(result.inventories, {plan.head}, launch, checks), seconds=result.seconds)


async def preflight(
    runner: Runner,
    targets: Sequence[NodeToCheck],
    request: Request,
    launch: Launch | None,
    checks: Sequence[Rule],
    audit: AuditLog | None = None,
) -> Preflight:
    """Collect every node's inventory at once over ``runner``, then :func:`judge` it."""
    started = time.monotonic()
    found = await collect.collect_all(runner, [(t.name, request) for t in targets], audit)
    result = judge(found, {t.name for t in targets if t.head}, launch, checks)
    return replace(result, seconds=time.monotonic() - started)


def judge(
    inventories: Sequence[NodeInventory], heads: set[str], launch: Launch | None, checks: Sequence[Rule]
) -> Preflight:
    """The findings, verdicts and drift of these inventories and this launch."""
    reachable = [inv for inv in inventories if not inv.error]
    cluster: dict[str, Value] = {
        "cluster.nodes": len(inventories),
        "cluster.image_pullable": any(inv.image is not None and inv.image.digests for inv in reachable),
    }
    given = launch_facts(launch) if launch is not None else {}
    facts: dict[str, Facts] = {}
    for inv in inventories:
        own = node_facts(inv, head=inv.node in heads, cluster=cluster)
        facts[inv.node] = Facts({**own.values, **given}, own.reasons)
    outcomes: list[Outcome] = []
    for rule in checks:
        if rule.needs_launch and launch is None:
            continue
        if rule.scope == "cluster":
            if len(reachable) < 2:
                continue  # nothing to compare
            nodes = {inv.node: facts[inv.node].values for inv in reachable}
            reasons = _cluster_reasons(facts, [inv.node for inv in reachable])
            outcomes.append(rules.run_cluster(rule, {**cluster, **given}, nodes, reasons))
            continue
        for inv in inventories:
            outcome = rules.run_node(rule, inv.node, facts[inv.node].values, facts[inv.node].reasons)
            if inv.error and outcome.fired is not True:
                continue  # nothing of an unreachable node can be decided; it is said once, by its own check
            outcomes.append(outcome)
    findings = _findings(outcomes, [inv.node for inv in inventories], facts)
    verdicts = {inv.node: "ready" for inv in inventories}
    overall = "ready"
    for outcome in outcomes:
        if outcome.fired is not True:
            continue
        gives = GIVES[outcome.rule.verdict]
        for node in [outcome.node] if outcome.node else [inv.node for inv in reachable]:
            verdicts[node] = _worse(verdicts[node], gives)
        overall = _worse(overall, gives)
    return Preflight(
        tuple(inventories),
        launch,
        findings,
        _not_checked(outcomes),
        verdicts,
        overall,
        drift({inv.node: facts[inv.node].values for inv in reachable}),
        facts,
    )


def _worse(a: str, b: str) -> str:
    return max(a, b, key=VERDICT_ORDER.index)


def _cluster_reasons(facts: Mapping[str, Facts], nodes: Sequence[str]) -> dict[str, str]:
    """For a check over every node: each fact's reason, or node by node where they differ."""
    found: dict[str, dict[str, str]] = {}
    for node in nodes:
        for name, reason in facts[node].reasons.items():
            found.setdefault(name, {})[node] = reason
    said = {}
    for name, by_node in found.items():
        if len(by_node) == len(nodes) and len(set(by_node.values())) == 1:
            said[name] = next(iter(by_node.values()))
        else:
            said[name] = "; ".join(f"{node}: {reason}" for node, reason in by_node.items())
    return said


def _findings(outcomes: Sequence[Outcome], order: Sequence[str], facts: Mapping[str, Facts]) -> tuple[Finding, ...]:
    """One finding per check that fired, with every node it fired on; blocks first, then slows, advice."""
    fired: dict[str, list[Outcome]] = {}
    for outcome in outcomes:
        if outcome.fired is True:
            fired.setdefault(outcome.rule.id, []).append(outcome)
    found = []
    for group in fired.values():
        rule = group[0].rule
        nodes = tuple(o.node for o in group if o.node) or tuple(n for n in order if n in facts)
        values: dict[str, str] = {}
        if rule.advisory is not None:
            values["advisory"] = f"{rule.advisory.source} ({rule.advisory.date})"
            values["fix"] = rule.fix
        for name in sorted(rule.when.names):
            per_node = {n: shown(facts[n].values.get(name)) for n in nodes if n in facts}
            if len(set(per_node.values())) == 1:
                values[name] = next(iter(per_node.values()))
            else:
                values[name] = "; ".join(f"{n}: {v}" for n, v in per_node.items())
        found.append(
            Finding(
                signature=rule.id,
                category=rule.category,
                severity=rule.severity,
                title=rule.title,
                explanation=rule.explanation,
                remediations=rule.playbooks,
                first_seen=Position(CHECK_SOURCE, 0),
                nodes=nodes,
                count=len(group),
                facts=values,
                detail="; ".join(o.detail for o in group),
                verdict=rule.verdict,
            )
        )
    rank = {"block": 0, "slow": 1, "advice": 2}
    return tuple(sorted(found, key=lambda f: rank[f.verdict]))


def _not_checked(outcomes: Sequence[Outcome]) -> tuple[NotChecked, ...]:
    return tuple(NotChecked(o.rule, o.node, o.lacking) for o in outcomes if o.fired is None)
