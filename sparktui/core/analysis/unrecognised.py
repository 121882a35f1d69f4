"""Failures no signature names: the findings of a fallback signature and of its families (see
:class:`~sparktui.core.catalogue.Signature`), kept where nothing better explains them and told in the words of
the failure itself.

A failure line that no signature names becomes a finding of the fallback signature, filed by its words under
a family (a port in use, out of memory, ...). Where another signature already names an error of the same
category on one of its nodes, that finding says it better and the fallback's is left out; one that no family
could sort is left out where any other error is named on one of its nodes. An error that only says a rank
waited for a peer or lost it (``waits_for_peers``) explains neither, except for a process's exit status: a
positive one only reports the error the process printed before it, and -15 a stop asked for (torchrun stops
the other ranks once one failed), so any error found on its nodes before it, named or not, a wait for peers
included, explains it. An exception that Python chained to another below it (``The above exception was the
direct cause ...``, ``During handling ...``) is explained by a named error found after it on its nodes: the
chain ends in that one. What is kept quotes the failure and, for a Python traceback, names the frame that
raised it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

import regex

from sparktui.core.catalogue import Signature
from sparktui.core.events import Finding, Severity

#: How much of the failure's own text a detail quotes.
QUOTED_CHARS = 240


def judge(findings: Sequence[Finding], signatures: Mapping[str, Signature]) -> list[Finding]:
    """``findings`` without the fallback findings that another finding explains, and with the others told."""

    def fallback(f: Finding) -> Signature | None:
        sig = signatures.get(f.signature)
        return sig if sig is not None and (sig.fallback or sig.family_of) else None

    # (a rank that only waited for a peer, or lost it, explains nothing of what the peer did)
    named = [f for f in findings if fallback(f) is None and f.severity >= Severity.ERROR and not f.waits_for_peers]
    # (category, node) of every error a signature names, and "" for any category on a node
    explained = {(c, n) for f in named for c in (f.category, "") for n in _places(f)}
    # (the fallback's reading of exit statuses: those that only report what came before them)
    reports = next((s.exit_reports for s in signatures.values() if s.fallback), ())
    # (what a process printed before it exited, named or not, is what its exit status reports)
    errors = [f for f in findings if f.severity >= Severity.ERROR and not _exit_status(f, reports)]
    kept = []
    for f in findings:
        sig = fallback(f)
        if sig is None:
            kept.append(f)
            continue
        said = any(("" if sig.fallback else f.category, n) in explained for n in _places(f))
        # (a cause in a chain of exceptions whose last one a signature names; an exit status after its error)
        chain = _chained(f, sig.chain) and any(e.seen_after(f) and _meet(e, f) for e in named)
        reported = _exit_status(f, reports) and any(f.seen_after(e) and _meet(e, f) for e in errors)
        if not (said or chain or reported):
            kept.append(told(f, regex.compile(sig.frame) if sig.frame else None))
    return kept


def _meet(a: Finding, b: Finding) -> bool:
    """Whether ``a`` and ``b`` were seen in one place (a node, or a log that names none)."""
    return bool(set(_places(a)) & set(_places(b)))


def _places(f: Finding) -> tuple[str, ...]:
    """Where ``f`` was seen: its nodes, else (a log whose first lines read as notes names no node) the source
    it was first seen in, which no node name can be mistaken for."""
    return tuple(f.nodes) if f.nodes else (f"\x00{f.first_seen.source}",)


def _chained(f: Finding, chain: Sequence[str]) -> bool:
    """Whether every failure line kept as ``f``'s evidence is followed, in the lines kept after it, by the words
    that chain it to another exception below (``chain``, the fallback's ``traceback.chain``: what Python
    prints between the exceptions of a chain): a cause, which that exception speaks for."""
    return bool(f.evidence) and all(any(c in line for c in chain for line in e.after) for e in f.evidence)


def _exit_status(f: Finding, reports: Sequence[str]) -> bool:
    """Whether ``f`` is an exit status that only reports what came before it, as the fallback's
    ``exit.reports`` reads them (``positive``: the process's own error; ``-15``: SIGTERM, it was asked to
    stop, as torchrun stops the other ranks once one has failed), with no signal named."""
    code = f.facts.get("exit", "")
    return bool(code) and (code in reports or ("positive" in reports and code.isdigit())) and "signal" not in f.facts


def told(finding: Finding, frame_line: regex.Pattern[str] | None = None) -> Finding:
    """A fallback finding with its first failure quoted and, where a traceback shows it (a line above it
    that ``frame_line`` finds), the frame it came from (also as the facts ``frame`` and ``failure``)."""
    if not finding.evidence:
        return finding
    first = finding.evidence[0]
    failure = first.text.strip()
    if len(failure) > QUOTED_CHARS:
        failure = failure[: QUOTED_CHARS - 1] + "…"
    facts = {**finding.facts, "failure": failure}
    where = f"{first.node or first.source} at {first.source}:{first.line}"
    detail = f"No signature names this failure; first seen on {where}: {failure}"
    frame = None
    if frame_line is not None:
        frame = next((m for text in reversed(first.before) if (m := frame_line.search(text)) is not None), None)
    if frame is not None:
        raised = f"{frame['file']}:{frame['line']} in {frame['func']}"
        facts["frame"] = raised
        detail += f" (raised in {raised})"
    detail += "."
    if finding.filed:
        detail += f" {finding.filed[:1].upper()}{finding.filed[1:]}."
    if finding.count > 1:
        detail += f" {finding.count} such lines in all, on {', '.join(finding.nodes) or 'one source'}."
    if finding.detail:
        detail = f"{detail} {finding.detail}"
    return replace(finding, facts=facts, detail=detail)
