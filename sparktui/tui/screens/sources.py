"""`S`: every source of the session, with its node, kind, state, what it has handed over, and its last error
in full. The status bar has one line for all of them, so a long error (a changed host key and the command
that fixes it) is cut there; here the source under the cursor has it whole, wrapped.

Sources in trouble come first (failed, then retrying), so the cursor starts on the one to look at. The
screen looks at the session again every :data:`EVERY` seconds while it is open.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Vertical, VerticalScroll
from textual.geometry import Region, Size
from textual.message import Message
from textual.screen import ModalScreen
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.widgets import Static

from sparktui.core.events import State, StateChange
from sparktui.core.pipeline import Tally
from sparktui.core.sources.base import Extent
from sparktui.core.text import display
from sparktui.core.words import size
from sparktui.tui.bindings import SOURCES, bindings, closing
from sparktui.tui.tallies import reading, share

TITLE = "Sources"
#: Seconds between two looks at what changed, while the screen is open.
EVERY = 0.5
_ORDER = {State.FAILED: 0, State.RETRYING: 1, State.CONNECTING: 2, State.STREAMING: 3, State.ENDED: 4}
_STYLE = {
    State.FAILED: Style.parse("bold red"),
    State.RETRYING: Style.parse("red"),
    State.STREAMING: Style.parse("green"),
    State.ENDED: Style.parse("dim"),
}
COLUMNS = ("source", "node", "kind", "state", "lines", "bytes", "read")
#: The most cells each column takes (a longer name is cut; the detail under the list has it whole).
LIMITS = (48, 24, 16, 10, 11, 10, 20)
#: Rows looked at for the widths of the columns.
WIDEST = 1000


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

    def cells(self) -> tuple[str, ...]:
        read = ""
        if self.extent is not None and self.extent.size is not None:
            read = share(self.extent.read, self.extent.size)
        elif self.extent is not None:
            read = size(self.extent.read)
        state = self.state.value if self.state else "waiting"
        return (self.name, self.node, self.kind, state, f"{self.lines:,}", size(self.bytes), read)

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


class Rows:
    """Every source as the screen lists it. The screen asks twice a second: a source whose tally, state and
    error are the objects they were keeps its row."""

    def __init__(self) -> None:
        self.kept: dict[str, tuple[tuple[Tally | None, StateChange | None, str | None], SourceRow]] = {}

    def of(
        self, tallies: Mapping[str, Tally], states: Mapping[str, StateChange], errors: Mapping[str, str]
    ) -> list[SourceRow]:
        rows = []
        for name in {*tallies, *states}:
            looks = (tallies.get(name), states.get(name), errors.get(name))
            kept = self.kept.get(name)
            if kept is None or any(a is not b for a, b in zip(kept[0], looks, strict=True)):
                kept = self.kept[name] = (looks, SourceRow.of(name, *looks))
            rows.append(kept[1])
        return rows


class SourceList(ScrollView, can_focus=True):
    """The sources, one a line, drawn only as they come into view (a session may have thousands: a table
    widget lays every row out first, which took a second for 5,000); ``cursor`` is the one described."""

    BINDINGS: ClassVar[list[BindingType]] = bindings(SOURCES)

    class Highlighted(Message):
        """The cursor moved to another source."""

    def __init__(self) -> None:
        super().__init__(id="sources-list")
        self.rows: list[SourceRow] = []
        self.cursor = 0
        self.widths: tuple[int, ...] = ()

    def show(self, rows: list[SourceRow]) -> None:
        """The rows, in order; the cursor stays on the source it was on."""
        name = self.rows[self.cursor].name if 0 <= self.cursor < len(self.rows) else None
        self.rows = rows
        self.cursor = next((i for i, r in enumerate(rows) if r.name == name), 0) if name else 0
        cells = [row.cells() for row in rows[:WIDEST]]
        self.widths = tuple(
            min(max([len(title), *(len(c[i]) for c in cells)]), limit)
            for i, (title, limit) in enumerate(zip(COLUMNS, LIMITS, strict=True))
        )
        self.virtual_size = Size(sum(self.widths) + 2 * len(self.widths), len(rows))
        self.refresh()
        self.post_message(self.Highlighted())

    def heading(self) -> str:
        return _line(COLUMNS, self.widths)

    def render_line(self, y: int) -> Strip:
        index = self.scroll_offset.y + y
        width = self.size.width
        if index >= len(self.rows):
            return Strip.blank(width)
        row = self.rows[index]
        strip = Strip([Segment(_line(row.cells(), self.widths), _STYLE.get(row.state) if row.state else None)])
        strip = strip.crop_extend(self.scroll_offset.x, self.scroll_offset.x + width, None)
        return strip.apply_style(Style(reverse=True)) if index == self.cursor else strip

    def action_move(self, step: int) -> None:
        self._go(self.cursor + step)

    def action_page(self, step: int) -> None:
        self._go(self.cursor + step * max(self.size.height - 1, 1))

    def action_jump(self, where: int) -> None:
        self._go(where if where >= 0 else len(self.rows) - 1)

    def _go(self, index: int) -> None:
        index = max(0, min(index, len(self.rows) - 1))
        if index == self.cursor:
            return
        self.cursor = index
        self.scroll_to_region(Region(0, index, 1, 1), animate=False, immediate=True)
        self.refresh()
        self.post_message(self.Highlighted())


def _line(cells: Sequence[str], widths: Sequence[int]) -> str:
    """Cells in columns of ``widths``, cut with an ellipsis; the counts right-aligned."""
    out = []
    for i, (cell, width) in enumerate(zip(cells, widths, strict=True)):
        if len(cell) > width:
            cell = cell[: width - 1] + "…"
        out.append(cell.rjust(width) if COLUMNS[i] in ("lines", "bytes") else cell.ljust(width))
    return " " + "  ".join(out)


class SourcesScreen(ModalScreen[None]):
    """Every source of the session with its state and its last error in full, those in trouble first."""

    BINDINGS: ClassVar[list[BindingType]] = closing("sources")
    AUTO_FOCUS = "#sources-list"

    def __init__(self, rows: Callable[[], list[SourceRow]]) -> None:
        """``rows`` gives the sources as they are now."""
        super().__init__()
        self.source_rows = rows
        self.rows = sorted(rows(), key=SourceRow.order)
        self.listing = SourceList()
        self.titles = Static(classes="sources-columns")
        self.detail = Static(id="source-detail")
        self.heading = Static()

    def compose(self) -> ComposeResult:
        with Vertical(id="sources"):
            yield self.heading
            yield self.titles
            yield self.listing
            with VerticalScroll(id="source-detail-box"):
                yield self.detail
            yield Static(Text("↑/↓ j/k pgup/pgdn home/end: a source · esc closes", style="dim"))

    def on_mount(self) -> None:
        self._fill()
        self.set_interval(EVERY, self._follow)

    def _follow(self) -> None:
        rows = sorted(self.source_rows(), key=SourceRow.order)
        if rows != self.rows:
            self.rows = rows
            self._fill()

    def _fill(self) -> None:
        self.listing.show(self.rows)
        self.heading.update(self._heading())
        self.titles.update(Text(self.listing.heading(), style="bold"))

    def on_source_list_highlighted(self, event: SourceList.Highlighted) -> None:
        cursor = self.listing.cursor
        if 0 <= cursor < len(self.rows):
            self.detail.update(self.rows[cursor].describe())
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
