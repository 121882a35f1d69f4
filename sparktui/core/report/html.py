"""The incident report as one self-contained HTML page: inline CSS, no script, nothing fetched (a Content
Security Policy forbids it), readable offline and printable.

The page is built from :class:`Markup` pieces made by :func:`_tag`; any other string put into the page is
HTML-escaped where it is inserted, so nothing taken from a log, a command or the user reaches the page as
markup.
"""

from __future__ import annotations

import html
from collections.abc import Sequence

from sparktui.core.analysis.diagnosis import Diagnosis
from sparktui.core.analysis.progress import REPORT_GRIDS, Cell, worth_showing
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
from sparktui.core.text import display_text


class Markup(str):
    """HTML built by this module; every other ``str`` is escaped when it is inserted."""


def _tag(tag: str, *children: str | None, **attrs: str | None) -> Markup:
    """``<tag attrs>children</tag>``; ``class_`` gives ``class``; None children and attributes are left out."""
    attributes = "".join(
        f' {k.rstrip("_")}="{html.escape(display_text(v))}"' for k, v in attrs.items() if v is not None
    )
    return Markup(f"<{tag}{attributes}>{_join(*children)}</{tag}>")


def _join(*children: str | None) -> Markup:
    return Markup(
        "".join(c if isinstance(c, Markup) else html.escape(display_text(c)) for c in children if c is not None)
    )


def page(incident: Incident) -> str:
    """The incident as one HTML document."""
    d = incident.diagnosis
    body = _join(
        _header(incident),
        _tag("nav", *(_tag("a", label, href=f"#{anchor}") for anchor, label in _SECTIONS)),
        _hero(d),
        _section("findings", "Findings", _findings(d)),
        _section("stages", "Start-up stages", _stages(d)),
        _section("stacks", "Where each rank is", _stacks(incident)) if incident.stacks is not None else None,
        _section("inventory", "Inventory", _inventory(incident)),
        _section("command", "Launch command", _pre(inert(incident.command)) or _tag("p", "Not given.", class_="note")),
        _section("actions", "Actions taken", _audit(incident)),
        _section("sources", "Sources", _sources(d)),
        _section("environment", "Environment", _environment(incident)),
        _tag("footer", f"Written by sparktui {incident.environment.sparktui}; {redaction_note(incident)}."),
    )
    head = _join(
        Markup('<meta charset="utf-8">'),
        Markup(
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">"
        ),
        Markup('<meta name="viewport" content="width=device-width, initial-scale=1">'),
        _tag("title", f"{incident.title} · sparktui"),
        _tag("style", Markup(_CSS)),
    )
    return f'<!DOCTYPE html>\n<html lang="en">\n{_tag("head", head)}\n{_tag("body", _tag("main", body))}\n</html>\n'


_SECTIONS = (
    ("findings", "Findings"),
    ("stages", "Stages"),
    ("inventory", "Inventory"),
    ("command", "Launch command"),
    ("actions", "Actions"),
    ("sources", "Sources"),
    ("environment", "Environment"),
)


def _section(anchor: str, title: str, content: str) -> Markup:
    return _tag("section", _tag("h2", title), content, id=anchor)


def _header(incident: Incident) -> Markup:
    d = incident.diagnosis
    facts = _join(
        _tag("span", counts(d)),
        _tag("span", scope_line(incident)),
        _tag("span", when(incident.created)),
        _tag("span", redaction_note(incident), class_="redaction" if incident.secrets_redacted else "redaction off"),
    )
    return _tag(
        "header",
        _tag("div", "sparktui incident report", class_="kicker"),
        _tag("h1", incident.title),
        _tag("p", incident.description, class_="description") if incident.description else None,
        _tag("div", facts, class_="facts"),
    )


def _hero(d: Diagnosis) -> Markup:
    if not d.findings:
        return _tag("div", _tag("strong", "No findings"), f" in {sources_line(d)}.", class_="hero quiet")
    root = d.findings[0]
    first = first_seen(root)
    return _tag(
        "div",
        _tag("div", "Most likely root cause", class_="label"),
        _tag("div", _pill(root), " ", _tag("a", root.title, href="#finding-1"), class_="title"),
        _tag(
            "div",
            *(("on ", _nodes(root.nodes)) if root.nodes else ()),
            *((" · " if root.nodes else "", "first at ", _tag("code", first)) if first else ()),
            class_="where",
        ),
        _tag("p", root.detail) if root.detail else None,
        _tag("p", "Why first: " + _why(root), class_="because") if root.because else None,
        class_=f"hero {root.severity.label}",
    )


