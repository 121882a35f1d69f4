"""A diagnosis or a whole incident as Markdown, ready to paste into a GitHub issue.

Everything taken from a log, a command or the user is kept out of Markdown's way: log lines and commands go
in fenced blocks longer than any run of backticks inside them, names in code spans, free text is
backslash-escaped, so nothing from a log becomes a link, an image, a heading or raw HTML on GitHub.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from sparktui.core.analysis.diagnosis import Diagnosis
from sparktui.core.analysis.progress import REPORT_GRIDS, worth_showing
from sparktui.core.events import Finding
from sparktui.core.inventory import builds
from sparktui.core.inventory.fabric import COLUMNS, FabricRow
from sparktui.core.report.incident import Incident
from sparktui.core.report.summary import (
    INVENTORY_NOTE,
    counts,
    evidence_by_node,
    first_seen,
    inert,
    level,
    numbered,
    plural,
    redaction_note,
    scope_line,
    sources_line,
    tail,
    when,
)
from sparktui.core.stacks.snapshot import Snapshot
from sparktui.core.text import display_text

#: Markdown's special characters, and underscores that could start or end emphasis (not those inside a word).
_MD_SPECIAL = re.compile(r"([\\`*\[\]<>|~&]|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9]))")
_BACKTICKS = re.compile(r"`+")


# -- Markdown -----------------------------------------------------------------------------------------


def diagnosis_markdown(diagnosis: Diagnosis) -> str:
    """A diagnosis alone (``sparktui diagnose --format md``)."""
    out = ["# sparktui diagnosis", "", f"{sources_line(diagnosis)}: {counts(diagnosis)}.", ""]
    out += _warnings_md(diagnosis)
    for rank, f in enumerate(diagnosis.findings, 1):
        out += [f"## {rank}. {f.title}", "", *_finding_md(f, open_evidence=True)]
    if diagnosis.progress:
        out += ["## Start-up stages", "", *_stages_md(diagnosis)]
    return display_text("\n".join(out))


def markdown(incident: Incident) -> str:
    """The whole incident, laid out for a GitHub issue: the root cause first, the root cause's evidence open
    and the other findings' evidence folded."""
    d = incident.diagnosis
    out = [*_summary_md(incident), *_findings_md(d), "## Start-up stages", ""]
    out += _stages_md(d) if d.progress else ["No start-up stage was recognised in these logs.", ""]
    out += [*_stacks_md(incident), *_inventory_md(incident), "## Launch command", ""]
    out += [*_fenced(inert(incident.command), "sh"), ""] if incident.command else ["Not given.", ""]
    out += [*_audit_md(incident), *_sources_md(d), *_environment_md(incident)]
    return display_text("\n".join(out))


def _summary_md(incident: Incident) -> list[str]:
    d = incident.diagnosis
    out = [f"# {_text(incident.title)}", ""]
    if incident.description:
        out += [_text(incident.description), ""]
    if d.findings:
        root = d.findings[0]
        where = f", on {', '.join(_code(n) for n in root.nodes)}" if root.nodes else ""
        out += [f"**Most likely root cause:** {root.title} ({level(root)}{where}).", ""]
    else:
        out += [f"**No findings** in {sources_line(d)}.", ""]
    return [
        *out,
        "| | |",
        "|---|---|",
        f"| findings | {counts(d)} |",
        f"| {'read' if d.sources or incident.inventory is None else 'checked'} | {scope_line(incident)} |",
        f"| created | {when(incident.created)} |",
        f"| redaction | {redaction_note(incident)} |",
        "",
    ]


def _findings_md(d: Diagnosis) -> list[str]:
    if not d.findings:
        return []
    out = ["## Findings", "", "| # | severity | finding | nodes | first seen |", "|---|---|---|---|---|"]
    for rank, f in enumerate(d.findings, 1):
        nodes = ", ".join(_code(n, table=True) for n in f.nodes)
        first = _code(first_seen(f), table=True) if first_seen(f) else ""
        title = f.title.replace("|", "\\|")  # the catalogue's own words: only the cell separator escaped
        out.append(f"| {rank} | {level(f)} | {title} | {nodes} | {first} |")
    out.append("")
    for rank, f in enumerate(d.findings, 1):
        out += [f"### {rank}. {f.title}", "", *_finding_md(f, open_evidence=rank == 1)]
    return out


def _stacks_md(incident: Incident) -> list[str]:
    return [] if incident.stacks is None else stacks_markdown(incident.stacks)


