"""One pane of log lines for one node and layer: bounded, filterable, searchable, pausable.

Lines are kept as plain records (by the node's log, :mod:`sparktui.tui.nodes`, whether the pane exists or
not) and rendered only when they are on screen (Textual's line API), so a pane costs the same whether ten
or ten thousand lines a second arrive: matching already happened in the core, and trimming here never
loses a finding. The filter is the user's regex: like a user's signature, it may spend only so much time
on a line (:func:`~sparktui.core.analysis.matcher.budget`), and only :data:`FILTER_SECONDS` on a pane's
lines, or it is dropped with the reason.
"""

from __future__ import annotations

import time
from collections import deque
from math import ceil

import regex
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.geometry import Region, Size
from textual.reactive import Reactive
from textual.scroll_view import ScrollView
from textual.scrollbar import ScrollBar
from textual.strip import Strip

from sparktui.core.analysis.matcher import budget
from sparktui.core.pipeline import Line
from sparktui.tui.nodes import MAX_LINES

#: CPU seconds a filter may take on the lines a pane holds when it is set.
FILTER_SECONDS = 1.0
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


_LEVEL_STYLES = {level: Style.parse(style) for level, style in LEVEL_STYLES.items()}
_EVIDENCE = Style.parse(EVIDENCE_STYLE)
_PLAIN = Style()


def _thumb(cells: int, lines: float, window: float, position: float) -> tuple[int, int] | None:
    """Where Textual's scroll bar (``ScrollBarRender.render_bar``, Textual 8.2) draws its thumb, in eighths
    of a cell from the top: its first and its last; None when it draws none."""
    lines, window = ceil(lines), ceil(window) if window < lines else 0
    if not (window and cells and lines and cells != lines):
        return None
    thumb = max(1, window / (lines / cells))
    start = int((cells - thumb) * position / (lines - window) * 8)
    return start, start + ceil(thumb * 8)


class _Bar(ScrollBar):
    """A pane's scroll bar. Textual's asks for a layout of the whole screen whenever the pane it belongs
    to changed size (its own virtual size follows the pane's), so every layout that resized a pane
    was followed by a second one; where a bar goes is the pane's business, so this one asks for none."""

    virtual_size: Reactive[Size] = Reactive(Size(0, 0))


class FilterTooSlow(Exception):
    """A filter that took longer than it may: on one line, or on the lines of a pane; the message says which."""