def _findings(d: Diagnosis) -> Markup:
    if not d.findings:
        return _tag("p", "Nothing in the catalogue matched these logs.", class_="note")
    rows = [
        _tag(
            "tr",
            _tag("td", str(rank), class_="num"),
            _tag("td", _pill(f)),
            _tag("td", _tag("a", f.title, href=f"#finding-{rank}")),
            _tag("td", _nodes(f.nodes)),
            _tag("td", _tag("code", first_seen(f)) if first_seen(f) else ""),
        )
        for rank, f in enumerate(d.findings, 1)
    ]
    head = _tag("tr", *(_tag("th", h) for h in ("#", "severity", "finding", "nodes", "first seen")))
    overview = _tag("table", _tag("thead", head), _tag("tbody", *rows), class_="overview")
    return _join(overview, *(_finding(rank, f) for rank, f in enumerate(d.findings, 1)))


def _finding(rank: int, f: Finding) -> Markup:
    tone = f.severity.label
    first = first_seen(f)
    seen = (f" · seen {f.count}x · first at ", _tag("code", first)) if first else ()
    meta = _join(_tag("code", f.signature), f" · {f.category}", *seen)
    facts = _tag("dl", *(_join(_tag("dt", k), _tag("dd", v)) for k, v in f.shown_facts.items()), class_="facts")
    remedies = _join(*(_tag("code", r, class_="chip") for r in f.remediations))
    evidence = [
        _tag(
            "div",
            _tag(
                "div",
                _tag("span", node, class_="node"),
                _tag("span", plural(len(items), "line"), class_="count"),
            ),
            *(_evidence(e.source, e.line, numbered(e)) for e in items),
            class_="evidence",
        )
        for node, items in evidence_by_node(f)
    ]
    return _tag(
        "article",
        _tag("div", _tag("span", str(rank), class_="rank"), _pill(f), _tag("h3", f.title), class_="head"),
        _tag("div", meta, class_="meta"),
        _tag("div", "nodes ", _nodes(f.nodes), class_="meta") if f.nodes else None,
        _tag("p", f.detail, class_="detail") if f.detail else None,
        _tag("p", "Why here: " + _why(f), class_="because") if f.because else None,
        _tag("p", _explained(f.explanation), class_="explain"),
        facts if f.facts else None,
        _tag("p", "Remediation ", remedies, class_="remedies") if f.remediations else None,
        _tag("h4", "Evidence") if evidence else None,
        *evidence,
        class_=f"card {tone}",
        id=f"finding-{rank}",
    )


def _why(f: Finding) -> str:
    return "; ".join(b.said() for b in f.because)


def _evidence(source: str, line: int, rows: list[tuple[int, str, bool]]) -> Markup:
    lines = _join(
        *(
            _tag(
                "span",
                _tag("span", str(n), class_="n"),
                _tag("span", text, class_="t"),
                class_="row hit" if hit else "row",
            )
            for n, text, hit in rows
        )
    )
    return _join(_tag("div", _tag("code", f"{source}:{line}"), class_="where"), _tag("pre", lines, class_="code"))


def _stages(d: Diagnosis) -> Markup:
    """Each track's rank-by-stage grid; a rank that is behind and its lagging cells stand out."""
    if not d.progress:
        return _tag("p", "No start-up stage was recognised in these logs.", class_="note")
    parts = []
    shown, grids_left_out = worth_showing(d.progress, REPORT_GRIDS)
    for full in shown:
        grid, left_out = full.brief()
        parts.append(_tag("h3", f"{grid.label}: {grid.verdict}" if grid.verdict else grid.label))
        head = _tag("tr", _tag("th", "node"), _tag("th", "rank"), *(_tag("th", c) for c in grid.columns))
        rows = [
            _tag(
                "tr",
                _tag("td", _tag("span", row.node, class_="node")),
                _tag("td", row.who, class_="behind" if row.behind else None),
                *(_tag("td", c.short, class_=_cell_class(c)) for c in row.cells),
            )
            for row in grid.rows
        ]
        parts.append(_tag("table", _tag("thead", head), _tag("tbody", *rows), class_="grid"))
        if left_out:
            parts.append(_tag("p", left_out, class_="note"))
    if grids_left_out:
        parts.append(_tag("p", grids_left_out, class_="note"))
    return _join(*parts)


