"""The footer: Textual's, recomposed only when what it shows changed."""

from __future__ import annotations

from textual.screen import Screen
from textual.widgets import Footer

#: What the footer shows of one binding: key, description, whether enabled, tooltip.
Shown = tuple[str, str, bool, str]


class SteadyFooter(Footer):
    """Textual's footer rebuilds its keys (new widgets, so a layout and a repaint of the whole screen) on
    every change of focus and every screen pushed or popped over it, though the keys it shows are the
    same: opening and closing the help then cost a full layout each. This one rebuilds only when the keys
    it would show, their words or their enabled state changed."""

    def __init__(self) -> None:
        super().__init__()
        self.shown: tuple[Shown, ...] | None = None

    def bindings_changed(self, screen: Screen[object]) -> None:
        if screen is self.screen:
            shown = tuple(
                (key, active.binding.description, active.enabled, active.tooltip)
                for key, active in screen.active_bindings.items()
                if active.binding.show or key == self.app.COMMAND_PALETTE_BINDING
            )
            if shown == self.shown:
                return
            self.shown = shown
        super().bindings_changed(screen)
