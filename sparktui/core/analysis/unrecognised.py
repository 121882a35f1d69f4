"""Failures no signature names: the findings of a fallback signature and of its families (see
:class:`~sparktui.core.catalogue.Signature`), what their lines say of them, and how they are told in the words
of the failure itself.

Whether another finding explains one away is the judgement's (rules E1-E3 of
:mod:`~sparktui.core.analysis.explain`); it asks here whether a failure is a cause chained to an exception
below it (the words Python prints between them: the fallback's ``traceback.chain``) and whether it is an exit
status that only reports what came before it (the fallback's ``exit.reports``). What is kept quotes the
failure and, for a Python traceback, names the frame that raised it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import regex

from sparktui.core.events import Finding, Severity

#: How much of the failure's own text a detail quotes.
QUOTED_CHARS = 240


def chained(f: Finding, chain: Sequence[str]) -> bool:
    """Whether every failure line kept as ``f``'s evidence is followed, in the lines kept after it, by the words
    that chain it to another exception below (``chain``, the fallback's ``traceback.chain``: what Python
    prints between the exceptions of a chain): a cause, which that exception speaks for."""
    return bool(f.evidence) and all(any(c in line for c in chain for line in e.after) for e in f.evidence)


def exit_status(f: Finding, reports: Sequence[str]) -> bool:
    """Whether ``f`` is an exit status that only reports what came before it, as the fallback's
    ``exit.reports`` reads them (``positive``: the process's own error; ``-15``: SIGTERM, it was asked to
    stop, as torchrun stops the other ranks once one has failed), with no signal named."""
    code = f.facts.get("exit", "")
    return bool(code) and (code in reports or ("positive" in reports and code.isdigit())) and "signal" not in f.facts


def told(finding: Finding, frame_line: regex.Pattern[str] | None = None) -> Finding:
    """A fallback finding with its first failure quoted and, where a traceback shows it (a line above it
    that ``frame_line`` finds), the frame it came from (also as the facts ``frame`` and ``failure``); for a
    traceback the log stops inside (the fact ``cut``: its deepest frame), that its exception is not there."""
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
    # a traceback a log stops inside (scan.Scan.end): its exception was never printed. Merged with failures
    # that were printed (the finding then an error, not a weak warning), it is theirs that is told.
    cut = facts.pop("cut", "")
    if cut and finding.severity < Severity.ERROR:
        facts["cut"] = cut
        detail = (
            f"A traceback stops before its exception: the log ends inside it on {where}, its deepest frame shown "
            f"being {facts['cut']}; what was raised is not in the log (read on in the process's own output)"
        )
    elif frame_line is not None:
        frame = next((m for text in reversed(first.before) if (m := frame_line.search(text)) is not None), None)
    if frame is not None:
        raised = f"{frame['file']}:{frame['line']} in {frame['func']}"
        facts["frame"] = raised
        detail += f" (raised in {raised})"
    detail += "."
    if finding.count > 1:
        detail += f" {finding.count} such lines in all, on {', '.join(finding.nodes) or 'one source'}."
    if finding.detail:
        detail = f"{detail} {finding.detail}"
    return replace(finding, facts=facts, detail=detail)