def _stacks(incident: Incident) -> Markup:
    """Each group's ranks where their stacks were read, the odd ones marked, its verdict and what it names."""
    snap = incident.stacks
    assert snap is not None
    parts = [
        _tag(
            "p",
            f"Every rank's stack read by py-spy at {when(snap.taken)} on {snap.where} ({snap.seconds:.1f} s): ",
            _tag("strong", snap.verdict),
        )
    ]
    for g in snap.groups:
        parts.append(_tag("h3", f"job {g.job}: {g.verdict}"))
        head = _tag("tr", *(_tag("th", h) for h in ("rank", "where", "pid", "status", "now", "GPU")))
        rows = [
            _tag(
                "tr",
                _tag("td", r.who, class_="behind" if r.odd else None),
                _tag("td", _tag("span", r.where, class_="node")),
                _tag("td", str(r.pid), class_="num"),
                _tag("td", r.status),
                _tag("td", _tag("code", r.now), class_="behind" if r.odd else None),
                _tag("td", r.gpu),
            )
            for r in g.ranks
        ]
        parts.append(_tag("table", _tag("thead", head), _tag("tbody", *rows), class_="grid"))
        parts.append(_tag("ul", *(_tag("li", f) for f in g.findings)))
    if snap.ras:
        parts.append(_tag("ul", *(_tag("li", _tag("strong", "NCCL's RAS on ", n, ": "), s) for n, s in snap.ras)))
    if snap.problems:
        parts.append(_tag("ul", *(_tag("li", _tag("strong", "Not read: "), p) for p in snap.problems)))
    return _join(*parts)


def _cell_class(cell: Cell) -> str | None:
    if not cell.stage:
        return None
    return "behind" if cell.behind else "done" if cell.done else "open"


def _audit(incident: Incident) -> Markup:
    if not incident.audit:
        return _tag("p", "No command was run from sparktui.", class_="note")
    entries = []
    for a in incident.audit:
        outcome = "ok" if a.exit_code == 0 else "failed" if a.exit_code is not None else "unfinished"
        took = f" · {a.duration_s:.1f} s" if a.duration_s is not None else ""
        what = f" · {a.playbook}: {a.step}" if a.playbook else ""
        lines, cut = tail(a.output)
        output = None
        if lines:
            note = _tag("p", f"{cut} earlier lines are in the bundle's audit.jsonl.", class_="note") if cut else None
            summary = _tag("summary", f"output ({plural(len(lines) + cut, 'line')})")
            unfolded = {"open": "open"} if outcome != "ok" else {}  # a failure's output is what one reads first
            output = _tag("details", summary, note, _pre(lines), **unfolded)
        entries.append(
            _tag(
                "div",
                _tag(
                    "div",
                    _tag("span", a.outcome, class_=f"outcome {outcome}"),
                    " on ",
                    _tag("span", a.node, class_="node"),
                    f" ({a.place}){what} · {when(a.started)}{took}",
                    class_="meta",
                ),
                _pre(inert(a.command)),
                output,
                class_="action",
            )
        )
    return _join(*entries)


def _sources(d: Diagnosis) -> Markup:
    head = _tag("tr", *(_tag("th", h) for h in ("source", "node", "lines", "problem")))
    rows = [
        _tag(
            "tr",
            _tag("td", _tag("code", s.name)),
            _tag(
                "td",
                _tag("span", s.node, class_="node") if s.node else None,
                *(_join(" (", _tag("span", h, class_="node"), " in its logs)") for h in s.hosts),
            ),
            _tag("td", f"{s.lines:,}", class_="num"),
            _tag("td", "; ".join(p for p in (s.error, *s.notes) if p)),
        )
        for s in d.sources
    ]
    table = _tag("table", _tag("thead", head), _tag("tbody", *rows))
    if not d.warnings:
        return table
    return _join(table, _tag("ul", *(_tag("li", _tag("strong", "Not used: "), w) for w in d.warnings)))


