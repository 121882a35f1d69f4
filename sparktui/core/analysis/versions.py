"""The versions the logs printed, per node, and the findings of ``differ`` signatures: nodes that printed
different versions of a program that every node of one job must run the same of (NCCL, vLLM). Pure.

A program's version comes from its stage markers (NCCL's ``NCCL version 2.28.9+cuda13.0``, vLLM's start-up
banner), as the stage tracks read them into a fact named in :data:`~sparktui.core.catalogue.COMPONENTS`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from sparktui.core.analysis.findings import Part
from sparktui.core.catalogue import COMPONENTS, Signature
from sparktui.core.events import Evidence, Position
from sparktui.core.text import display
from sparktui.core.words import join


@dataclass(frozen=True, slots=True)
class _Printed:
    """Where a node first printed one version."""

    position: Position
    text: str


class VersionsSeen:
    """The versions the logs printed, by the fact that holds them (``nccl_version``...) and node, taken from
    every stage marker as it arrives (the stage tracker keeps a process's first marker only), each with the
    line where its node printed it first."""

    def __init__(self) -> None:
        self.wanted = frozenset(log for _, log in COMPONENTS.values() if log)
        self.seen: dict[str, dict[str, list[str]]] = {}
        self._where: dict[tuple[str, str, str], _Printed] = {}

    def add(self, node: str, facts: Mapping[str, str], position: Position, text: str) -> None:
        for name in self.wanted & facts.keys():
            listed = self.seen.setdefault(name, {}).setdefault(node, [])
            version = facts[name]
            if version and version not in listed:
                listed.append(version)
                self._where[(name, node, version)] = _Printed(position, text)

    def differing(self, sig: Signature) -> Part | None:
        """The part of ``sig``'s finding (a ``differ`` signature) when no version of its fact was printed by
        every node that printed one: each node with the versions it printed and the line where it printed the
        first. A node that printed two versions (a restart after an upgrade) agrees with the nodes on either."""
        assert sig.differ is not None
        fact = sig.differ.fact
        by_node = self.seen.get(fact, {})
        nodes = list(by_node)
        if len(nodes) < 2 or set.intersection(*(set(versions) for versions in by_node.values())):
            return None
        # Nodes grouped by what they printed, the smallest group first (the odd ones out), then as first seen.
        groups: dict[tuple[str, ...], list[str]] = {}
        for node in nodes:
            groups.setdefault(tuple(by_node[node]), []).append(node)
        ordered = sorted(groups.items(), key=lambda g: len(g[1]))
        odd = ordered[0][1]
        evidence = []
        for _, members in ordered:
            for node in members:
                printed = self._where[(fact, node, by_node[node][0])]
                evidence.append(Evidence(printed.position.source, printed.position.line, node, display(printed.text)))
        name = COMPONENTS[sig.differ.component][0]
        told = [f"{join(members)} printed {', '.join(versions)}" for versions, members in ordered[1:]]
        detail = f"{join(odd)} printed {name} {', '.join(ordered[0][0])}; {'; '.join(told)}."
        others = ", ".join(ordered[0][0])
        usual = ", ".join(ordered[-1][0])
        first = Position(evidence[0].source, evidence[0].line)
        return Part(first, len(nodes), odd, {fact: usual, "other_versions": others}, evidence, detail=detail)
