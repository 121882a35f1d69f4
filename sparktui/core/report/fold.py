"""Folding a capture of the stacks (:mod:`sparktui.core.stacks.snapshot`) into what the logs told: a "now"
part in each stall finding it was taken for (the odd rank named, and what it does), and a "now" column per
rank in the rank x stage grids. Only the groups of the finding's nodes or job are folded into it: a capture
of this machine read beside a log of other nodes says the other jobs apart. Pure.

A stall finding is one of a stall signature (a unit of a stage track that stopped), or of a hang's category
(a multi-node NCCL hang, a watchdog's timeout, a serving stall): where the logs say nothing moves, the
processes are asked where they are."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from sparktui.core.analysis.diagnosis import Diagnosis
from sparktui.core.analysis.progress import Cell, Grid, Row
from sparktui.core.events import Finding, Severity
from sparktui.core.stacks.snapshot import GroupNow, RankNow, Snapshot
from sparktui.core.taxonomy import HANGS

if TYPE_CHECKING:
    from sparktui.core.catalogue import Signature

#: The line above the groups of a capture that are not a finding's.
APART = (
    "Read at the same time, on nodes or of jobs this finding does not name (another machine's or job's; not folded in):"
)
#: The grid's column of where each rank is now.
NOW = "now"


def is_stall(finding: Finding, signature: Signature | None) -> bool:
    """Whether ``finding`` says something stopped moving (its signature's kind, or its category)."""
    kind = signature.kind if signature is not None else ""
    return kind in ("stall", "metric") or finding.category in HANGS


def is_critical_stall(finding: Finding, signature: Signature | None) -> bool:
    return finding.severity >= Severity.CRITICAL and is_stall(finding, signature)


def belongs(group: GroupNow, finding: Finding, snapshot: Snapshot) -> bool:
    """Whether a group of the capture is the finding's: one of its ranks on a node the finding names (by the
    capture's name of the node, or the host name the node gave), or its job (its store's address) among the
    finding's facts."""
    wanted = {_short(n) for n in finding.nodes}
    if any(_short(name) in wanted for r in group.ranks for name in snapshot.names(r.node)):
        return True
    if ":" not in group.job:  # an engine's job, named by its kind: nothing of the finding says it
        return False
    address = re.compile(rf"(?<![\w.:]){re.escape(group.job)}(?![\w.:])")
    return any(address.search(str(v)) for v in finding.facts.values())


def _short(name: str) -> str:
    """A host name without its domain, in lower case (an address as it is): ``spark-a.lab`` is ``spark-a``."""
    name = name.lower()
    head = name.split(".", 1)[0]
    return name if head.isdigit() or ":" in name else head


def now_text(snapshot: Snapshot, finding: Finding) -> str:
    """The "now" part of ``finding``: when the stacks were read, and each of its groups' verdict with what it
    names (the odd ranks and what they do, the missing ranks); what could not be read after. The groups of
    other jobs or machines come apart, said to be so: they are not folded into it."""
    when = snapshot.taken.strftime("%H:%M:%S UTC")
    mine = [g for g in snapshot.groups if belongs(g, finding, snapshot)]
    others = [g for g in snapshot.groups if g not in mine]
    head = f"Now (every rank's stack, read by py-spy at {when}): "
    if not mine:
        nodes = ", ".join(finding.nodes) or "none named"
        head += f"no rank process of this finding's nodes ({nodes}) or job was found."
    parts = [head.rstrip()]
    parts += [f"- job {g.job}: {g.verdict.upper()}: " + "; ".join(g.findings) for g in mine]
    parts += [f"- NCCL's RAS on {node}: {said}" for node, said in snapshot.ras]
    parts += [f"- not read: {p}" for p in snapshot.problems]
    if others:
        parts.append(APART)
        for g in others:
            on = ", ".join(dict.fromkeys(_node_said(r.node, snapshot) for r in g.ranks))
            parts.append(f"- job {g.job} on {on}: {g.verdict.upper()}: " + "; ".join(g.findings))
    return "\n".join(parts)


def _node_said(node: str, snapshot: Snapshot) -> str:
    host = next((h for n, h in snapshot.hosts if n == node and h and h != node), "")
    return f"{node} ({host})" if host else node


def fold_finding(finding: Finding, snapshot: Snapshot | None) -> Finding:
    """``finding`` with the capture's "now" part after its detail, when the capture was taken for it."""
    if snapshot is None or finding.signature not in snapshot.findings:
        return finding
    now = now_text(snapshot, finding)
    return replace(finding, detail=f"{finding.detail}\n\n{now}" if finding.detail else now)


def fold_grid(grid: Grid, snapshot: Snapshot | None) -> Grid:
    """``grid`` with a "now" column: each rank's place read from its stack (a node's row: its ranks'), the
    odd ranks marked behind. Unchanged when no row is a rank of the capture."""
    if snapshot is None or NOW in grid.columns:
        return grid
    cells = [_now_cell(_of_row(row, snapshot)) for row in grid.rows]
    if not any(c.stage for c in cells):
        return grid
    rows = tuple(replace(row, cells=(*row.cells, cell)) for row, cell in zip(grid.rows, cells, strict=True))
    return replace(grid, columns=(*grid.columns, NOW), rows=rows)


def fold_grids(grids: Sequence[Grid], snapshot: Snapshot | None) -> tuple[Grid, ...]:
    return tuple(fold_grid(g, snapshot) for g in grids)


def fold(diagnosis: Diagnosis, snapshot: Snapshot | None) -> Diagnosis:
    """The diagnosis with the capture folded into the findings it was taken for and into every grid."""
    if snapshot is None:
        return diagnosis
    findings = tuple(fold_finding(f, snapshot) for f in diagnosis.findings)
    return replace(diagnosis, findings=findings, progress=fold_grids(diagnosis.progress, snapshot))


def _of_row(row: Row, snapshot: Snapshot) -> list[RankNow]:
    """The ranks of the capture a grid row stands for: the rank of that number on its node (by the capture's
    name of the node or its host name); for a row of the node itself, every rank on it."""
    node = _short(row.node)
    on_node = [r for r in snapshot.ranks if node in {_short(n) for n in snapshot.names(r.node)}]
    if row.who == row.node:
        return on_node
    return [r for r in on_node if r.who == row.who]


def _now_cell(ranks: Sequence[RankNow]) -> Cell:
    if not ranks:
        return Cell()
    short = "; ".join(dict.fromkeys(r.function or r.now for r in ranks))
    label = "; ".join(f"{r.who}: {r.now}" for r in ranks)
    return Cell(NOW, label, short, False, any(r.odd for r in ranks))
