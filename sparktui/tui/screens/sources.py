"""`S`: every source of the session, with its node, kind, state, what it has handed over, and its last error
in full. The status bar has one line for all of them, so a long error (a changed host key and the command
that fixes it) is cut there; here the source under the cursor has it whole, wrapped.

Sources in trouble come first (failed, then retrying), so the cursor starts on the one to look at. The
screen follows the session while it is open, at most every :data:`EVERY` seconds.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Vertical, VerticalScroll
from textual.coordinate import Coordinate
from textual.screen import ModalScreen
from textual.widgets import DataTable, Static

from sparktui.core.events import State, StateChange
from sparktui.core.pipeline import Tally
from sparktui.core.sources.base import Extent
from sparktui.core.text import display
from sparktui.tui.tallies import reading, share, size

TITLE = "Sources"
#: Seconds between two looks at what changed, while the screen is open.
EVERY = 0.5
_ORDER = {State.FAILED: 0, State.RETRYING: 1, State.CONNECTING: 2, State.STREAMING: 3, State.ENDED: 4}
_STYLE = {State.FAILED: "bold red", State.RETRYING: "red", State.STREAMING: "green", State.ENDED: "dim"}
COLUMNS = ("source", "node", "kind", "state", "lines", "bytes", "read")


@dataclass(frozen=True, slots=True)
class SourceRow:
    """One source as the screen lists it; every text made safe to show."""

    name: str
    node: str
    kind: str
    state: State | None
    detail: str  # what its state says (the reason of a failure, when a retry comes)
    error: str  # its last error, kept after it recovered; "" when it never had one
    lines: int
    bytes: int
    extent: Extent | None

    @classmethod
    def of(cls, name: str, tally: Tally | None, change: StateChange | None, error: str | None) -> SourceRow:
        return cls(
            display(name),
            display(tally.node) if tally else "",
            tally.kind if tally else "",
            change.state if change else None,
            display(change.detail) if change else "",
            display(error or ""),
            tally.lines if tally else 0,
            tally.bytes if tally else 0,
            tally.extent if tally else None,
        )

    def order(self) -> tuple[int, str]:
        return (_ORDER.get(self.state, 5) if self.state else 5, self.name)

    def cells(self) -> tuple[Text, ...]:
        state = self.state.value if self.state else "waiting"
        read = ""
        if self.extent is not None and self.extent.size is not None:
            read = share(self.extent.read, self.extent.size)
        elif self.extent is not None:
            read = size(self.extent.read)
        return (
            Text(self.name),
            Text(self.node),
            Text(self.kind, style="dim"),
            Text(state, style=_STYLE.get(self.state, "") if self.state else "dim"),
            Text(f"{self.lines:,}", justify="right"),
            Text(size(self.bytes), justify="right"),
            Text(read, style="dim"),
        )

    def describe(self) -> Text:
        """Everything about the source, the error in full (wrapped by the screen)."""
        text = Text()
        text.append(self.name, style="bold")
        text.append(f"\nnode {self.node or '?'} · {self.kind or 'source'} · ")
        text.append(
            self.state.value if self.state else "waiting", style=_STYLE.get(self.state, "") if self.state else ""
        )
        if self.detail and self.detail != self.error:
            text.append(f": {self.detail}")
        text.append(f"\n{self.lines:,} lines, {size(self.bytes)} of text")
        if self.extent is not None and self.extent.size is not None:
            text.append(f"; {reading(self.extent.read, self.extent.size)} of the source")
        if self.error:
            text.append("\nlast error: ", style="bold red")
            text.append(self.error)
        return text


class SourcesScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        ("escape", "dismiss", "Close"),
        ("q", "dismiss", "Close"),
        ("S", "dismiss", "Close"),
    ]
    AUTO_FOCUS = "#sources-table"

    def __init__(self, rows: Sequence[SourceRow]) -> None:
        super().__init__()
        self.rows = sorted(rows, key=SourceRow.order)
        self._pending: list[SourceRow] | None = None
        self.table: DataTable[Text] = DataTable(id="sources-table", cursor_type="row", zebra_stripes=True)
        self.detail = Static(id="source-detail")
        self.heading = Static(self._heading())

    def compose(self) -> ComposeResult:
        with Vertical(id="sources"):
            yield self.heading
            yield self.table
            with VerticalScroll(id="source-detail-box"):
                yield self.detail
            yield Static(Text("↑/↓ a source · esc closes", style="dim"))

    def on_mount(self) -> None:
        self.table.add_columns(*COLUMNS)
        self._fill()
        self.set_interval(EVERY, self._follow)

    def show(self, rows: Sequence[SourceRow]) -> None:
        """The session moved on: shown at the next look (see :data:`EVERY`)."""
        self._pending = sorted(rows, key=SourceRow.order)

    def _follow(self) -> None:
        rows, self._pending = self._pending, None
        if rows is None or rows == self.rows:
            return
        names = [r.name for r in rows]
        if names == [r.name for r in self.rows]:  # the same sources in the same order: changed cells only
            for row, (old, new) in enumerate(zip(self.rows, rows, strict=True)):
                if old != new:
                    for column, cell in enumerate(new.cells()):
                        self.table.update_cell_at(Coordinate(row, column), cell)
            self.rows = rows
        else:
            where = self.table.cursor_row
            name = self.rows[where].name if 0 <= where < len(self.rows) else None
            self.rows = rows
            self.table.clear()
            self._fill()
            if name in names:
                self.table.move_cursor(row=names.index(name))
        self.heading.update(self._heading())
        self._describe(self.table.cursor_row)

    def _fill(self) -> None:
        self.table.add_rows(row.cells() for row in self.rows)
        self._describe(self.table.cursor_row)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._describe(event.cursor_row)

    def _describe(self, row: int) -> None:
        if 0 <= row < len(self.rows):
            self.detail.update(self.rows[row].describe())
        else:
            self.detail.update(Text("no source yet", style="dim"))

    def _heading(self) -> Text:
        counts: dict[str, int] = {}
        for row in self.rows:
            state = row.state.value if row.state else "waiting"
            counts[state] = counts.get(state, 0) + 1
        text = Text(TITLE, style="bold")
        text.append(f"   {len(self.rows):,} in all: " + ", ".join(f"{n:,} {s}" for s, n in counts.items()), style="dim")
        return text
