"""The filter field of the log panes: ``/`` opens it on the focused pane (with none focused, on every pane),
enter applies its regex to them (``!`` first hides the lines that match), escape closes it; ``n`` / ``N`` go
from match to match in a pane."""

from __future__ import annotations

from typing import ClassVar

import regex
from textual.binding import BindingType
from textual.widgets import Input

from sparktui.tui.bindings import FILTER, bindings
from sparktui.tui.widgets.logpane import FilterTooSlow, LogPane


class FilterBar(Input):
    """The field, shown while a filter is typed; it remembers which panes it filters."""

    BINDINGS: ClassVar[list[BindingType]] = bindings(FILTER)
    HINT = "filter regex (!regex hides matches), enter applies, esc cancels"

    def __init__(self) -> None:
        super().__init__(placeholder=self.HINT, id="filter")
        self.panes: list[LogPane] = []

    def open(self, panes: list[LogPane]) -> None:
        """Shown, empty and focused, to filter ``panes`` (one: the focused pane; several: every pane)."""
        self.panes = panes
        every = f"every pane ({len(panes)}): " if len(panes) > 1 else ""
        self.placeholder = every + self.HINT
        self.display = True
        self.value = ""
        self.focus()

    def action_cancel(self) -> None:
        self.display = False
        if len(self.panes) == 1 and self.panes[0].is_attached:
            self.panes[0].focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.display = False
        panes = [p for p in self.panes if p.is_attached]  # a node may have gone out of view meanwhile
        if len(panes) == 1:
            panes[0].focus()
        slow: list[str] = []
        for pane in panes:
            try:
                pane.set_filter(event.value)
            except regex.error as exc:  # the same for every pane: said once
                self.notify(f"not a valid regex: {exc}", severity="error")
                return
            except FilterTooSlow as exc:
                slow.append(str(exc))
        if slow:
            more = f" (and {len(slow) - 1} more panes)" if len(slow) > 1 else ""
            self.notify(f"filter not applied: {slow[0]}{more}", severity="error", markup=False)
        if len(panes) > 1:
            said = f"filter {event.value!r} on every pane ({len(panes)})" if event.value else "filters cleared"
            self.notify(said, timeout=3, markup=False)

    def jump(self, pane: LogPane | None, step: int) -> None:
        """To the next (1) or previous (-1) match of ``pane``'s filter."""
        if pane is None or pane.pattern is None:
            self.notify("set a filter with / in a pane first", severity="warning")
            return
        if pane.jump(step):
            self.notify(f"match {pane.cursor + 1} of {len(pane.shown)}", timeout=1.5)
