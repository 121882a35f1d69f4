"""Human-readable forms of a diagnosis: coloured text on a terminal (plain when piped) and Markdown (made by
:mod:`sparktui.core.report`, with the incident reports).

Everything taken from a log has already been made inert by :func:`sparktui.core.text.display`; here it
is also kept out of Rich's markup parser by building :class:`rich.text.Text` objects, never markup
strings.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Console, Group, RenderableType
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from sparktui.core.analysis.diagnosis import Diagnosis
from sparktui.core.analysis.progress import REPORT_GRIDS, Cell, Grid, worth_showing
from sparktui.core.events import Evidence, Finding, Severity
from sparktui.core.floods import Flood
from sparktui.core.report.summary import also_named, counts, sources_line
from sparktui.core.text import display, display_text
from sparktui.core.words import listed

if TYPE_CHECKING:
    from sparktui.core.launch.sglang_to_vllm import Translation
    from sparktui.core.stacks.snapshot import Snapshot

SEVERITY_STYLE = {
    Severity.CRITICAL: "bold white on red",
    Severity.ERROR: "bold red",
    Severity.WARNING: "bold yellow",
    Severity.INFO: "cyan",
}
#: A capture of the stacks' verdicts.
STACKS_STYLE = {"hang": "bold red", "partial": "yellow", "no-hang": "green"}
#: The pre-launch check's verdicts (``sparktui check``).
VERDICT_STYLE = {"block": "bold red", "slow": "yellow", "ready": "green", "advice": "cyan"}


def print_text(diagnosis: Diagnosis, console: Console) -> None:
    head = Text(f"{sources_line(diagnosis)}, ", style="dim")
    head.append(counts(diagnosis), style="bold" if diagnosis.findings else "green")
    console.print(head)
    flood = Flood()  # thousands of sources saying one thing: a few, then a line per kind (--json has every one)
    for s in diagnosis.sources:
        if s.error and flood.admit(s.name, s.error):
            console.print(Text(f"  ! {s.error}", style="yellow"))
        for note in s.notes:
            if flood.admit(s.name, note):
                console.print(Text(f"  ! {s.name}: {display(note)}", style="yellow"), soft_wrap=True)
    for line in flood.folded():
        console.print(Text(f"  ! {display(line)} (--json lists each)", style="yellow"), soft_wrap=True)
    for phrase in also_named(diagnosis):
        console.print(Text(f"  = {display(phrase)}", style="dim"), soft_wrap=True)
    errors = {s.error for s in diagnosis.sources}
    for warning in diagnosis.warnings:
        if warning not in errors:  # a source's error is said under the sources, above
            console.print(Text(f"  ! {display(warning)}", style="yellow"), soft_wrap=True)  # one line, for grep
    for pending in diagnosis.pending:
        console.print(Text(f"  … {display(pending.sentence)}", style="yellow"), soft_wrap=True)
    for rank, finding in enumerate(diagnosis.findings, 1):
        console.print()
        console.print(_finding(rank, finding))
    shown, left_out = worth_showing(diagnosis.progress, REPORT_GRIDS)
    for grid in shown:
        console.print()
        console.print(_grid(grid))
    if left_out:
        console.print(Text(left_out, style="dim"))


def print_stacks(snap: Snapshot, console: Console) -> None:
    """A kept capture of every rank's stack (a bundle's): when and where it was read, each group's verdict
    with what it names, and what could not be read."""
    head = Text(f"Where each rank was: every rank's stack read by py-spy at {snap.taken:%Y-%m-%d %H:%M:%S} UTC ")
    head.append(f"on {display(snap.where)}: ")
    head.append(snap.verdict.upper(), style=STACKS_STYLE.get(snap.verdict, "bold"))
    console.print()
    console.print(head, soft_wrap=True)
    if not snap.groups:
        console.print(Text(f"   {display(snap.headline())}", style="dim"), soft_wrap=True)
    for g in snap.groups:
        console.print(Text(f"   job {display(g.job)}: {g.verdict.upper()}", style="bold"), soft_wrap=True)
        for r in g.ranks:
            line = Text(f"     {r.who} on {display(r.where)}: {display(r.now)}", style="bold yellow" if r.odd else "")
            console.print(line, soft_wrap=True)
        for said in g.findings:
            console.print(Text(f"     {display(said)}"), soft_wrap=True)
    for problem in snap.problems:
        console.print(Text(f"   not read: {display(problem)}", style="yellow"), soft_wrap=True)


def _grid(grid: Grid) -> Group:
    """A track's rank-by-stage grid: ranks with the same cells on one node folded into one row."""
    grid, left_out = grid.brief()
    title = Text(f"{grid.label} start-up", style="bold underline")
    if grid.verdict:
        title.append(f"  {grid.verdict}", style="bold yellow" if "behind" in grid.verdict else "")
    table = Table(box=None, padding=(0, 1), show_edge=False, header_style="dim")
    for name in ("node", "rank", *grid.columns):
        table.add_column(display(name), overflow="fold")
    for row in grid.rows:
        who = Text(display(row.who), style="bold red" if row.behind else "")
        cells = [Text(display(c.short), style=_cell_style(c)) for c in row.cells]
        table.add_row(Text(display(row.node)), who, *cells)
    shown: list[RenderableType] = [title, Padding(table, (0, 0, 0, 2), expand=False)]
    if left_out:
        shown.append(Padding(Text(left_out, style="dim"), (0, 0, 0, 2), expand=False))
    return Group(*shown)


