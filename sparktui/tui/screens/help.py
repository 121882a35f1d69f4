"""`?`: every key, straight from the registry."""

from __future__ import annotations

from typing import ClassVar

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from sparktui.tui.bindings import KEYS, Key, closing

ABOUT = (
    "Panes fill per node and layer as lines arrive; every line is matched against the signature catalogue "
    "before it reaches a pane. The strip under each node name shows how far its start-up got; red means "
    "stalled. Findings are ranked with the most likely root cause first."
)


class HelpScreen(ModalScreen[None]):
    """Every key of the cockpit and its screens, by group, from the key registry."""

    BINDINGS: ClassVar[list[BindingType]] = closing("help")

    def compose(self) -> ComposeResult:
        groups: dict[str, list[Key]] = {}
        for key in KEYS:
            groups.setdefault(key.group, []).append(key)
        # Two columns of whole groups, about as long as each other, so that every key fits on one screen.
        rows = [len(keys) + 1 for keys in groups.values()]
        half = min(range(len(rows) + 1), key=lambda i: abs(sum(rows[:i]) - sum(rows[i:])))
        names = list(groups)
        both = Table.grid(expand=True, padding=(0, 3))
        both.add_column(ratio=1)
        both.add_column(ratio=1)
        both.add_row(_keys(names[:half], groups), _keys(names[half:], groups))
        with VerticalScroll(id="help"):
            yield Static(Text("sparktui: keys", style="bold"))
            yield Static(Text(ABOUT, style="italic"))
            yield Static(both)
            yield Static(Text("esc closes this help; ↑ ↓ pgup pgdn home end scroll it", style="dim"))


def _keys(names: list[str], groups: dict[str, list[Key]]) -> Table:
    table = Table(box=None, show_header=False, padding=(0, 2, 0, 0))
    table.add_column(style="bold cyan", no_wrap=True)
    table.add_column()
    for name in names:
        table.add_row(Text(name, style="bold underline"), "")
        for key in groups[name]:
            table.add_row(key.label or key.key, key.description)
    return table