def _environment(incident: Incident) -> Markup:
    env = incident.environment
    rows = [
        _tag("tr", _tag("th", k), _tag("td", v))
        for k, v in (("sparktui", env.sparktui), ("Python", env.python), ("platform", env.platform))
    ]
    return _join(_tag("table", _tag("tbody", *rows), class_="keys"), _pre(inert(env.notes)) if env.notes else None)


def _pill(f: Finding) -> Markup:
    """The finding's grade in words (a check's verdict, else its severity), coloured by its severity."""
    return _tag("span", level(f), class_=f"pill {f.severity.label}")


def _nodes(nodes: Sequence[str]) -> Markup:
    return _join(*(_tag("span", n, class_="node") for n in nodes))


def _explained(text: str) -> Markup:
    """The catalogue's explanation with its `code spans` shown as code."""
    parts = text.split("`")
    if len(parts) % 2 == 0:  # an unmatched backtick: keep the text as written
        return _join(text)
    return _join(*(_tag("code", p) if i % 2 else p for i, p in enumerate(parts)))


def _inventory(incident: Incident) -> Markup:
    """Each node's verdict and the drift table (a differing fact's rows marked)."""
    inv = incident.inventory
    if inv is None:
        return _tag("p", INVENTORY_NOTE, class_="note")
    verdicts = _tag(
        "p",
        "Verdict: ",
        _tag("strong", inv.verdict),
        " (",
        _join(*(_join(", " if i else "", _tag("code", n), f": {v}") for i, (n, v) in enumerate(inv.verdicts))),
        ")",
    )
    rows = []
    for row in inv.drift.rows:
        for i, (value, nodes) in enumerate(row.groups):
            label = _tag("th", row.label, rowspan=str(len(row.groups))) if i == 0 else None
            where = _join(*(_tag("code", n) for n in nodes)) if row.differs else "all"
            rows.append(
                _tag(
                    "tr",
                    label,
                    _tag("td", _tag("code", value)),
                    _tag("td", where),
                    class_="differs" if row.differs else None,
                )
            )
    head = _tag("tr", _tag("th", "fact"), _tag("th", "value"), _tag("th", "nodes"))
    count = f"{plural(len(inv.drift.differing), 'fact')} of {len(inv.drift.rows)} differ between the nodes."
    note = _tag("p", count) if len(inv.drift.nodes) > 1 else None
    drift = _tag("table", _tag("thead", head), _tag("tbody", *rows), class_="drift")
    return _join(verdicts, note, drift, _fabric(inv.fabric), _builds(inv.builds))


def _builds(table: tuple[builds.BuildRow, ...]) -> Markup | None:
    """What each node loads, read from the files; a node whose builds could not be read says why."""
    if not table:
        return None
    head = _tag("tr", *(_tag("th", c) for c in builds.COLUMNS))
    rows = [
        _tag("tr", *(_tag("td", _tag("code", c) if c else "") for c in r.cells))
        if r.component
        else _tag("tr", _tag("td", _tag("code", r.node)), _tag("td", r.note, colspan=str(len(builds.COLUMNS) - 1)))
        for r in table
    ]
    return _join(_tag("h3", "Builds"), _tag("table", _tag("thead", head), _tag("tbody", *rows), class_="builds"))


def _fabric(table: tuple[FabricRow, ...]) -> Markup | None:
    """Every node's RDMA ports; a node without one says why across the row."""
    if not table:
        return None
    head = _tag("tr", *(_tag("th", c) for c in COLUMNS))
    rows = [
        _tag("tr", *(_tag("td", _tag("code", c) if c else "") for c in r.cells))
        if r.port
        else _tag("tr", _tag("td", _tag("code", r.node)), _tag("td", r.note, colspan=str(len(COLUMNS) - 1)))
        for r in table
    ]
    return _join(_tag("h3", "Fabric"), _tag("table", _tag("thead", head), _tag("tbody", *rows), class_="fabric"))


