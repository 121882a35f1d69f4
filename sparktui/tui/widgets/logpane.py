"""One pane of log lines for one node and layer: bounded, filterable, searchable, pausable.

Lines are kept as plain records and rendered only when they are on screen (Textual's line API), so a
pane costs the same whether ten or ten thousand lines a second arrive: matching already happened in the
core, and trimming here never loses a finding.
"""

from __future__ import annotations

from collections import deque

import regex
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip

from sparktui.core.pipeline import Line

MAX_LINES = 5000
EVIDENCE_STYLE = "bold on #5f1f1f"
LEVEL_STYLES = {
    "ERROR": "red",
    "FATAL": "bold red",
    "CRITICAL": "bold red",
    "WARN": "yellow",
    "WARNING": "yellow",
    "DEBUG": "dim",
    "TRACE": "dim",
}


class LogPane(ScrollView, can_focus=True):
    def __init__(self, layer: str, title: str, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.pane_layer = layer
        self.border_title = title
        self.lines_kept: deque[Line] = deque(maxlen=MAX_LINES)
        self.pattern: regex.Pattern[str] | None = None
        self.invert = False
        self.shown: list[Line] = []
        self.cursor = -1
        self.following = True
        self.marks: frozenset[tuple[str, int]] = frozenset()  # evidence lines of the current findings
        self._strips: dict[tuple[str, int, int], Strip] = {}  # (source, line number, width) -> rendered

    # -- content ---------------------------------------------------------------------------------

    def add(self, lines: list[Line]) -> None:
        self.lines_kept.extend(lines)
        self.shown.extend(line for line in lines if self._visible(line))
        excess = len(self.shown) - MAX_LINES
        if excess > 0:
            del self.shown[:excess]
            self.cursor = max(self.cursor - excess, -1)
            if not self.following:
                self.scroll_to(y=max(self.scroll_offset.y - excess, 0), animate=False)
        self._resized()

    def set_filter(self, expression: str) -> None:
        """``pattern`` keeps matching lines, ``!pattern`` hides them, empty clears the filter."""
        self.invert = expression.startswith("!")
        body = expression[1:] if self.invert else expression
        self.pattern = regex.compile(body) if body else None
        self.border_subtitle = f"/{expression}" if body else ""
        self.redraw()

    def redraw(self) -> None:
        self.shown = [line for line in self.lines_kept if self._visible(line)]
        self._strips.clear()
        self.cursor = -1
        self._resized()
        self.refresh()

    def set_marks(self, marks: frozenset[tuple[str, int]]) -> None:
        """Highlight these (source, line number) pairs: the evidence of the current findings."""
        if marks != self.marks:
            self.marks = marks
            self._strips.clear()
            self.refresh()

    def jump(self, step: int) -> bool:
        """Move to the next (1) or previous (-1) line the filter matched; False when there is none."""
        if not self.shown:
            return False
        self.cursor = (self.cursor + step) % len(self.shown)
        self._show_line(self.cursor)
        return True

    def reveal(self, source: str, number: int) -> bool:
        """Scroll to one line (an evidence line); False when it is no longer kept or filtered out."""
        for index, line in enumerate(self.shown):
            if line.source == source and line.number == number:
                self.cursor = index
                self._show_line(index)
                return True
        return False

    def scroll_end(self, *args: object, **kwargs: object) -> None:
        super().scroll_end(animate=False, immediate=True)

    # -- rendering -------------------------------------------------------------------------------

    def render_line(self, y: int) -> Strip:
        index = self.scroll_offset.y + y
        width = self.size.width
        if index >= len(self.shown):
            return Strip.blank(width, self.rich_style)
        line = self.shown[index]
        key = (line.source, line.number, width)
        strip = self._strips.get(key)
        if strip is None:
            text = self._styled(line)
            text.truncate(width, overflow="ellipsis", pad=True)
            segments = list(text.render(self.app.console))
            strip = Strip(Segment.apply_style(segments, self.rich_style), width)
            if len(self._strips) > 4 * max(self.size.height, 1):
                self._strips.clear()
            self._strips[key] = strip
        if index == self.cursor:
            strip = strip.apply_style(Style(reverse=True))
        return strip

    def _resized(self) -> None:
        self.virtual_size = Size(self.size.width, len(self.shown))
        if self.following:
            # after the next refresh, when the new virtual size is in force and the bottom is known
            self.call_after_refresh(self._to_end)
        self.refresh()

    def _to_end(self) -> None:
        if self.following:
            self.scroll_to(y=self.max_scroll_y, animate=False, immediate=True)

    def on_resize(self) -> None:
        self._strips.clear()
        self._resized()

    def _show_line(self, index: int) -> None:
        self.following = False
        self.scroll_to(y=max(index - self.size.height // 2, 0), animate=False, immediate=True)
        self.refresh()

    def _visible(self, line: Line) -> bool:
        if self.pattern is None:
            return True
        return bool(self.pattern.search(line.text)) != self.invert

    def _styled(self, line: Line) -> Text:
        text = Text(line.text, style=LEVEL_STYLES.get(line.kind.level, ""), no_wrap=True, end="")
        if (line.source, line.number) in self.marks:
            text.stylize(EVIDENCE_STYLE)
        if self.pattern is not None and not self.invert:
            for m in self.pattern.finditer(line.text):
                text.stylize("reverse", m.start(), m.end())
        return text
