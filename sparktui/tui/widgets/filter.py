"""The filter field of the log panes: ``/`` opens it on a pane, enter applies its regex to that pane (``!``
first hides the lines that match), escape closes it; ``n`` / ``N`` go from match to match in a pane."""

from __future__ import annotations

from typing import ClassVar

import regex
from textual.binding import BindingType
from textual.widgets import Input

from sparktui.tui.bindings import FILTER, bindings
from sparktui.tui.widgets.logpane import FilterTooSlow, LogPane


class FilterBar(Input):
    """The field, shown while a pane's filter is typed; it remembers which pane it filters."""

    BINDINGS: ClassVar[list[BindingType]] = bindings(FILTER)

    def __init__(self) -> None:
        super().__init__(placeholder="filter regex (!regex hides matches), enter applies, esc cancels", id="filter")
        self.pane: LogPane | None = None

    def open(self, pane: LogPane) -> None:
        """Shown, empty and focused, to filter ``pane``."""
        self.pane = pane
        self.display = True
        self.value = ""
        self.focus()

    def action_cancel(self) -> None:
        self.display = False
        if self.pane is not None:
            self.pane.focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.display = False
        pane = self.pane
        if pane is None or not pane.is_attached:  # its node went out of view meanwhile
            return
        try:
            pane.set_filter(event.value)
        except regex.error as exc:
            self.notify(f"not a valid regex: {exc}", severity="error")
        except FilterTooSlow as exc:
            self.notify(f"filter not applied: {exc}", severity="error", markup=False)
        pane.focus()

    def jump(self, pane: LogPane | None, step: int) -> None:
        """To the next (1) or previous (-1) match of ``pane``'s filter."""
        if pane is None or pane.pattern is None:
            self.notify("set a filter with / in a pane first", severity="warning")
            return
        if pane.jump(step):
            self.notify(f"match {pane.cursor + 1} of {len(pane.shown)}", timeout=1.5)
