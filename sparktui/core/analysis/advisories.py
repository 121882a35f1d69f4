"""Known-bad releases (``diagnostics/advisories/``) attached to runtime findings: a finding whose symptom an
advisory describes (its ``signatures``), on nodes whose logs printed a version in the advisory's affected
ranges (NCCL's ``NCCL version 2.30.4+cuda13.0``, vLLM's start-up banner, as the stage tracks read them, or a
version the finding's own line gave), says so, with the advisory's fix and source. Pure."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from sparktui.core.catalogue import COMPONENTS, Advisory
from sparktui.core.events import Finding

#: The pre-launch fact of a machine's architecture, which an advisory's condition may need and logs never give.
_ARCH = "node.arch"


class VersionsSeen:
    """The versions the logs printed, by the fact that holds them (``nccl_version``...) and node, taken from
    every stage marker as it arrives (the stage tracker keeps a process's first marker only)."""

    def __init__(self) -> None:
        self.wanted = frozenset(log for _, log in COMPONENTS.values() if log)
        self.seen: dict[str, dict[str, list[str]]] = {}

    def add(self, node: str, facts: Mapping[str, str]) -> None:
        for name in self.wanted & facts.keys():
            listed = self.seen.setdefault(name, {}).setdefault(node, [])
            if facts[name] and facts[name] not in listed:
                listed.append(facts[name])


def attach(
    findings: Sequence[Finding], seen: Mapping[str, Mapping[str, Sequence[str]]], advisories: Sequence[Advisory]
) -> list[Finding]:
    """``findings``, each that an advisory's symptom names and whose nodes printed an affected version with
    the advisory in its detail and its id in its facts (``advisories``)."""
    by_signature: dict[str, list[Advisory]] = {}
    for advisory in advisories:
        for signature in advisory.signatures:
            by_signature.setdefault(signature, []).append(advisory)
    out = []
    for finding in findings:
        notes, ids = [], []
        for advisory in by_signature.get(finding.signature, ()):
            note = _note(advisory, finding, seen)
            if note:
                notes.append(note)
                ids.append(advisory.id)
        if notes:
            facts = {**finding.facts, "advisories": ", ".join(ids)}
            finding = replace(finding, detail=" ".join([finding.detail, *notes]).strip(), facts=facts)
        out.append(finding)
    return out


def _note(advisory: Advisory, finding: Finding, seen: Mapping[str, Mapping[str, Sequence[str]]]) -> str:
    if not advisory.log_fact:
        return ""
    by_node = seen.get(advisory.log_fact, {})
    nodes = [n for n in finding.nodes if n in by_node] or ([] if finding.nodes else list(by_node))
    versions = [v for n in nodes for v in by_node[n]]
    own = finding.facts.get(advisory.log_fact, "")
    if own:
        versions.append(own)
    affected = list(dict.fromkeys(v for v in versions if advisory.covers(v)))
    if not affected:
        return ""
    where = f" on {', '.join(nodes)}" if nodes else ""
    applies = f" {advisory.applies}" if advisory.applies else ""
    if _ARCH in advisory.condition:  # the logs name no architecture: the advisory is offered, not asserted
        applies += " (architecture unknown: the logs do not say these nodes' architecture, so it holds only there)"
    return (
        f"A known issue may explain it (advisory {advisory.id}): {advisory.label} {', '.join(affected)}, printed in"
        f" the logs{where}, is a known-bad release{applies}: {advisory.symptom} Fix: {advisory.fix}"
        f" ({advisory.source}, {advisory.date})"
    )
