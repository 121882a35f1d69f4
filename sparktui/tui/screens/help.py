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

from sparktui.tui.bindings import KEYS

ABOUT = (
    "Panes fill per node and layer as lines arrive; every line is matched against the signature catalogue "
    "before it reaches a pane. The strip under each node name shows how far its start-up got; red means "
    "stalled. Findings are ranked with the most likely root cause first."
)


class HelpScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        ("escape", "dismiss", "Close"),
        ("question_mark", "dismiss", "Close"),
        ("q", "dismiss", "Close"),
    ]

    def compose(self) -> ComposeResult:
        table = Table(box=None, show_header=False, padding=(0, 2))
        table.add_column(style="bold cyan", no_wrap=True)
        table.add_column()
        group = ""
        for key in KEYS:
            if key.group != group:
                group = key.group
                table.add_row(Text(group, style="bold underline"), "")
            table.add_row(key.label or key.key, key.description)
        with VerticalScroll(id="help"):
            yield Static(Text("sparktui: keys", style="bold"))
            yield Static(Text(ABOUT, style="italic"))
            yield Static(table)
            yield Static(Text("esc closes this help", style="dim"))
