"""A node's column: its name, its start-up stage strip, a line naming its sources and one log pane per
layer. A column exists only while its node is in view; what it shows is kept by the node's log
(:mod:`sparktui.tui.nodes`)."""

from __future__ import annotations

from collections.abc import Mapping

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static

from sparktui.core.pipeline import Line, Tally
from sparktui.tui.layers import LAYERS
from sparktui.tui.nodes import NodeLog
from sparktui.tui.tallies import progress
from sparktui.tui.widgets.logpane import LogPane

#: Lines a node's stage strip may take: a node with many ranks names each of them, and the strip may not
#: push the node's panes off the screen; a strip cut short ends in a pointer to the grid (G).
STRIP_LINES = 6
MORE = Text(" … G: every rank", style="dim")


class StageStrip(Static):
    """Every track's stage side by side, wrapped to the column: how far start-up got on this node, with
    stalls highlighted.

    Stage phrases change length many times a second while a run starts, so the strip grows as soon as
    its words need another line but does not shrink again until the column's width changes or the run
    ends (:meth:`settle`): the panes under it stay put, and the screen is laid out again only when it
    grows (a layout of the whole screen per stage change is most of what a flood of start-up lines would
    cost). What an ended run shows does not depend on which of its stages happened to be drawn."""

    shown: tuple[tuple[tuple[str, str], ...], frozenset[str]] | None = None

    def __init__(self, *, classes: str) -> None:
        super().__init__(classes=classes)
        self.text = Text()
        self.tallest = 0  # lines the strip holds, at ``width`` cells
        self.width = 0

    def show(self, stages: dict[str, str], stalled: set[str]) -> None:
        looks = (tuple(sorted(stages.items())), frozenset(stalled))
        if looks == self.shown:
            return
        self.shown = looks
        text = Text()
        for track, phrase in sorted(stages.items()):
            if text:
                text.append("  ")
            style = "bold white on red" if track in stalled else "green"
            text.append(f" {track} ", style="reverse " + style)
            text.append(f" {phrase}")
        self.text = text if text else Text("no start-up markers yet", style="dim")
        self._fit()

    def on_resize(self) -> None:
        if self.content_size.width != self.width:
            self._fit()

    def settle(self) -> None:
        """The run ended: from now on the strip holds just what its words need."""
        self.tallest = 0
        self._fit()

    def _fit(self) -> None:
        width = self.content_size.width
        if width <= 0:  # not laid out yet: its height is the content's own
            self.update(self.text)
            return
        lines = self.text.wrap(self.app.console, width)
        text = self.text
        if len(lines) > STRIP_LINES:
            last = lines[STRIP_LINES - 1]
            last.truncate(max(width - MORE.cell_len, 0))
            text = Text("\n").join([*lines[: STRIP_LINES - 1], last + MORE])
        height = min(len(lines), STRIP_LINES)
        if width != self.width or height > self.tallest:
            self.width, self.tallest = width, height
            self.styles.height = height  # a layout
        self.update(text, layout=False)


#: How a column shows the lines of sources that name no node (files of notes beside the logs).
NO_NODE = "no node"


def sources_line(log: NodeLog, tallies: Mapping[str, Tally], width: int) -> Text:
    """The node's sources in one line of ``width`` cells: each with its lines, or how far it has been read
    while a good part of it is still to read; those that do not fit are counted at the end."""
    text = Text(no_wrap=True, overflow="ellipsis")
    names = list(log.sources)
    for shown, name in enumerate(names):
        tally = tallies.get(name)
        count = (progress(tally.extent) if tally is not None else None) or f"{log.sources[name]:,} lines"
        item = Text.assemble((name, "bold"), " ", (count, "dim"))
        left = len(names) - shown - 1
        more = f" · +{left:,} more" if left else ""
        if text and text.cell_len + 3 + item.cell_len + len(more) > width:
            text.append(f" · +{len(names) - shown:,} more", style="dim")
            return text
        if text:
            text.append(" · ", style="dim")
        text.append_text(item)
    return text


class NodeColumn(Vertical):
    """A node's column in view: its name, its stage strip, its sources and a log pane per layer."""

    def __init__(self, log: NodeLog) -> None:
        super().__init__(classes="node")
        self.node_log = log
        self.node = log.name
        self.border_title = log.name or NO_NODE
        # Built here, not in compose, so lines can be added before the column has finished mounting.
        self.strip = StageStrip(classes="stages")
        self.sources = Static(classes="sources")
        self.sources_shown = Text()
        self.panes = {layer: LogPane(layer, title, log.kept(layer)) for layer, title in LAYERS}
        for pane in self.panes.values():
            pane.display = bool(pane.lines_kept)  # hidden until its first line

    def compose(self) -> ComposeResult:
        yield self.strip
        yield self.sources
        yield from self.panes.values()

    def pane(self, layer: str) -> LogPane:
        return self.panes[layer]

    def add(self, layer: str, lines: list[Line]) -> None:
        """Show lines just kept in the node's log."""
        pane = self.pane(layer)
        if not pane.display:
            pane.display = True
        pane.add(lines)

    def show_sources(self, tallies: Mapping[str, Tally]) -> None:
        text = sources_line(self.node_log, tallies, max(self.sources.content_size.width, 20))
        if text != self.sources_shown:  # one line, whatever it says: no layout
            self.sources_shown = text
            self.sources.update(text, layout=False)
