"""What every form of a report shares: the counts line, evidence grouped per node and numbered, command
output cut to its tail, the redaction note, and the report as JSON (the ``diagnose --json`` contract plus
the report's own sections)."""

from __future__ import annotations

from dataclasses import asdict
from datetime import datetime
from typing import Any

from sparktui.core.analysis.diagnosis import Diagnosis
from sparktui.core.events import Evidence, Finding
from sparktui.core.report.incident import Incident
from sparktui.core.text import display

#: The version of the report's own JSON keys, beside the diagnosis' ``version``.
REPORT_VERSION = 1
#: The most lines of one command's output shown in a report; the bundle's audit.jsonl keeps them all.
OUTPUT_LINES = 200
INVENTORY_NOTE = (
    "Not collected: `sparktui check --report DIR` writes each node's verdict and what differs between the "
    "nodes (image, engine, NCCL, Ray and Python versions, interfaces, environment)."
)


def plural(n: int, word: str) -> str:
    """``"1 line"``, ``"2 lines"``."""
    return f"{n:,} {word}{'' if n == 1 else 's'}"


def level(f: Finding) -> str:
    """How a finding is graded in words: a pre-launch check's verdict (block, slow, advice) as ``sparktui check``
    says it, else its severity."""
    return f.verdict or f.severity.label


def counts(diagnosis: Diagnosis) -> str:
    """``"3 findings (1 critical, 2 warning)"`` (a check's: ``"(1 block, 2 slow)"``) or ``"no findings"``."""
    if not diagnosis.findings:
        return "no findings"
    by: dict[str, int] = {}
    for f in sorted(diagnosis.findings, key=lambda f: f.severity, reverse=True):
        by[level(f)] = by.get(level(f), 0) + 1
    parts = ", ".join(f"{n} {label}" for label, n in by.items())
    return f"{plural(len(diagnosis.findings), 'finding')} ({parts})"


def sources_line(diagnosis: Diagnosis) -> str:
    return f"{plural(len(diagnosis.sources), 'source')}, {plural(sum(s.lines for s in diagnosis.sources), 'line')}"


def scope_line(incident: Incident) -> str:
    """What the report covers: the logs read, and the nodes a pre-launch check looked at with its verdict (a
    check alone read no log: only its nodes are said)."""
    parts = []
    d, checked = incident.diagnosis, incident.inventory
    if d.sources or checked is None:
        nodes = {s.node for s in d.sources if s.node}  # a file of notes, or a group never found, has none
        parts.append(f"{sources_line(d)} · {plural(len(nodes), 'node')}")
    if checked is not None:
        parts.append(f"{plural(len(checked.verdicts), 'node')} checked, verdict {checked.verdict}")
    return " · ".join(parts)


def first_seen(f: Finding) -> str:
    """Where a finding was first seen, ``source:line``; "" for a check's, which no log line shows."""
    return "" if f.verdict else f"{f.first_seen.source}:{f.first_seen.line}"


def also_named(diagnosis: Diagnosis) -> list[str]:
    """One phrase per node that its logs call by another name (``"node5 is spark-a in its logs"``): an SSH
    alias and the host name NCCL prints are the same machine, and shown as one node."""
    names: dict[str, dict[str, None]] = {}
    for s in diagnosis.sources:
        for host in s.hosts:
            names.setdefault(s.node, {})[host] = None
    return [f"{node} is {' and '.join(hosts)} in its logs" for node, hosts in names.items()]


def evidence_by_node(finding: Finding) -> list[tuple[str, list[Evidence]]]:
    """The finding's evidence grouped per node: its nodes in order, then any other node evidence names."""
    order = list(finding.nodes) + [e.node for e in finding.evidence if e.node not in finding.nodes]
    groups = [(node, [e for e in finding.evidence if e.node == node]) for node in dict.fromkeys(order)]
    return [(node, items) for node, items in groups if items]


def numbered(e: Evidence) -> list[tuple[int, str, bool]]:
    """(line number, text, is the evidence line itself) for the evidence line and its context."""
    first = e.line - len(e.before)
    rows = [(first + i, text, False) for i, text in enumerate(e.before)]
    rows.append((e.line, e.text, True))
    rows += [(e.line + 1 + i, text, False) for i, text in enumerate(e.after)]
    return rows


def inert(text: str) -> list[str]:
    """Text from a command or the user as lines safe to show (escape sequences gone, controls visible)."""
    return [display(line) for line in text.rstrip("\n").split("\n")] if text.strip() else []


def tail(output: str, limit: int = OUTPUT_LINES) -> tuple[list[str], int]:
    """The last ``limit`` lines of a command's output, made inert, and how many earlier lines were left out."""
    lines = inert(output)
    return lines[-limit:], max(0, len(lines) - limit)


def when(moment: datetime) -> str:
    """A time as a reader wants it: to the second, with its zone."""
    return moment.strftime("%Y-%m-%d %H:%M:%S %Z").strip()


def redaction_note(incident: Incident) -> str:
    if incident.secrets_redacted and incident.hosts_replaced:
        return "secrets redacted; hosts and addresses anonymised"
    if incident.secrets_redacted:
        return "secrets redacted"
    if incident.hosts_replaced:
        return "hosts and addresses anonymised; secrets NOT redacted"
    return "not redacted"


def as_dict(incident: Incident) -> dict[str, Any]:
    """The ``sparktui diagnose --json`` contract plus the report's own sections."""
    env = incident.environment
    return {
        **incident.diagnosis.as_dict(),
        "report": REPORT_VERSION,
        "title": incident.title,
        "description": incident.description,
        "created": incident.created.isoformat(),
        "duration_ms": incident.duration_ms,
        "redaction": {"secrets": incident.secrets_redacted, "hosts": incident.hosts_replaced},
        "command": incident.command,
        "audit": [a.as_dict() for a in incident.audit],
        "inventory": None
        if incident.inventory is None
        else {
            "verdict": incident.inventory.verdict,
            "nodes": dict(incident.inventory.verdicts),
            "drift": incident.inventory.drift.as_dict(),
            "fabric": [asdict(row) for row in incident.inventory.fabric],
            "builds": [asdict(row) for row in incident.inventory.builds],
        },
        "stacks": None if incident.stacks is None else incident.stacks.as_dict(),
        "environment": {
            "sparktui": env.sparktui,
            "python": env.python,
            "platform": env.platform,
            "notes": env.notes,
        },
    }