def _cell_style(cell: Cell) -> str:
    if cell.behind:
        return "bold red"
    return "green" if cell.done else "yellow"


def translation_text(found: Translation) -> Text:
    """What did not carry over from an SGLang launch: each dropped flag and why, each approximation."""
    lines = []
    for dropped in found.dropped:
        shown = dropped.flag if dropped.value is None else f"{dropped.flag} {dropped.value}"
        lines.append(Text.assemble(("dropped ", "yellow"), display(shown), (f"  {dropped.reason}", "dim")))
    lines += [Text.assemble(("note ", "cyan"), display(note)) for note in found.notes]
    return Text("\n").join(lines)


def finding_head(f: Finding) -> Text:
    """A finding's severity as a badge, then its title: how the CLI and the finding screen head it."""
    head = Text()
    head.append(f" {f.severity.label.upper()} ", style=SEVERITY_STYLE[f.severity])
    head.append(f" {f.title}", style="bold")
    return head


def _finding(rank: int, f: Finding) -> Group:
    title = Text(f"{rank}. ").append_text(finding_head(f))
    meta = Text(
        f"   {f.signature} · {f.category} · {listed(f.nodes)} · seen {f.count}x · first at "
        f"{f.first_seen.source}:{f.first_seen.line}",
        style="dim",
    )
    parts: list[Text | Padding] = [title, meta]
    if f.because:
        why = Text("   why: ", style="dim")
        why.append("; ".join(b.said() for b in f.because))
        parts.append(why)
    if f.detail:
        parts.append(Padding(Text(display_text(f.detail)), (0, 0, 0, 3), expand=False))
    if f.facts:
        facts = Text("   facts: ", style="dim")
        facts.append(", ".join(f"{k}={v}" for k, v in f.shown_facts.items()))
        parts.append(facts)
    for e in f.evidence[:6]:
        parts.append(Padding(evidence(e), (0, 0, 0, 3), expand=False))
    parts.append(Padding(Text(f.explanation, style="italic"), (0, 0, 0, 3), expand=False))
    if f.remediations:
        parts.append(Text(f"   remediation: {', '.join(f.remediations)}", style="green"))
    return Group(*parts)


def evidence_lines(e: Evidence) -> list[tuple[str, str]]:
    """An evidence block's lines, each with its style: where the line is (source, line, node), the lines
    before it, the line itself, the lines after it. The one layout of the CLI, the screens and the copies."""
    return [
        (f"{e.source}:{e.line}  [{e.node}]", "blue"),
        *((f"    {line}", "dim") for line in e.before),
        (f"  > {e.text}", "bold"),
        *((f"    {line}", "dim") for line in e.after),
    ]


def evidence(e: Evidence) -> Group:
    """An evidence block, its lines cut at the terminal's edge rather than wrapped, so the context stays
    readable."""
    return Group(*(Text(line, style=style, no_wrap=True, overflow="ellipsis") for line, style in evidence_lines(e)))