def _pre(lines: list[str]) -> Markup | None:
    return _tag("pre", "\n".join(lines), class_="block") if lines else None


_CSS = """
:root {
  --bg: #f5f6f8; --card: #fff; --text: #1f2328; --muted: #5b6470; --line: #d8dee4; --code: #f6f8fa;
  --hit: #fff5c2; --hit-edge: #d4a72c; --link: #0b5cad;
  --critical: #a4161a; --critical-bg: #fde4e4; --error: #d1242f; --error-bg: #ffebe9;
  --warning: #9a6700; --warning-bg: #fff3c4; --info: #0969da; --info-bg: #ddf4ff; --ok: #1a7f37; --ok-bg: #dafbe1;
  --mono: ui-monospace, SFMono-Regular, Menlo, Consolas, "Liberation Mono", "DejaVu Sans Mono", monospace;
}
table.drift tr.differs td, table.drift tr.differs th { background: var(--warning-bg); }
@media (prefers-color-scheme: dark) {
  :root {
    --bg: #0d1117; --card: #161b22; --text: #e6edf3; --muted: #9198a1; --line: #30363d; --code: #0d1117;
    --hit: #3b2e00; --hit-edge: #bb8009; --link: #4493f8;
    --critical-bg: #4a1215; --error-bg: #3d1214; --warning-bg: #3b2e00; --info-bg: #0c2d4a; --ok-bg: #0f2e1a;
    --critical: #ff7b72; --error: #ff7b72; --warning: #e3b341; --info: #58a6ff; --ok: #3fb950;
  }
}
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--text);
  font: 15px/1.55 system-ui, -apple-system, "Segoe UI", Roboto, "Liberation Sans", "DejaVu Sans", sans-serif; }
main { max-width: 1120px; margin: 0 auto; padding: 28px 28px 56px; }
a { color: var(--link); text-decoration: none; } a:hover { text-decoration: underline; }
code, pre, .node, dl.facts { font-family: var(--mono); font-size: 12.5px; }
code { background: var(--code); border: 1px solid var(--line); border-radius: 4px; padding: 0 4px; }
header .kicker { color: var(--muted); font-size: 12px; text-transform: uppercase; letter-spacing: .08em; }
header h1 { font-size: 26px; line-height: 1.25; margin: 4px 0 8px; }
header .description { color: var(--muted); max-width: 900px; margin: 0 0 12px; }
header .facts { display: flex; flex-wrap: wrap; gap: 6px 18px; color: var(--muted); font-size: 13px; }
header .facts .redaction { color: var(--ok); font-weight: 600; }
header .facts .redaction.off { color: var(--error); }
nav { display: flex; flex-wrap: wrap; gap: 4px 16px; margin: 18px 0 20px; padding: 8px 0;
  border-top: 1px solid var(--line); border-bottom: 1px solid var(--line); font-size: 13px; }
.hero { background: var(--card); border: 1px solid var(--line); border-left: 6px solid var(--sev, var(--ok));
  border-radius: 10px; padding: 16px 22px; margin-bottom: 8px; box-shadow: 0 1px 3px rgba(0,0,0,.06); }
.hero .label { color: var(--muted); font-size: 12px; text-transform: uppercase; letter-spacing: .08em; }
.hero .title { font-size: 20px; font-weight: 650; margin: 6px 0; }
.hero .title a { color: inherit; }
.hero .where { color: var(--muted); font-size: 13px; }
.hero p { margin: 10px 0 0; max-width: 960px; }
.critical { --sev: var(--critical); } .error { --sev: var(--error); }
.warning { --sev: var(--warning); } .info { --sev: var(--info); }
h2 { font-size: 19px; margin: 34px 0 10px; padding-bottom: 4px; border-bottom: 1px solid var(--line); }
h3 { font-size: 17px; margin: 0; line-height: 1.35; }
h4 { font-size: 13px; margin: 16px 0 6px; color: var(--muted); text-transform: uppercase; letter-spacing: .06em; }
.pill { display: inline-block; padding: 1px 9px; border-radius: 999px; font-size: 11.5px; font-weight: 700;
  text-transform: uppercase; letter-spacing: .04em; vertical-align: 2px; white-space: nowrap; }
.pill.critical { background: var(--critical); color: #fff; }
.pill.error { background: var(--error-bg); color: var(--error); border: 1px solid var(--error); }
.pill.warning { background: var(--warning-bg); color: var(--warning); border: 1px solid var(--warning); }
.pill.info { background: var(--info-bg); color: var(--info); border: 1px solid var(--info); }
.node { display: inline-block; background: var(--info-bg); color: var(--text); border-radius: 4px; padding: 0 7px;
  margin-right: 4px; }
table { border-collapse: collapse; width: 100%; background: var(--card); border: 1px solid var(--line);
  border-radius: 8px; font-size: 14px; }
th, td { text-align: left; padding: 7px 12px; border-bottom: 1px solid var(--line); vertical-align: top; }
th { font-size: 12px; color: var(--muted); text-transform: uppercase; letter-spacing: .05em; font-weight: 600; }
tr:last-child td { border-bottom: 0; }
td.num { text-align: right; font-variant-numeric: tabular-nums; width: 1%; white-space: nowrap; }
table.overview { margin-bottom: 8px; }
table.overview td:nth-child(4) { white-space: nowrap; }
table.keys th { width: 160px; text-transform: none; font-size: 14px; letter-spacing: 0; }
.card { background: var(--card); border: 1px solid var(--line); border-left: 6px solid var(--sev);
  border-radius: 10px; padding: 16px 22px; margin: 18px 0; box-shadow: 0 1px 3px rgba(0,0,0,.05); }
.card .head { display: flex; align-items: center; gap: 10px; }
.card .rank { color: var(--muted); font-weight: 700; font-size: 17px; }
.meta { color: var(--muted); font-size: 13px; margin-top: 6px; }
.detail { margin: 12px 0 0; font-weight: 500; }
.because { margin: 8px 0 0; font-size: 13px; color: var(--muted); }
.explain { margin: 10px 0 0; color: var(--text); opacity: .9; max-width: 980px; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 2px 14px; margin: 12px 0 0; }
dl.facts dt { color: var(--muted); } dl.facts dd { margin: 0; overflow-wrap: anywhere; }
.remedies { margin: 12px 0 0; font-size: 13px; color: var(--muted); }
.chip { margin-right: 4px; color: var(--ok); background: var(--ok-bg); border-color: transparent; }
.evidence { margin-top: 10px; }
.evidence .count { color: var(--muted); font-size: 12px; }
.evidence .where { margin: 6px 0 0; font-size: 12px; }
.evidence .where code { border: 0; background: none; padding: 0; color: var(--muted); }
pre.code { background: var(--code); border: 1px solid var(--line); border-radius: 6px; margin: 4px 0 10px;
  padding: 6px 0; overflow-x: auto; }
pre.code .row { display: grid; grid-template-columns: 6ch 1fr; }
pre.code .n { color: var(--muted); text-align: right; padding-right: 1.6ch; user-select: none; opacity: .8; }
pre.code .t { white-space: pre-wrap; overflow-wrap: anywhere; padding-right: 12px; }
pre.code .hit { background: var(--hit); box-shadow: inset 3px 0 0 var(--hit-edge); font-weight: 600; }
pre.block { background: var(--code); border: 1px solid var(--line); border-radius: 6px; padding: 10px 12px;
  margin: 6px 0 12px; white-space: pre-wrap; overflow-wrap: anywhere; }
.note { color: var(--muted); font-style: italic; }
table.grid td.done { color: var(--ok); }
table.grid td.open { color: var(--warning); }
table.grid td.behind { color: var(--error); background: var(--error-bg); font-weight: 600; }
.action { background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: 10px 16px;
  margin: 10px 0; }
.outcome { font-weight: 700; }
.outcome.ok { color: var(--ok); } .outcome.failed { color: var(--error); }
.outcome.unfinished { color: var(--warning); }
details summary { cursor: pointer; color: var(--link); font-size: 13px; }
footer { margin-top: 40px; color: var(--muted); font-size: 12px; }
@media print {
  body { background: #fff; } nav { display: none; }
  .card, .hero, .action { box-shadow: none; break-inside: avoid; }
}
"""