class LogPane(ScrollView, can_focus=True):
    """The log lines of one node and layer, rendered only while on screen; filter, search and pause."""

    def __init__(self, layer: str, title: str, kept: deque[Line] | None = None, *, id: str | None = None) -> None:
        """``kept`` is where the pane's lines are kept (its node's, which the pane only reads)."""
        super().__init__(id=id)
        self.pane_layer = layer
        self.border_title = title
        self.lines_kept: deque[Line] = kept if kept is not None else deque(maxlen=MAX_LINES)
        self.pattern: regex.Pattern[str] | None = None
        self.invert = False
        self.shown: list[Line] = list(self.lines_kept)
        self.cursor = -1
        self.following = True
        self.paused = False  # the view is held (space): new lines are kept, shown once following resumes
        self.marks: frozenset[tuple[str, int]] = frozenset()  # evidence lines of the current findings
        self._strips: dict[tuple[str, int, int], Strip] = {}  # (source, line number, width) -> rendered
        self._base = Style()  # the pane's own style, taken at each render

    # -- content ---------------------------------------------------------------------------------

    def add(self, lines: list[Line]) -> None:
        """Show a frame's lines, just added to the lines kept: only the newest :data:`MAX_LINES` of them can
        be shown, so a flood costs a slice here, not a pass over every line. A filter that takes too long
        on one of them is dropped, with a notification."""
        if self.paused:
            return  # kept already; redrawn from what is kept when it resumes, filtered or not
        lines = lines[-MAX_LINES:]
        if self.pattern is None:
            self.shown.extend(lines)
        else:
            try:
                self.shown.extend([line for line in lines if self._visible(line)])
            except FilterTooSlow as exc:
                self.set_filter("")
                self.app.notify(f"filter dropped: {exc}", severity="warning", timeout=10, markup=False)
                return
        excess = len(self.shown) - MAX_LINES
        if excess > 0:
            del self.shown[:excess]
            self.cursor = max(self.cursor - excess, -1)
            if not self.following:
                self.scroll_to(y=max(self.scroll_offset.y - excess, 0), animate=False)
        self._resized()

    def set_filter(self, expression: str) -> None:
        """``pattern`` keeps matching lines, ``!pattern`` hides them, empty clears the filter. Raises
        :class:`regex.error` for an expression that is not a regex and :class:`FilterTooSlow` for one that
        takes too long on the lines held (the pane is then left unfiltered)."""
        invert = expression.startswith("!")
        body = expression[1:] if invert else expression
        pattern = regex.compile(body) if body else None
        self.pattern, self.invert = pattern, invert
        self.border_subtitle = f"/{expression}" if body else ""
        try:
            self.redraw()
        except FilterTooSlow:
            self.set_filter("")
            raise

    def redraw(self) -> None:
        if self.pattern is None:
            self.shown = list(self.lines_kept)
        else:
            started = time.thread_time()
            shown = []
            for line in self.lines_kept:
                if self._visible(line):
                    shown.append(line)
                if time.thread_time() - started > FILTER_SECONDS:
                    raise FilterTooSlow(f"it took more than {FILTER_SECONDS:g} s on the lines this pane holds")
            self.shown = shown
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

    def render_lines(self, crop: Region) -> list[Strip]:
        # The pane's own style, once per render rather than once per line (it walks every ancestor).
        self._base = self.rich_style
        return super().render_lines(crop)

    def render_line(self, y: int) -> Strip:
        index = self.scroll_offset.y + y
        width = self.size.width
        if index >= len(self.shown):
            return Strip.blank(width, self._base)
        line = self.shown[index]
        key = (line.source, line.number, width)
        strip = self._strips.get(key)
        if strip is None:
            strip = Strip(self._segments(line, width), width)
            if len(self._strips) > 4 * max(self.size.height, 1):
                self._strips.clear()
            self._strips[key] = strip
        if index == self.cursor:
            strip = strip.apply_style(Style(reverse=True))
        return strip

    def _segments(self, line: Line, width: int) -> list[Segment]:
        """One line cut or padded to ``width`` cells. Most lines are printable ASCII with no filter match
        to mark: those are cut by hand (a character is a cell, and none is a control character even if a
        line came by without :func:`~sparktui.core.text.display`), which is most of what a flood costs
        to draw; the rest go through Rich."""
        text = line.text
        if not (text.isascii() and text.isprintable()) or (self.pattern is not None and not self.invert):
            styled = self._styled(line)
            styled.truncate(width, overflow="ellipsis", pad=True)
            return list(Segment.apply_style(styled.render(self.app.console), self._base))
        style = self._base + _LEVEL_STYLES.get(line.kind.level, _PLAIN)
        if len(text) > width:
            text = text[: max(width - 1, 0)] + "…" if width else ""
        pad = " " * (width - len(text))
        if (line.source, line.number) not in self.marks:
            return [Segment(text + pad, style)]
        return [Segment(text, style + _EVIDENCE), Segment(pad, style)]  # the mark ends with the words

    def _resized(self) -> None:
        size = Size(self.size.width, len(self.shown))
        if size != self.virtual_size:
            # Set without the reactive's layout: the pane's own size does not depend on its lines, and a
            # layout of the whole screen for every pane that got lines, every frame, is what a flood
            # cannot afford. The scroll bar and the scroll limits follow the new size at once.
            self.set_reactive(LogPane.virtual_size, size)
            self._refresh_scrollbars()  # whether the bar shows at all (a layout when that changes)
            self._bar(size.height, self.scroll_y)
            self.scroll_y = self.validate_scroll_y(self.scroll_y)
        if self.following:
            self.scroll_to(y=self.max_scroll_y, animate=False, immediate=True)
        self.refresh()

    def watch_show_vertical_scrollbar(self, shown: bool) -> None:
        # A pane that got all its lines before its first layout could not scroll then (no bar, no
        # height), and its first layout does not always send it a Resize: it follows from when its bar
        # appears. (The main-screen snapshot caught it about once in a dozen runs, before this work too.)
        if shown and self.following:
            self.scroll_to(y=self.max_scroll_y, animate=False, immediate=True)

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        self._bar(self.virtual_size.height, new_value)
        if round(old_value) != round(new_value):
            self.refresh(self.size.region)

    @property
    def vertical_scrollbar(self) -> ScrollBar:
        """Textual's, with :class:`_Bar` for the bar."""
        if self._vertical_scrollbar is None:
            self._vertical_scrollbar = _Bar(vertical=True, name="vertical", thickness=self.scrollbar_size_vertical)
            self._vertical_scrollbar.display = False
            self.app._start_widget(self, self._vertical_scrollbar)
        return self._vertical_scrollbar

    def _bar(self, lines: int, position: float) -> None:
        """Tell the scroll bar how many lines there are and where the view is, redrawing it only when its
        thumb moves: a following pane moves by a few lines among thousands each frame, the thumb is drawn
        in eighths of a cell, and redrawing a bar costs as much as drawing the pane's lines."""
        if not self.show_vertical_scrollbar:
            return
        bar = self.vertical_scrollbar
        window = self.container_size.height - self.scrollbar_size_horizontal
        position = bar.validate_position(position)
        cells = bar.size.height
        if _thumb(cells, lines, window, position) != _thumb(
            cells, bar.window_virtual_size, bar.window_size, bar.position
        ):
            bar.window_virtual_size, bar.window_size, bar.position = lines, window, position
            return
        bar.set_reactive(ScrollBar.window_virtual_size, lines)
        bar.set_reactive(ScrollBar.window_size, window)
        bar.set_reactive(ScrollBar.position, position)

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
        seconds = budget(line.text)
        try:
            return bool(self.pattern.search(line.text, timeout=seconds)) != self.invert
        except TimeoutError:
            raise FilterTooSlow(
                f"it took more than {seconds:.2g} s on one line ({line.source}:{line.number})"
            ) from None

    def selected(self) -> Line | None:
        """The line a copy takes: the one the cursor is on (a match, an evidence line, a line clicked), else
        the newest line in view."""
        if 0 <= self.cursor < len(self.shown):
            return self.shown[self.cursor]
        last = min(self.scroll_offset.y + self.size.height, len(self.shown)) - 1
        return self.shown[last] if last >= 0 else None

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is not None and 0 <= self.scroll_offset.y + offset.y < len(self.shown):
            self.cursor = self.scroll_offset.y + offset.y
            self.refresh()

    def _styled(self, line: Line) -> Text:
        text = Text(line.text, style=LEVEL_STYLES.get(line.kind.level, ""), no_wrap=True, end="")
        if (line.source, line.number) in self.marks:
            text.stylize(EVIDENCE_STYLE)
        if self.pattern is not None and not self.invert:
            try:
                for m in self.pattern.finditer(line.text, timeout=budget(line.text)):
                    text.stylize("reverse", m.start(), m.end())
            except TimeoutError:
                pass  # shown, but with its matches not marked: it was shown because the filter matched it once
        return text
