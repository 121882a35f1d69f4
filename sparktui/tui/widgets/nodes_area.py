"""The cockpit's node area: a column per node in view, side by side, and over them the node bar (which of
how many nodes are in view, the findings on nodes out of view, and the nodes the last check found loading
a known-bad build).

Every node's lines are kept whether its column is on screen or not (:mod:`sparktui.tui.nodes`); columns
exist for the nodes in view only, as many as fit side by side, and ``]`` / ``[`` page through the rest, so
a session on thousands of files costs a few widgets, not a few per file. The area also brings a node into
view to show a line of evidence, and remembers the log pane focused last."""

from __future__ import annotations

from collections.abc import Mapping

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import Static

from sparktui.core.analysis.diagnosis import Diagnosis
from sparktui.core.events import Finding
from sparktui.core.outbox import Line, Tally
from sparktui.tui.feed import away, marks
from sparktui.tui.nodes import Nodes, View
from sparktui.tui.widgets.logpane import FilterTooSlow, LogPane
from sparktui.tui.widgets.node import NodeColumn

#: The fewest cells a node's column gets: as many columns are side by side as fit at this width.
NARROW_COLUMN = 60


class NodesArea(Vertical):
    """The node bar over the columns of the nodes in view; it owns every node's lines, the view, the
    columns and what they mark (evidence lines, stalled tracks)."""

    DEFAULT_CSS = "NodesArea { height: 1fr; }"

    def __init__(self) -> None:
        super().__init__(id="nodes-area")
        self.nodes = Nodes()  # every node's lines, in view or not
        self.view = View(self.nodes)  # the nodes whose columns are on screen
        self.columns: dict[str, NodeColumn] = {}  # the columns of the nodes in view
        # Held here, not queried: a query looks at the screen on top, which may be a modal.
        self.bar = Static(id="node-bar")
        self.box = Horizontal(id="nodes")
        self.bar_shown = Text()
        self.following = True
        self.diagnosis: Diagnosis | None = None
        self.marks: frozenset[tuple[str, int]] = frozenset()
        self.stalled: Mapping[str, set[str]] = {}
        self.tallies: Mapping[str, Tally] = {}
        self.settled = False
        self.evidence_index = -1
        self.known_bad: dict[str, list[str]] = {}  # node -> the advisories its builds are in (the last check)

    def compose(self) -> ComposeResult:
        yield self.bar
        yield self.box

    # -- what arrives ----------------------------------------------------------------------------

    def add(self, panes: Mapping[tuple[str, str], list[Line]]) -> None:
        """Lines for the panes: kept for their node, and shown in its column when it is in view."""
        nodes = len(self.nodes)
        came = False
        for (node, layer), lines in panes.items():
            self.nodes.log(node).add(layer, lines)
            column = self.columns.get(node)
            if column is not None:
                column.add(layer, lines)
            else:
                came = self.view.spoke(node) or came  # its column is made with every line kept, these too
        if came:
            self.sync()
        elif len(self.nodes) != nodes:
            self.show_bar()

    def show(self, diagnosis: Diagnosis, stalled: Mapping[str, set[str]]) -> None:
        """A new diagnosis: its evidence lines marked, each node's stages (``stalled`` tracks highlighted)."""
        self.diagnosis, self.stalled = diagnosis, stalled
        self.marks = marks(diagnosis)
        for pane in self.panes():
            pane.set_marks(self.marks)
        for node, column in self.columns.items():
            if node in diagnosis.stages:
                column.strip.show(diagnosis.stages[node], set(stalled.get(node, set())))
        self.show_bar()

    def show_sources(self, tallies: Mapping[str, Tally], done: bool) -> None:
        """What each source handed over, under its node's name; the stage strips settle once it all ended."""
        if done and not self.settled:
            self.settled = True
            for column in self.columns.values():
                column.strip.settle()
        self.tallies = tallies
        for column in self.columns.values():
            column.show_sources(tallies)

    def show_builds(self, known_bad: Mapping[str, list[str]]) -> None:
        """The nodes the last check found loading a known-bad build, with the advisories, marked in the bar."""
        self.known_bad = {node: list(ids) for node, ids in known_bad.items()}
        self.show_bar()

    def pause(self, paused: bool) -> None:
        """Stop following (panes hold what came), or follow again, redrawn with the lines that came."""
        self.following = not paused
        for pane in self.panes():
            pane.following, pane.paused = not paused, paused
            if not paused:
                try:
                    pane.redraw()  # with the lines that came while it was held
                except FilterTooSlow:
                    pane.set_filter("")
                pane.scroll_end(animate=False)

    # -- which nodes are in view -----------------------------------------------------------------

    def fit(self, width: int) -> None:
        """As many columns as fit in ``width`` cells."""
        if self.view.fits(width // NARROW_COLUMN):
            self.sync()

    def page(self, step: int) -> None:
        """The next (1) or previous (-1) page of nodes."""
        if self.view.page(step):
            self.sync()

    def sync(self) -> None:
        """Columns for the nodes in view, in name order, and none for the others."""
        if not self.box.is_attached:  # lines still arriving while the app shuts down
            return
        wanted = self.view.shown
        for node in [n for n in self.columns if n not in wanted]:
            self.columns.pop(node).remove()
        stages = self.diagnosis.stages if self.diagnosis is not None else {}
        for index, node in enumerate(wanted):
            if node in self.columns:
                continue
            column = self.columns[node] = NodeColumn(self.nodes.log(node))
            later = [self.columns[n] for n in wanted[index + 1 :] if n in self.columns]
            self.box.mount(column, before=later[0] if later else None)
            for pane in column.panes.values():
                pane.following = self.following
                pane.set_marks(self.marks)
            if node in stages:
                column.strip.show(stages[node], set(self.stalled.get(node, set())))
            column.show_sources(self.tallies)
        self.show_bar()

    def show_bar(self) -> None:
        """Which nodes are in view among how many, when not all of them are, and the nodes that load a known-bad
        build; nothing (no line) when there is neither."""
        text = Text()
        if not self.view.everything():
            text.append(f" {len(self.view.shown)} of {len(self.nodes):,} nodes in view ", style="reverse")
            text.append("  ] next  [ previous  : go to a node", style="dim")
            elsewhere = away(self.diagnosis, self.view.shown)
            if elsewhere:
                more = f" and {len(elsewhere) - 3:,} more" if len(elsewhere) > 3 else ""
                text.append(f"   findings on {', '.join(elsewhere[:3])}{more} (e shows the evidence)", style="yellow")
        for node, ids in sorted(self.known_bad.items()):
            text.append("   " if text else " ")
            text.append(f"{node} loads a known-bad build", style="bold red")
            text.append(f" ({', '.join(ids)}; I shows the builds)", style="red")
        if text != self.bar_shown:
            if bool(text) != bool(self.bar_shown):
                self.bar.display = bool(text)  # a layout, only when it appears or goes
            self.bar_shown = text
            self.bar.update(text, layout=False)

    def bring(self, node: str) -> tuple[NodeColumn | None, bool]:
        """The node's column, its page brought into view if it was not; and whether it was just made."""
        if node not in self.nodes:
            return None, False
        moved = self.view.show(node)
        if moved:
            self.sync()
        return self.columns.get(node), moved

    def focus_node(self, node: str) -> None:
        """The node's first pane shown, focused (its page brought into view)."""
        column, made = self.bring(node)
        for pane in column.panes.values() if column is not None else ():
            if pane.display:
                if made:
                    self.call_after_refresh(pane.focus)
                else:
                    pane.focus()
                return

    def evidence(self, finding: Finding, step: int) -> None:
        """The finding's next (1) or previous (-1) line of evidence, brought into view in its pane."""
        self.evidence_index = (self.evidence_index + step) % len(finding.evidence)
        e = finding.evidence[self.evidence_index]
        column, made = self.bring(e.node)
        for pane in column.panes.values() if column is not None else ():
            if pane.reveal(e.source, e.line):
                if made:  # laid out on the next refresh: scrolled to the line once it has a height
                    self.call_after_refresh(lambda pane=pane: pane.reveal(e.source, e.line) and pane.focus())
                else:
                    pane.focus()
                self.notify(
                    f"evidence {self.evidence_index + 1} of {len(finding.evidence)}: {e.source}:{e.line}", timeout=2
                )
                return
        self.notify(f"{e.source}:{e.line} is no longer in its pane (open the finding with enter)", timeout=3)

    # -- panes -----------------------------------------------------------------------------------

    def panes(self) -> list[LogPane]:
        return [pane for column in self.columns.values() for pane in column.panes.values()]

    def to_filter(self, focused: LogPane | None) -> list[LogPane]:
        """The panes ``/`` filters: the focused one; with none focused (as at start), every pane, as lnav's
        filter applies to the whole view (a pane the user did not pick is never filtered alone)."""
        return [focused] if focused is not None else self.panes()