def stacks_markdown(snap: Snapshot) -> list[str]:
    """Where each rank was when its stack was read: a table per group, its verdict and what it names."""
    out = [
        "## Where each rank is",
        "",
        f"Every rank's stack read by py-spy at {when(snap.taken)} on {_text(snap.where)} "
        f"({snap.seconds:.1f} s): **{snap.verdict}**.",
        "",
    ]
    for g in snap.groups:
        out += [f"**job {_code(g.job)}: {g.verdict}**", "", "| rank | where | pid | status | now | GPU |"]
        out.append("|---|---|---|---|---|---|")
        for r in g.ranks:
            who = f"**{r.who}**" if r.odd else r.who
            now = _code(r.now, table=True)
            out.append(
                f"| {who} | {_code(r.where, table=True)} | {r.pid} | {_text(r.status)} | {now} | {_text(r.gpu)} |"
            )
        out += ["", *(f"- {_text(f)}" for f in g.findings), ""]
    if snap.ras:
        out += ["NCCL's RAS said:", "", *(f"- {_text(n)}: {_text(s)}" for n, s in snap.ras), ""]
    if snap.problems:
        out += ["Not read:", "", *(f"- {_text(p)}" for p in snap.problems), ""]
    return out


def _inventory_md(incident: Incident) -> list[str]:
    """Each node's verdict, then the drift table: a fact every node shares on one row, a fact that differs
    with each value and its nodes."""
    out = ["## Inventory", ""]
    inv = incident.inventory
    if inv is None:
        return [*out, f"_{INVENTORY_NOTE}_", ""]
    nodes = ", ".join(f"{_code(n)}: **{v}**" for n, v in inv.verdicts)
    out += [f"Verdict: **{inv.verdict}** ({nodes}).", ""]
    if len(inv.drift.nodes) > 1:
        differing = len(inv.drift.differing)
        out += [f"{plural(differing, 'fact')} of {len(inv.drift.rows)} differ between the nodes.", ""]
    out += ["| fact | value | nodes |", "|---|---|---|"]
    for row in inv.drift.rows:
        for i, (value, nodes_with) in enumerate(row.groups):
            label = (f"**{_text(row.label)}**" if row.differs else _text(row.label)) if i == 0 else ""
            where = ", ".join(_code(n, table=True) for n in nodes_with) if row.differs else "all"
            out.append(f"| {label} | {_code(value, table=True)} | {where} |")
    return [*out, "", *_fabric_md(inv.fabric), *_builds_md(inv.builds)]


