"""The findings of ``differ`` signatures: nodes of one job that printed different values of a fact every node
must share (the NCCL or vLLM release, the world size a rendezvous was joined with). Pure.

The values come from the stage markers, as the stage tracks read them into facts (NCCL's ``NCCL version
2.28.9+cuda13.0``, vLLM's ``world_size=4 rank=2 ... distributed_init_method=tcp://...``). A signature that says
``within`` compares only the values printed with the same value of that fact (the same rendezvous address):
different jobs read together are not one job that disagrees."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from sparktui.core.analysis.findings import Part
from sparktui.core.analysis.scan import StageEvent
from sparktui.core.catalogue import Signature
from sparktui.core.events import Evidence, Position
from sparktui.core.text import display
from sparktui.core.words import join


@dataclass(frozen=True, slots=True)
class _Printed:
    """Where a node first printed one value."""

    position: Position
    text: str


class Differences:
    """The values of every ``differ`` signature's fact, by the value of its ``within`` fact and by node, each
    with the line where its node printed it first; fed every stage marker as it arrives."""

    def __init__(self, signatures: Iterable[Signature]) -> None:
        self.signatures = tuple(s for s in signatures if s.differ is not None)
        self._seen: dict[str, dict[str, dict[str, list[str]]]] = {s.id: {} for s in self.signatures}
        self._where: dict[tuple[str, str, str, str], _Printed] = {}

    def add(self, event: StageEvent) -> None:
        for sig in self.signatures:
            rule = sig.differ
            assert rule is not None
            value = event.facts.get(rule.fact)
            if not value or (rule.within and not event.facts.get(rule.within)):
                continue
            scope = event.facts.get(rule.within, "") if rule.within else ""
            listed = self._seen[sig.id].setdefault(scope, {}).setdefault(event.node, [])
            if value not in listed:
                listed.append(value)
                self._where[(sig.id, scope, event.node, value)] = _Printed(event.position, event.text)

    def parts(self, sig: Signature) -> list[Part]:
        """The parts of ``sig``'s finding: one per scope where no value was printed by every node that printed
        one. A node that printed two values (a restart after an upgrade) agrees with the nodes on either."""
        return [
            part
            for scope, by_node in self._seen.get(sig.id, {}).items()
            if (part := self._part(sig, scope, by_node)) is not None
        ]

    def _part(self, sig: Signature, scope: str, by_node: dict[str, list[str]]) -> Part | None:
        assert sig.differ is not None
        nodes = list(by_node)
        if len(nodes) < 2 or set.intersection(*(set(values) for values in by_node.values())):
            return None
        # Nodes grouped by what they printed, the smallest group first (the odd ones out), then as first seen:
        # the evidence kept (the finding keeps the first few) shows the odd ones.
        groups: dict[tuple[str, ...], list[str]] = {}
        for node in nodes:
            groups.setdefault(tuple(by_node[node]), []).append(node)
        ordered = sorted(groups.items(), key=lambda g: len(g[1]))
        evidence = []
        for _, members in ordered:
            for node in members:
                printed = self._where[(sig.id, scope, node, by_node[node][0])]
                evidence.append(Evidence(printed.position.source, printed.position.line, node, display(printed.text)))
        odd_values, odd = ordered[0]
        told = [f"{join(members)} printed {', '.join(values)}" for values, members in ordered[1:]]
        where = f" for {scope}" if scope else ""
        detail = f"{join(odd)} printed {sig.differ.label} {', '.join(odd_values)}{where}; {'; '.join(told)}."
        facts = {sig.differ.fact: ", ".join(ordered[-1][0]), "other_values": ", ".join(odd_values)}
        first = Position(evidence[0].source, evidence[0].line)
        return Part(first, len(nodes), odd, facts, evidence, detail=display(detail))
