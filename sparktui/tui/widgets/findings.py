"""The findings panel: ranked as `sparktui diagnose` ranks them, then the pre-launch check's (``I``), whose
severity column shows their verdict. The stall findings, those a capture of every rank's stack is taken for,
are marked with the cockpit's key for it (``W``) in a column of its own."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from rich.text import Text
from textual.timer import Timer
from textual.widgets import DataTable

from sparktui.core.events import Finding
from sparktui.richtext import SEVERITY_STYLE, VERDICT_STYLE
from sparktui.tui.bindings import key_label
from sparktui.tui.feed import COUNTS_EVERY

#: The cockpit's key that reads every rank's stack, written in the column that marks the stall findings.
STACKS = key_label("stacks")
#: The table's columns: label (and key) and width.
COLUMNS = (("#", 3), (STACKS, 1), ("severity", 12), ("finding", 59), ("nodes", 22), ("count", 6), ("since", 8))
#: The columns that change by themselves while lines arrive.
TICKING = frozenset({"count", "since"})


class FindingsTable(DataTable[Text]):
    """The findings panel, most likely root cause first, then the pre-launch check's findings."""

    def __init__(self, is_stall: Callable[[Finding], bool] = lambda _: False) -> None:
        super().__init__(id="findings", cursor_type="row", zebra_stripes=True)
        self.is_stall = is_stall  # whether a capture of the stacks is taken for a finding
        self.findings: Sequence[Finding] = ()
        self._shown: dict[str, tuple[Text, ...]] = {}  # the cells on screen, per finding
        self._pending: dict[str, tuple[Text, ...]] = {}  # cells to show when counts may change again
        self._updated_at = 0.0  # time.monotonic() when cells last changed
        self._later: Timer | None = None
        self.border_title = "Findings"

    def on_mount(self) -> None:
        for label, width in COLUMNS:
            self.add_column(label, width=width, key=label)

    def show(self, findings: Sequence[Finding], clock: float, seen_at: dict[str, float]) -> None:
        """Show ``findings``: the same findings in the same order only have their cells updated, others
        rebuild the table, keeping the selection. A flood of lines changes counts many times a second and
        every cell updated repaints the whole table, so cells change only when their words or colour
        did, and counts and ages at most every :data:`COUNTS_EVERY` seconds, and not while another
        screen covers the table (the last ones always follow)."""
        rows = [self._cells(rank, f, clock, seen_at) for rank, f in enumerate(findings, 1)]
        if [f.signature for f in findings] == [f.signature for f in self.findings]:
            self.findings = findings
            self._pending = {f.signature: cells for f, cells in zip(findings, rows, strict=True)}
            ticking = all(
                _looks(cell) == _looks(shown)
                for sig, cells in self._pending.items()
                for column, cell, shown in zip(COLUMNS, cells, self._shown[sig], strict=True)
                if column[0] not in TICKING
            )
            wait = self._updated_at + COUNTS_EVERY - time.monotonic()
            if not ticking or (wait <= 0 and self.app.screen is self.screen):
                self._update_cells()
            elif self._later is None:
                self._later = self.set_timer(max(wait, COUNTS_EVERY / 10), self._due)
            return
        self._shown = {f.signature: cells for f, cells in zip(findings, rows, strict=True)}
        self._pending = {}
        selected = self.selected()
        keep = selected.signature if selected else None
        self.findings = findings
        self.clear()
        for f, cells in zip(findings, rows, strict=True):
            self.add_row(*cells, key=f.signature)
        self.border_subtitle = f"{len(findings)} finding{'s' if len(findings) != 1 else ''}"
        if keep is not None:
            for row, f in enumerate(findings):
                if f.signature == keep:
                    self.move_cursor(row=row)

    def _due(self) -> None:
        self._later = None
        if self.app.screen is not self.screen:
            # Covered: updated cells would repaint a table nobody sees, and then again, whole, when the
            # cockpit comes back; the first frame back shows the counts of a moment ago instead.
            self._later = self.set_timer(COUNTS_EVERY, self._due)
        elif self._pending:
            self._update_cells()

    def _update_cells(self) -> None:
        if self._later is not None:
            self._later.stop()
            self._later = None
        self._updated_at = time.monotonic()
        for sig, cells in self._pending.items():
            for column, cell, shown in zip(COLUMNS, cells, self._shown[sig], strict=True):
                if _looks(cell) != _looks(shown):
                    self.update_cell(sig, column[0], cell)
            self._shown[sig] = cells
        self._pending = {}

    def _cells(self, rank: int, f: Finding, clock: float, seen_at: dict[str, float]) -> tuple[Text, ...]:
        since = _age(clock - seen_at[f.signature]) if f.signature in seen_at else ""
        verdict = f.verdict
        return (
            Text(str(rank)),
            Text(STACKS, style="bold") if self.is_stall(f) else Text(""),
            Text(f"check: {verdict}", style=VERDICT_STYLE.get(verdict, ""))
            if verdict
            else Text(f.severity.label, style=SEVERITY_STYLE[f.severity]),
            Text(f.title, overflow="ellipsis", no_wrap=True),
            Text(", ".join(f.nodes), overflow="ellipsis", no_wrap=True),
            Text(str(f.count), justify="right"),
            Text(since, style="dim"),
        )

    def selected(self) -> Finding | None:
        if not self.findings or self.cursor_row < 0 or self.cursor_row >= len(self.findings):
            return None
        return self.findings[self.cursor_row]


def _looks(cell: Text) -> tuple[str, str, list[object]]:
    """What a cell shows (``Text`` equality leaves out the base style, the severity's colour)."""
    return cell.plain, str(cell.style), list(cell.spans)


def _age(seconds: float) -> str:
    seconds = max(seconds, 0)
    if seconds < 60:
        return f"{seconds:.0f}s"
    if seconds < 3600:
        return f"{seconds / 60:.0f}m"
    return f"{seconds / 3600:.1f}h"