def _builds_md(table: tuple[builds.BuildRow, ...]) -> list[str]:
    """What each node loads, read from the files: version, compiler, build id, sha256, path."""
    if not table:
        return []
    columns = builds.COLUMNS
    out = ["### Builds", "", "| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for row in table:
        cells = row.cells if row.component else (row.node, row.note, *[""] * (len(columns) - 2))
        out.append("| " + " | ".join(_code(c, table=True) if c else "" for c in cells) + " |")
    return [*out, ""]


def _fabric_md(table: tuple[FabricRow, ...]) -> list[str]:
    """Every node's RDMA ports (state, link layer, MTUs, the IPv4 RoCE v2 GID NCCL picks)."""
    if not table:
        return []
    out = ["### Fabric", "", "| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for row in table:
        cells = row.cells if row.port else (row.node, row.note, *[""] * (len(COLUMNS) - 2))
        out.append("| " + " | ".join(_code(c, table=True) if c else "" for c in cells) + " |")
    return [*out, ""]


def _audit_md(incident: Incident) -> list[str]:
    out = ["## Actions taken", ""]
    if not incident.audit:
        return [*out, "No command was run from sparktui.", ""]
    for a in incident.audit:
        what = f" ({_text(a.playbook)}: {_text(a.step)})" if a.playbook else ""
        took = f", {a.duration_s:.1f} s" if a.duration_s is not None else ""
        out += [f"**{a.outcome}** on {_code(a.node)} ({a.place}){what}, {when(a.started)}{took}", ""]
        out += _fenced(inert(a.command), "sh")
        lines, cut = tail(a.output)
        if lines:
            out += ["", f"<details><summary>output ({plural(len(lines) + cut, 'line')})</summary>", ""]
            out += [f"_{cut} earlier lines are in the bundle's audit.jsonl._", ""] if cut else []
            out += [*_fenced(lines), "", "</details>"]
        out.append("")
    return out


def _sources_md(d: Diagnosis) -> list[str]:
    out = ["## Sources", "", "| source | node | lines | problem |", "|---|---|---|---|"]
    for s in d.sources:
        problem = "; ".join(_text(p) for p in (s.error, *s.notes) if p)
        node = _code(s.node, table=True) if s.node else ""  # a source group that never found a node
        node += "".join(f" ({_code(h, table=True)} in its logs)" for h in s.hosts)
        out.append(f"| {_code(s.name, table=True)} | {node} | {s.lines:,} | {problem} |")
    return [*out, "", *_warnings_md(d)]


def _warnings_md(d: Diagnosis) -> list[str]:
    """What the analysis could not use (a signature file left out, a pattern disabled), and the stalls a
    live session had not waited long enough to name, one item each."""
    out = [f"- **Not used:** {_text(w)}" for w in d.warnings]
    out += [f"- **Pending:** {_text(p.sentence)}" for p in d.pending]
    return [*out, ""] if out else []


def _environment_md(incident: Incident) -> list[str]:
    env = incident.environment
    out = ["## Environment", "", "| | |", "|---|---|", f"| sparktui | {_text(env.sparktui)} |"]
    out += [f"| Python | {_text(env.python)} |", f"| platform | {_text(env.platform)} |", ""]
    if env.notes:
        out += [*_fenced(inert(env.notes)), ""]
    return [*out, "---", f"<sub>Written by sparktui {_text(env.sparktui)}; {redaction_note(incident)}.</sub>", ""]


def finding_markdown(f: Finding) -> str:
    """One finding on its own, as :func:`markdown` writes it in a report (its title a heading, the evidence
    open): for pasting into an issue."""
    return display_text("\n".join([f"### {f.title}", "", *_finding_md(f, open_evidence=True)]).rstrip()) + "\n"


def _finding_md(f: Finding, *, open_evidence: bool) -> list[str]:
    nodes = ", ".join(_code(n) for n in f.nodes)
    first = f" · seen {f.count}x · first at {_code(first_seen(f))}" if first_seen(f) else ""
    out = [f"**{level(f)}** · {_code(f.signature)} ({f.category}) · {nodes}{first}", ""]
    if f.detail:
        out += [_text(f.detail), ""]
    if f.because:
        out += ["- **why here**: " + "; ".join(_text(b.said()) for b in f.because), ""]
    out += [f.explanation, ""]
    if f.facts:
        out.append("- **facts**: " + ", ".join(_code(f"{k}={v}") for k, v in f.shown_facts.items()))
    if f.remediations:
        out.append("- **remediation**: " + ", ".join(_code(r) for r in f.remediations))
    if f.facts or f.remediations:
        out.append("")
    groups = evidence_by_node(f)
    if not groups:
        return out
    body: list[str] = []
    for node, items in groups:
        body += [f"Evidence from {_code(node)}:", ""]
        for e in items:
            width = len(str(e.line + len(e.after)))
            rows = [f"{'>' if hit else ' '} {n:>{width}}  {text}" for n, text, hit in numbered(e)]
            body += [_code(f"{e.source}:{e.line}"), *_fenced(rows), ""]
    if open_evidence:
        return out + body
    lines = sum(len(items) for _, items in groups)
    summary = f"Evidence: {plural(lines, 'line')} from {plural(len(groups), 'node')}"
    return [*out, f"<details><summary>{summary}</summary>", "", *body, "</details>", ""]


def _stages_md(diagnosis: Diagnosis) -> list[str]:
    """Each track's rank-by-stage grid as a table, the ranks that are behind in bold."""
    out: list[str] = []
    shown, grids_left_out = worth_showing(diagnosis.progress, REPORT_GRIDS)
    for full in shown:
        grid, left_out = full.brief()
        out += [f"**{_text(grid.label)}**" + (f": {_text(grid.verdict)}" if grid.verdict else ""), ""]
        out.append("| node | rank | " + " | ".join(_text(c) for c in grid.columns) + " |")
        out.append("|---|---|" + "---|" * len(grid.columns))
        for row in grid.rows:
            who = f"**{_text(row.who)}**" if row.behind else _text(row.who)
            cells = [f"**{_text(c.short)}**" if c.behind else _text(c.short) for c in row.cells]
            out.append(f"| {_code(row.node, table=True)} | {who} | " + " | ".join(cells) + " |")
        out += ["", _text(left_out), ""] if left_out else [""]
    return [*out, _text(grids_left_out), ""] if grids_left_out else out


def _text(text: str) -> str:
    """Free text made inert: Markdown's special characters escaped, one paragraph."""
    return _MD_SPECIAL.sub(r"\\\1", " ".join(text.split()))


def _code(text: str, *, table: bool = False) -> str:
    """An inline code span that holds ``text`` whatever backticks it contains."""
    text = " ".join(text.split())
    ticks = "`" * (max((len(run) for run in _BACKTICKS.findall(text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    span = f"{ticks}{pad}{text}{pad}{ticks}"
    return span.replace("|", "\\|") if table else span


def _fenced(lines: Iterable[str], language: str = "text") -> list[str]:
    lines = list(lines)
    longest = max((len(run) for line in lines for run in _BACKTICKS.findall(line)), default=0)
    fence = "`" * max(3, longest + 1)
    return [f"{fence}{language}", *lines, fence]
