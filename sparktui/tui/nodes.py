"""What the cockpit keeps of every node, whether its column is on screen or not.

A session may have thousands of sources and as many nodes (a directory of logs, each named after its
host), and only a few columns fit side by side. Each node's lines (the newest :data:`MAX_LINES` of each
layer) and the sources that sent them are kept here, as plain records; a column is built only for a node
in view (:class:`View`), and reads its lines from here when it is. Nothing here is a widget.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections import deque

from sparktui.core.pipeline import Line

#: Lines kept per node and layer.
MAX_LINES = 5000


class NodeLog:
    """One node's newest lines per layer, and how many lines each of its sources sent it."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.layers: dict[str, deque[Line]] = {}
        self.sources: dict[str, int] = {}  # source name -> lines it sent this node, in order of first line

    def kept(self, layer: str) -> deque[Line]:
        found = self.layers.get(layer)
        if found is None:
            found = self.layers[layer] = deque(maxlen=MAX_LINES)
        return found

    def add(self, layer: str, lines: list[Line]) -> None:
        self.kept(layer).extend(lines[-MAX_LINES:])
        sources = self.sources
        for line in lines:
            sources[line.source] = sources.get(line.source, 0) + 1


class Nodes:
    """Every node that sent a line, in name order."""

    def __init__(self) -> None:
        self.logs: dict[str, NodeLog] = {}
        self.names: list[str] = []  # sorted

    def __len__(self) -> int:
        return len(self.names)

    def __contains__(self, node: object) -> bool:
        return node in self.logs

    def log(self, node: str) -> NodeLog:
        """The node's log, made when it first speaks."""
        found = self.logs.get(node)
        if found is None:
            found = self.logs[node] = NodeLog(node)
            insort(self.names, node)
        return found

    def index(self, node: str) -> int:
        return bisect_left(self.names, node)


class View:
    """The nodes whose columns are on screen: at most ``slots`` of them, in name order.

    It changes only when asked to (a page forward or back, a node to show) or while it has room for a
    node that just spoke: thousands of nodes speaking while a directory is read leave the columns on
    screen where they are."""

    def __init__(self, nodes: Nodes) -> None:
        self.nodes = nodes
        self.shown: list[str] = []
        self.slots = 1

    def fits(self, slots: int) -> bool:
        """Make room for ``slots`` columns; whether the nodes in view changed."""
        self.slots = max(slots, 1)
        names = self.nodes.names
        if not self.shown:
            wanted = names[: self.slots]
        else:
            start = self.nodes.index(self.shown[0])
            wanted = names[start : start + self.slots]
            if len(wanted) < self.slots:  # at the end of the list: fill from before
                wanted = names[max(len(names) - self.slots, 0) :]
        return self._set(wanted)

    def spoke(self, node: str) -> bool:
        """A node was heard from (perhaps for the first time); whether it came into view."""
        if node in self.shown or len(self.shown) >= self.slots:
            return False
        return self._set(sorted([*self.shown, node]))

    def page(self, step: int) -> bool:
        """The next (1) or the previous (-1) page of nodes, going round at either end."""
        names = self.nodes.names
        if len(names) <= self.slots or not self.shown:
            return False
        if step > 0:
            start = self.nodes.index(self.shown[-1]) + 1
            if start >= len(names):
                start = 0
        else:
            start = self.nodes.index(self.shown[0]) - self.slots
            if start < 0:
                start = 0 if self.nodes.index(self.shown[0]) > 0 else len(names) - self.slots
        return self._set(names[start : start + self.slots])

    def show(self, node: str) -> bool:
        """Bring ``node`` into view (its page, starting with it, unless it is in view already)."""
        if node in self.shown or node not in self.nodes:
            return False
        start = min(self.nodes.index(node), max(len(self.nodes) - self.slots, 0))
        return self._set(self.nodes.names[start : start + self.slots])

    def everything(self) -> bool:
        return len(self.shown) >= len(self.nodes)

    def _set(self, wanted: list[str]) -> bool:
        if wanted == self.shown:
            return False
        self.shown = wanted
        return True
