"""`I`: the pre-launch check of the cockpit's nodes (``sparktui check`` on the cluster file's nodes, or this
machine): each node's verdict, the findings with their remedies, and the drift table, differences first.

The check runs in a thread of its own (one SSH round trip per node, in parallel); the screen says so until
it ends. Its result is kept by the app, so that ``x`` puts the verdicts and the drift table in the report.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import ClassVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from sparktui.core.audit import AuditLog
from sparktui.core.cluster import Cluster
from sparktui.core.errors import Invalid, Refused
from sparktui.core.events import Finding
from sparktui.core.inventory import builds, fabric, preflight, rules
from sparktui.core.inventory.drift import lines
from sparktui.core.text import display
from sparktui.core.words import listed
from sparktui.richtext import VERDICT_STYLE
from sparktui.tui.bindings import closing

TITLE = "Inventory: the pre-launch check of the nodes"


class InventoryScreen(ModalScreen[None]):
    """The pre-launch check of the cockpit's nodes: verdicts, findings, the drift and fabric tables."""

    BINDINGS: ClassVar[list[BindingType]] = closing("inventory")

    def __init__(
        self,
        cluster: Cluster | None,
        audit: AuditLog | None = None,
        done: Callable[[preflight.Preflight], None] | None = None,
    ) -> None:
        super().__init__()
        self.cluster = cluster
        self.audit = audit
        self.done = done
        self.body = Static(Text("checking the nodes (one round trip each)…", style="dim"), id="inventory-body")

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="inventory"):
            yield Static(Text(TITLE, style="bold"))
            yield self.body
            yield Static(Text("esc closes", style="dim"))

    def on_mount(self) -> None:
        self.check()

    @work(thread=True, exclusive=True, group="inventory", exit_on_error=False)
    def check(self) -> None:
        try:
            plan = preflight.plan(self.cluster)
            result = asyncio.run(preflight.run(plan, rules.builtin(), audit=self.audit))
        except (Invalid, Refused, ValueError) as exc:
            self.app.call_from_thread(self.body.update, Text(f"cannot check: {exc}", style="red"))
            return
        self.app.call_from_thread(self.show, result, plan.where)

    def show(self, result: preflight.Preflight, where: str) -> None:
        self.body.update(render(result, where))
        # The scroll takes the keys once it has something to scroll (a scroll container may only take the focus
        # then): PageDown, End and the arrows did nothing until tab.
        self.call_after_refresh(self.query_one("#inventory", VerticalScroll).focus)
        if self.done is not None:
            self.done(result)


def known_bad(findings: Sequence[Finding]) -> dict[str, list[str]]:
    """Each node that loads a known-bad build, with the advisories (of verdict block or slow) that say so."""
    found: dict[str, list[str]] = {}
    for finding in findings:
        if "advisory" in finding.facts and finding.verdict in ("block", "slow"):
            for node in finding.nodes:
                found.setdefault(node, []).append(finding.signature)
    return found


def render(result: preflight.Preflight, where: str) -> Text:
    """The verdicts, each finding (title, nodes, detail, remedies), then the drift and fabric tables."""
    out = Text()
    out.append(f"{where}, in {result.seconds:.1f} s\n", style="dim")
    out.append("verdict: ")
    out.append(result.verdict.upper(), style=VERDICT_STYLE[result.verdict])
    for node, verdict in result.verdicts.items():
        out.append(f"   {node}: ")
        out.append(verdict, style=VERDICT_STYLE[verdict])
    out.append("\n")
    for finding in result.findings:
        verdict = finding.verdict
        out.append(f"\n{verdict.upper():<6} ", style=VERDICT_STYLE.get(verdict, ""))
        out.append(finding.title, style="bold")
        out.append(f"  {listed(finding.nodes)}\n", style="dim")
        out.append(f"       {display(finding.detail)}\n")
        if finding.remediations:
            out.append(f"       remedy: {', '.join(finding.remediations)}\n", style="cyan")
    if not result.findings:
        out.append("\nnothing found that would stop a launch\n", style="green")
    table = result.drift
    differing = [r for r in table.rows if r.differs]
    out.append(f"\ndrift across {', '.join(table.nodes)}: {len(differing)} of {len(table.rows)} differ\n", style="bold")
    for line in lines(table, only_differing=True):
        out.append(f"  {display(line)}\n", style="yellow")
    for row in table.rows:
        if not row.differs:
            out.append(f"  {row.label:<16} {display(row.groups[0][0])}\n", style="dim")
    out.append("\nfabric (RDMA ports, from /sys/class/infiniband)\n", style="bold")
    for line in fabric.lines(fabric.rows(result.inventories)):
        out.append(f"  {display(line)}\n")
    out.append("\nbuilds (read from the files each node loads)\n", style="bold")
    for line in builds.lines(tuple(row for inv in result.inventories for row in inv.build_rows())):
        out.append(f"  {display(line)}\n")
    return out
