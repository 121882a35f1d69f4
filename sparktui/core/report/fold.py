"""Folding a capture of the stacks (:mod:`sparktui.core.stacks.snapshot`) into what the logs told: a "now"
part in each stall finding it was taken for (the odd rank named, and what it does), and a "now" column per
rank in the rank x stage grids. Pure.

A stall finding is one of a stall signature (a unit of a stage track that stopped), or of a hang's category
(a multi-node NCCL hang, a watchdog's timeout, a serving stall): where the logs say nothing moves, the
processes are asked where they are."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from sparktui.core.analysis.diagnosis import Diagnosis
from sparktui.core.analysis.progress import Cell, Grid, Row
from sparktui.core.events import Finding, Severity
from sparktui.core.stacks.snapshot import GroupNow, RankNow, Snapshot
from sparktui.core.taxonomy import HANGS

if TYPE_CHECKING:
    from sparktui.core.catalogue import Signature

#: The grid's column of where each rank is now.
NOW = "now"


def is_stall(finding: Finding, signature: Signature | None) -> bool:
    """Whether ``finding`` says something stopped moving (its signature's kind, or its category)."""
    kind = signature.kind if signature is not None else ""
    return kind in ("stall", "metric") or finding.category in HANGS


def is_critical_stall(finding: Finding, signature: Signature | None) -> bool:
    return finding.severity >= Severity.CRITICAL and is_stall(finding, signature)


def groups_for(snapshot: Snapshot, nodes: Iterable[str]) -> list[GroupNow]:
    """The groups with a rank on one of ``nodes``; every group where none has (the logs' node names and the
    cluster's may differ)."""
    wanted = set(nodes)
    found = [g for g in snapshot.groups if any(r.node in wanted for r in g.ranks)]
    return found or list(snapshot.groups)


def now_text(snapshot: Snapshot, nodes: Iterable[str] = ()) -> str:
    """The "now" part of a finding on ``nodes``: when the stacks were read, and each group's verdict with what
    it names (the odd ranks and what they do, the missing ranks); what could not be read after."""
    when = snapshot.taken.strftime("%H:%M:%S UTC")
    groups = groups_for(snapshot, nodes)
    head = f"Now (every rank's stack, read by py-spy at {when}): "
    if not groups:
        head += "no rank process found on the nodes."
    parts = [head.rstrip()]
    for g in groups:
        parts.append(f"- job {g.job}: {g.verdict.upper()}: " + "; ".join(g.findings))
    parts += [f"- not read: {p}" for p in snapshot.problems]
    return "\n".join(parts)


def fold_finding(finding: Finding, snapshot: Snapshot | None) -> Finding:
    """``finding`` with the capture's "now" part after its detail, when the capture was taken for it."""
    if snapshot is None or finding.signature not in snapshot.findings:
        return finding
    now = now_text(snapshot, finding.nodes)
    return replace(finding, detail=f"{finding.detail}\n\n{now}" if finding.detail else now)


def fold_grid(grid: Grid, snapshot: Snapshot | None) -> Grid:
    """``grid`` with a "now" column: each rank's place read from its stack (a node's row: its ranks'), the
    odd ranks marked behind. Unchanged when no row is a rank of the capture."""
    if snapshot is None or NOW in grid.columns:
        return grid
    ranks = snapshot.ranks
    cells = [_now_cell(_of_row(row, ranks)) for row in grid.rows]
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


def _of_row(row: Row, ranks: Sequence[RankNow]) -> list[RankNow]:
    """The ranks of the capture a grid row stands for: the rank of that number on its node; for a row of
    the node itself, every rank on it."""
    on_node = [r for r in ranks if r.node == row.node]
    if row.who == row.node:
        return on_node
    return [r for r in on_node if r.who == row.who]


def _now_cell(ranks: Sequence[RankNow]) -> Cell:
    if not ranks:
        return Cell()
    short = "; ".join(dict.fromkeys(r.function or r.now for r in ranks))
    label = "; ".join(f"{r.who}: {r.now}" for r in ranks)
    return Cell(NOW, label, short, False, any(r.odd for r in ranks))
