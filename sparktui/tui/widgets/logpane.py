"""One pane of log lines for one node and layer: bounded, filterable, searchable, pausable."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import regex
from rich.text import Text
from textual.widgets import RichLog

MAX_LINES = 5000
LEVEL_STYLES = {
    "ERROR": "red",
    "FATAL": "bold red",
    "CRITICAL": "bold red",
    "WARN": "yellow",
    "WARNING": "yellow",
    "DEBUG": "dim",
    "TRACE": "dim",
}


@dataclass(frozen=True, slots=True)
class PaneLine:
    source: str
    number: int
    text: str
    level: str


class LogPane(RichLog):
    """Lines are kept (up to :data:`MAX_LINES`) apart from what is drawn, so a filter can be changed and the
    pane redrawn; matching already happened in the core, so trimming here never loses a finding."""

    can_focus = True

    def __init__(self, layer: str, title: str, *, id: str | None = None) -> None:
        super().__init__(max_lines=MAX_LINES, wrap=False, markup=False, highlight=False, auto_scroll=True, id=id)
        self.pane_layer = layer
        self.border_title = title
        self.lines_kept: deque[PaneLine] = deque(maxlen=MAX_LINES)
        self.pattern: regex.Pattern[str] | None = None
        self.invert = False
        self.shown: list[PaneLine] = []
        self.cursor = -1
        self.following = True

    def add(self, lines: list[PaneLine]) -> None:
        self.lines_kept.extend(lines)
        visible = [line for line in lines if self._visible(line)]
        self.shown.extend(visible)
        if len(self.shown) > MAX_LINES:
            del self.shown[: len(self.shown) - MAX_LINES]
        for line in visible:
            self.write(self._styled(line), scroll_end=self.following)

    def set_filter(self, expression: str) -> None:
        """``pattern`` keeps matching lines, ``!pattern`` hides them, empty clears the filter."""
        self.invert = expression.startswith("!")
        body = expression[1:] if self.invert else expression
        self.pattern = regex.compile(body) if body else None
        self.border_subtitle = f"/{expression}" if body else ""
        self.redraw()

    def redraw(self) -> None:
        self.clear()
        self.shown = [line for line in self.lines_kept if self._visible(line)]
        for line in self.shown:
            self.write(self._styled(line), scroll_end=False)
        self.cursor = -1
        if self.following:
            self.scroll_end(animate=False)

    def jump(self, step: int) -> bool:
        """Move to the next (1) or previous (-1) line the filter matched; False when there is none."""
        if not self.shown:
            return False
        self.cursor = (self.cursor + step) % len(self.shown)
        self.following = False
        self.scroll_to(y=max(self.cursor - self.size.height // 2, 0), animate=False)
        return True

    def reveal(self, source: str, number: int) -> bool:
        """Scroll to one line (an evidence line); False when it is no longer kept or filtered out."""
        for index, line in enumerate(self.shown):
            if line.source == source and line.number == number:
                self.cursor = index
                self.following = False
                self.scroll_to(y=max(index - self.size.height // 2, 0), animate=False)
                return True
        return False

    def _visible(self, line: PaneLine) -> bool:
        if self.pattern is None:
            return True
        return bool(self.pattern.search(line.text)) != self.invert

    def _styled(self, line: PaneLine) -> Text:
        text = Text(line.text, style=LEVEL_STYLES.get(line.level, ""), no_wrap=True, overflow="ellipsis")
        if self.pattern is not None and not self.invert:
            for m in self.pattern.finditer(line.text):
                text.stylize("reverse", m.start(), m.end())
        return text
