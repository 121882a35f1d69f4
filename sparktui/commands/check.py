"""``sparktui check [--launch CMD] [NODE...]``, and ``sparktui check --serving URL`` after launch (see
:mod:`sparktui.commands.serving`). Before launch, every node's inventory and the launch command
against the checks of ``diagnostics/checks/``; findings with their remediations, the drift between the
nodes, and a verdict per node and overall (block / slow / ready).

Nodes: as ``discover`` takes them (``[user@]host[:port]`` or an ssh alias; the first is the head); none
given: the cluster file's; no cluster file: this machine. Exit status as ``diagnose``: 0 when no finding
reaches ``--fail-on`` (default error: a block), 1 when one does, 2 for input that cannot be used.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console
from rich.text import Text

from sparktui.commands import serving
from sparktui.commands.common import UsageError, err, node_arguments, out, trust_option
from sparktui.core import cluster as clusterfile
from sparktui.core.audit import AuditEntry, AuditLog
from sparktui.core.catalogue import CatalogueError
from sparktui.core.dirs import state_dir
from sparktui.core.errors import Refused
from sparktui.core.events import Severity
from sparktui.core.inventory import builds, fabric, rules
from sparktui.core.inventory.drift import lines as drift_lines
from sparktui.core.inventory.script import PROBE_BUDGET
from sparktui.core.launch.serve import LaunchError
from sparktui.core.text import display, json_inert
from sparktui.richtext import VERDICT_STYLE

if TYPE_CHECKING:
    from sparktui.core.inventory.preflight import Plan, Preflight

NAME = "check"


def add(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    c = sub.add_parser(NAME, help="before launch: check the nodes and the launch command (block / slow / ready)")
    c.add_argument("nodes", nargs="*", metavar="NODE", help="[USER@]HOST[:PORT] or an ssh alias; the first is the head")
    c.add_argument("--launch", metavar="COMMAND", default="", help="the launch: vllm serve ... or sglang's")
    c.add_argument("--image", default="", help="the engine image (default: the cluster file's, else the container's)")
    c.add_argument(
        "--container",
        action="append",
        default=[],
        metavar="NAME",
        help="the engine container (repeatable; default: the cluster file's, else any running vLLM/SGLang/Ray one)",
    )
    c.add_argument(
        "--model",
        default="",
        help="the model: to look for before launch (default: the launch's); to ask with --serving (default: the "
        "first one the server lists)",
    )
    c.add_argument("--no-probe", action="store_true", help="do not look inside the image")
    c.add_argument(
        "--probe-budget",
        type=int,
        default=PROBE_BUDGET,
        metavar="SECONDS",
        help=f"time the in-image probe has (default {PROBE_BUDGET})",
    )
    c.add_argument("--checks", action="append", default=[], metavar="DIR", help="also load check files from DIR")
    c.add_argument("--json", action="store_true", help="print the result as JSON")
    c.add_argument("--fail-on", default="error", metavar="SEVERITY", help="exit 1 from this severity (default error)")
    c.add_argument("--all", action="store_true", help="show every row of the drift table, not only the differences")
    c.add_argument("--report", metavar="DIR", help="also write the result as a report: Markdown, HTML, JSON")
    trust_option(c)
    serving.add_arguments(c)
    c.set_defaults(run=main)


def main(args: argparse.Namespace) -> int:
    if args.serving:  # after launch: does it serve?
        return serving.run(args)
    try:
        fail_on = Severity.parse(args.fail_on)
    except ValueError as exc:
        raise UsageError(f"--fail-on: {exc}") from None
    if args.probe_budget < 1:
        raise UsageError("--probe-budget: give 1 or more seconds")
    try:
        checks = rules.load([*rules.builtin_dirs(), *(Path(d) for d in args.checks)])
    except CatalogueError as exc:
        raise UsageError(str(exc)) from None
    from sparktui.core.inventory import preflight  # asyncssh: only for this command

    found = clusterfile.find() if not args.nodes else None
    try:
        plan = preflight.plan(
            clusterfile.load(found) if found is not None else None,
            node_arguments(args.nodes),
            launch=args.launch,
            image=args.image,
            containers=args.container,
            model=args.model,
            probe=not args.no_probe,
            probe_budget=args.probe_budget,
        )
    except LaunchError as exc:
        raise UsageError(f"--launch: {exc}") from None
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    audit = _Kept((state_dir() / "audit.jsonl",))
    try:
        result = asyncio.run(preflight.run(plan, checks, trust=args.trust_new_host_key, audit=audit))
    except Refused as exc:
        raise UsageError(str(exc)) from None
    if args.report:
        _report(Path(args.report), result, plan, audit.kept)
    if args.json:
        sys.stdout.write(json_inert(json.dumps(result.as_dict(), indent=2, ensure_ascii=False)) + "\n")
    else:
        show(result, plan.where, out(), all_rows=args.all)
    worst = max((f.severity for f in result.findings), default=None)
    return 1 if worst is not None and worst >= fail_on else 0


@dataclass
class _Kept(AuditLog):
    """The user's audit log, which also keeps this run's entries for the report."""

    kept: list[AuditEntry] = field(default_factory=list)

    def add(self, entry: AuditEntry) -> None:
        super().add(entry)
        self.kept.append(entry)


def _report(directory: Path, result: Preflight, plan: Plan, audit: list[AuditEntry]) -> None:
    """The result as an incident report (secrets redacted): the findings, the verdicts and drift table in its
    Inventory section, the launch command, and the inventory commands that ran."""
    from sparktui.core.analysis.diagnosis import Diagnosis
    from sparktui.core.report.export import export
    from sparktui.core.report.incident import Incident, Inventory

    table = fabric.rows(result.inventories)
    built = tuple(row for inv in result.inventories for row in inv.build_rows())
    inventory = Inventory(result.verdict, tuple(result.verdicts.items()), result.drift, result.seconds, table, built)
    incident = Incident(
        Diagnosis((), result.findings, {}),
        title=f"sparktui check: {', '.join(plan.targets)}",
        description=f"Before launch: verdict {result.verdict}.",
        command=plan.launch.command if plan.launch is not None else "",
        audit=tuple(audit),
        inventory=inventory,
    )
    try:
        written = export(incident, directory)
    except OSError as exc:
        raise UsageError(f"--report {directory}: {exc.strerror or exc}") from None
    shown = ", ".join(p.name for p in written if p.parent == directory)
    err().print(Text(f"sparktui: report written to {directory} ({shown})", style="green"))


def not_checked(result: Preflight) -> dict[str, list[str]]:
    """The checks that could not decide, under each reason (a probe that did not run stops many at once):
    reason -> ``check (node)`` in the order found."""
    grouped: dict[str, list[str]] = {}
    for item in result.not_checked:
        for name, reason in item.lacking:
            where = f" ({item.node})" if item.node and len(result.inventories) > 1 else ""
            entry = f"{item.rule.id}{where}"
            listed = grouped.setdefault(f"{name}: {reason}", [])
            if entry not in listed:
                listed.append(entry)
    merged: dict[str, list[str]] = {}
    for why, checks in grouped.items():
        fact, _, reason = why.partition(": ")
        key = reason if fact.startswith("probe.") and reason.startswith("the in-image probe:") else why
        merged.setdefault(key, [])
        merged[key] += [c for c in checks if c not in merged[key]]
    return merged


def show(result: Preflight, where: str, console: Console, *, all_rows: bool = False) -> None:
    """The result for a person: the verdicts, each finding with its remediations, what could not be checked,
    the drift between the nodes, and how long each node took."""
    times = ", ".join(f"{inv.node} {inv.seconds:.1f} s" for inv in result.inventories)
    console.print(Text(f"sparktui check: {where}, in {result.seconds:.1f} s ({times})", style="dim"))
    line = Text("verdict: ")
    line.append(result.verdict.upper(), style=VERDICT_STYLE[result.verdict])
    for inv in result.inventories:
        verdict = result.verdicts.get(inv.node, "block")
        line.append(f"   {inv.node}: ")
        line.append(verdict, style=VERDICT_STYLE[verdict])
    console.print(line)
    if result.launch is not None:
        launch = result.launch
        console.print(
            Text(
                f"launch: {launch.engine} {launch.model}, world size {launch.world_size} "
                f"(tp {launch.tensor_parallel} x pp {launch.pipeline_parallel}), "
                f"executor {launch.executor or '(default)'}, port {launch.port}",
                style="dim",
            )
        )
    for finding in result.findings:
        verdict = finding.verdict
        head = Text("\n")
        head.append(f"{verdict.upper():<6} ", style=VERDICT_STYLE.get(verdict, ""))
        head.append(finding.title, style="bold")
        head.append(f"  [{finding.signature}] {', '.join(finding.nodes)}", style="dim")
        console.print(head)
        console.print(Text(f"       {display(finding.detail)}"))
        if "advisory" in finding.facts:
            console.print(Text(f"       fix: {display(finding.facts['fix'])}"))
            console.print(Text(f"       advisory: {display(finding.facts['advisory'])}", style="dim"))
        if finding.remediations:
            fixes = ", ".join(f"sparktui play {book}" for book in finding.remediations)
            console.print(Text(f"       remedy: {fixes}", style="cyan"))
    if result.not_checked:
        console.print(Text("\nnot checked, for want of facts:", style="bold"))
        for why, checks in not_checked(result).items():
            console.print(Text(f"  {display(why)}", style="dim"))
            console.print(Text(f"      {', '.join(checks)}", style="dim"))
    table = result.drift
    if len(table.nodes) > 1:
        shown = drift_lines(table, only_differing=not all_rows)
        differing = len(table.differing)
        title = f"\ndrift across {', '.join(table.nodes)}: {differing} of {len(table.rows)} facts differ"
        console.print(Text(title + ("" if all_rows or not differing else " (--all shows every fact)"), style="bold"))
        for text in shown:
            console.print(Text(f"  {display(text)}"))
    console.print(Text("\nfabric (RDMA ports, from /sys/class/infiniband):", style="bold"))
    for text in fabric.lines(fabric.rows(result.inventories)):
        console.print(Text(f"  {display(text)}"))
    console.print(Text("\nbuilds (read from the files each node loads):", style="bold"))
    for text in builds.lines(tuple(row for inv in result.inventories for row in inv.build_rows())):
        console.print(Text(f"  {display(text)}"))
    for inv in result.inventories:
        if inv.error:
            console.print(Text(display(f"\n{inv.node}: {inv.error}"), style="red"))
    if not result.findings:
        console.print(Text("\nnothing found that would stop the launch", style="green"))
