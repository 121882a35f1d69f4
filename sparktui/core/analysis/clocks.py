"""Whether the nodes' clocks can be compared: the times a node's lines say, set beside the other nodes'.

The ranking (rule O5 of :mod:`~sparktui.core.analysis.explain`) and what a wait is a consequence of (O2) read
the logs' clocks across nodes. A node whose clock is hours off would reorder the causes silently, so where the
times of one group of nodes lie wholly apart from the others', by :data:`APART_S` or more, the largest group
(the first seen, at a tie) is taken as the reference and the times of the others are compared only among the
findings of their own group; each finding of theirs, and the diagnosis's warnings, say so and by how much."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from sparktui.core.events import Finding

#: How far apart two groups of nodes' times must lie, with none of one inside the other's span, to be taken
#: as clocks that disagree rather than a job whose nodes started at different times.
APART_S = 1800.0


@dataclass(frozen=True, slots=True)
class Clocks:
    """The nodes whose clocks disagree with the reference group's, each with how far (seconds; positive:
    ahead), and the group each belongs to."""

    off_by: Mapping[str, float] = field(default_factory=dict)
    group: Mapping[str, int] = field(default_factory=dict)

    def _group_of(self, f: Finding) -> int | None:
        """The clock group of every node of ``f`` (0 for the reference), or None where they differ."""
        groups = {self.group.get(n, 0) for n in f.nodes} or {0}
        return groups.pop() if len(groups) == 1 else None

    def time(self, f: Finding) -> float | None:
        """``f``'s time where it can be set beside the reference group's: None for a finding of a node whose
        clock is off."""
        return f.time if self._group_of(f) == 0 else None

    def after(self, a: Finding, b: Finding) -> bool:
        """Whether ``a`` was first seen after ``b``: by the logs' clocks where both say a time, the times
        differ and their nodes' clocks agree, else further down the same source (unknown: no)."""
        same = self._group_of(a) is not None and self._group_of(a) == self._group_of(b)
        if same and a.time is not None and b.time is not None and a.time != b.time:
            return a.time > b.time
        return a.first_seen.source == b.first_seen.source and a.first_seen.line > b.first_seen.line

    def off(self, f: Finding) -> str:
        """What a finding of a node whose clock is off says of it (empty for one of the reference group)."""
        off = [(n, self.off_by[n]) for n in f.nodes if n in self.off_by]
        if not off:
            return ""
        node, by = off[0]
        way = "ahead of" if by > 0 else "behind"
        return f"not compared by the clock: {node}'s clock is {_hours(by)} {way} the others'"

    def warnings(self) -> tuple[str, ...]:
        """One line per group of nodes whose clock is off."""
        groups: dict[int, list[str]] = {}
        for node, g in self.group.items():
            if g:
                groups.setdefault(g, []).append(node)
        lines = []
        for nodes in groups.values():
            by = self.off_by[nodes[0]]
            whose = f"{nodes[0]}'s" if len(nodes) == 1 else f"{', '.join(nodes)}'s"
            lines.append(
                f"the nodes' clocks disagree: {whose} lines are {_hours(by)} {'ahead of' if by > 0 else 'behind'}"
                " the other nodes' and overlap none of them (a clock that is off, or a log of another run); their"
                " times are not compared across the two, and the ranking keeps what waited below what it waited for"
            )
        return tuple(lines)


def _hours(seconds: float) -> str:
    seconds = abs(seconds)
    return f"{seconds / 3600:.1f} h" if seconds >= 3600 else f"{seconds / 60:.0f} min"


def clocks(spans: Iterable[tuple[str, float]]) -> Clocks:
    """The clock groups of the nodes, from the times their lines said: ``spans`` is (node, time) pairs."""
    lo: dict[str, float] = {}
    hi: dict[str, float] = {}
    for node, t in spans:
        if node:
            lo[node] = min(lo.get(node, t), t)
            hi[node] = max(hi.get(node, t), t)
    if len(lo) < 2:
        return Clocks()
    runs: list[tuple[float, float, list[str]]] = []  # (start, end, nodes) of each group, by start
    for node in sorted(lo, key=lambda n: lo[n]):
        if runs and lo[node] - runs[-1][1] < APART_S:
            start, end, nodes = runs[-1]
            runs[-1] = (start, max(end, hi[node]), [*nodes, node])
        else:
            runs.append((lo[node], hi[node], [node]))
    if len(runs) < 2:
        return Clocks()
    first = list(lo)  # the order the nodes were met in
    ref = max(range(len(runs)), key=lambda i: (len(runs[i][2]), -min(first.index(n) for n in runs[i][2])))
    start, end, _ = runs[ref]
    off_by: dict[str, float] = {}
    group: dict[str, int] = {}
    for i, (s, e, nodes) in enumerate(runs):
        for node in nodes:
            group[node] = 0 if i == ref else i + 1
            if i != ref:
                off_by[node] = s - end if s > end else e - start
    return Clocks(off_by, group)
