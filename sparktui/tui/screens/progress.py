"""`G`: the rank-by-stage grid of each track (:mod:`sparktui.core.analysis.progress`), every rank on its own
row, so the one rank that stopped short, or the place where all of them stopped, is seen at a glance.

The screen stays open while a live session streams: the app hands it each new diagnosis's grids
(:meth:`ProgressScreen.show`). A table whose ranks and columns are unchanged has only its cells updated, so
where it was scrolled to stays put while ranks move on. Once the ranks' stacks were read (``W``), each grid
has a "now" column: where each rank is, the odd ones marked behind (:mod:`sparktui.core.report.fold`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Vertical, VerticalScroll
from textual.coordinate import Coordinate
from textual.screen import ModalScreen
from textual.widgets import DataTable, Static

from sparktui.core.analysis.progress import SCREEN_GRIDS, Cell, Grid, Row, worth_showing
from sparktui.core.report.fold import fold_grids
from sparktui.core.text import display
from sparktui.tui.bindings import closing, forwarded
from sparktui.tui.stacks import Captures

TITLE = "Start-up progress"
EMPTY = "No start-up stage recognised yet."
BEHIND = "bold white on red"
DONE = "green"
GOING = "yellow"
LEGEND = Text.assemble(
    ("finished", DONE),
    " · ",
    ("on its way, or where it stopped", GOING),
    " · ",
    ("behind the rest of its column", BEHIND),
    " · ◀ a rank behind",
)


class ProgressScreen(ModalScreen[None]):
    """The rank-by-stage grid of every track, kept current while the session streams."""

    BINDINGS: ClassVar[list[BindingType]] = [*closing("progress"), *forwarded("stacks")]

    def __init__(self, grids: Sequence[Grid], captures: Captures | None = None) -> None:
        super().__init__()
        self.captures = captures
        self.raw = tuple(grids)  # as the diagnosis has them
        self.grids = self._fold(self.raw)  # as shown: with the "now" column of the last capture

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="progress"):
            yield Static(Text(TITLE, style="bold"))
            with Vertical(id="grids"):
                yield from _views(self.grids)
            yield Static(LEGEND, classes="section")
            yield Static(Text("esc closes", style="dim"))

    def _fold(self, grids: tuple[Grid, ...]) -> tuple[Grid, ...]:
        return fold_grids(grids, self.captures.latest) if self.captures is not None else grids

    def on_screen_resume(self) -> None:
        """A capture of the stacks may have come meanwhile."""
        self.show(self.raw)

    def show(self, grids: Sequence[Grid]) -> None:
        """Follow a new diagnosis: the grids of the same tracks are updated in place, others replace them."""
        self.raw = tuple(grids)
        grids = self._fold(self.raw)
        if grids == self.grids:
            return
        views = list(self.query(GridView))
        shown, left_out = worth_showing(grids, SCREEN_GRIDS)
        same = [(v.grid.track, v.grid.label) for v in views] == [(g.track, g.label) for g in shown]
        same = same and left_out == worth_showing(self.grids, SCREEN_GRIDS)[1]
        self.grids = grids
        if views and same:
            for view, grid in zip(views, shown, strict=True):
                view.show(grid)
            return
        box = self.query_one("#grids", Vertical)
        box.remove_children()
        box.mount_all(_views(grids))


class GridView(Vertical):
    """One track: its name and verdict, then its table."""

    def __init__(self, grid: Grid) -> None:
        super().__init__(classes="grid")
        self.grid = grid
        self.heading = Static(_heading(grid), classes="grid-heading")
        self.table = RankTable(grid)

    def compose(self) -> ComposeResult:
        yield self.heading
        yield self.table

    def show(self, grid: Grid) -> None:
        self.grid = grid
        self.heading.update(_heading(grid))
        self.table.show(grid)


class RankTable(DataTable[Text]):
    """A row per rank (never merged: the cockpit shows every rank), a column per communicator or start-up.
    No cursor: nothing here is selected, and a row selection would reach the app's findings handler."""

    def __init__(self, grid: Grid) -> None:
        super().__init__(cursor_type="none", fixed_columns=2)
        self.grid = grid
        self._columns: tuple[str, ...] | None = None

    def on_mount(self) -> None:
        self.show(self.grid)

    def show(self, grid: Grid) -> None:
        self.grid = grid
        rows = [(Text(display(row.node)), _who(row), *(_cell(c) for c in row.cells)) for row in grid.rows]
        if grid.columns == self._columns and len(rows) == self.row_count:
            for y, cells in enumerate(rows):
                for x, cell in enumerate(cells):
                    self.update_cell_at(Coordinate(y, x), cell, update_width=True)
            return
        self.clear(columns=True)
        self._columns = grid.columns
        for label in ("node", "rank", *grid.columns):
            self.add_column(Text(display(label), style="bold"))
        for cells in rows:
            self.add_row(*cells)


def _views(grids: Sequence[Grid]) -> list[Static | GridView]:
    if not grids:
        return [Static(Text(EMPTY, style="italic"), classes="section")]
    shown, left_out = worth_showing(grids, SCREEN_GRIDS)
    views: list[Static | GridView] = [GridView(g) for g in shown]
    return [*views, Static(Text(left_out, style="dim"), classes="section")] if left_out else views


def _heading(grid: Grid) -> Text:
    """The track's name and its verdict, styled by what it says: someone behind, all stopped at one place
    (something every rank waits on), or everyone ready."""
    text = Text(grid.label, style="bold underline")
    if not grid.verdict:
        return text
    cells = [c for r in grid.rows for c in r.cells if c.stage]
    if any(r.behind for r in grid.rows):
        style = "bold red"
    elif cells and all(c.done for c in cells):
        style = DONE
    else:
        style = "bold black on yellow"
    text.append("  ")
    text.append(f" {display(grid.verdict)} ", style=style)
    return text


def _who(row: Row) -> Text:
    """The rank, marked where it is behind; blank where it only repeats the node (a track of nodes)."""
    who = "" if row.who == row.node else display(row.who)
    if not row.behind:
        return Text(who)
    return Text.assemble((who, "bold red"), (" ◀", "bold red"))


def _cell(cell: Cell) -> Text:
    if not cell.short:
        return Text("")
    style = BEHIND if cell.behind else DONE if cell.done else GOING
    return Text(cell.short, style=style)
