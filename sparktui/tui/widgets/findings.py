"""The findings panel: ranked as `sparktui diagnose` ranks them."""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.widgets import DataTable

from sparktui.core.events import Finding
from sparktui.richtext import SEVERITY_STYLE

#: The table's columns: label (and key) and width.
COLUMNS = (("#", 3), ("severity", 10), ("finding", 64), ("nodes", 22), ("count", 6), ("since", 8))


class FindingsTable(DataTable[Text]):
    def __init__(self) -> None:
        super().__init__(id="findings", cursor_type="row", zebra_stripes=True)
        self.findings: Sequence[Finding] = ()
        self.border_title = "Findings"

    def on_mount(self) -> None:
        for label, width in COLUMNS:
            self.add_column(label, width=width, key=label)

    def show(self, findings: Sequence[Finding], clock: float, seen_at: dict[str, float]) -> None:
        """Show ``findings``: the same findings in the same order only have their cells updated (a flood of
        lines changes counts many times a second), others rebuild the table, keeping the selection."""
        rows = [self._cells(rank, f, clock, seen_at) for rank, f in enumerate(findings, 1)]
        if [f.signature for f in findings] == [f.signature for f in self.findings]:
            self.findings = findings
            for f, cells in zip(findings, rows, strict=True):
                for column, cell in zip(COLUMNS, cells, strict=True):
                    self.update_cell(f.signature, column[0], cell)
            return
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

    @staticmethod
    def _cells(rank: int, f: Finding, clock: float, seen_at: dict[str, float]) -> tuple[Text, ...]:
        since = _age(clock - seen_at[f.signature]) if f.signature in seen_at else ""
        return (
            Text(str(rank)),
            Text(f.severity.label, style=SEVERITY_STYLE[f.severity]),
            Text(f.title, overflow="ellipsis", no_wrap=True),
            Text(", ".join(f.nodes), overflow="ellipsis", no_wrap=True),
            Text(str(f.count), justify="right"),
            Text(since, style="dim"),
        )

    def selected(self) -> Finding | None:
        if not self.findings or self.cursor_row < 0 or self.cursor_row >= len(self.findings):
            return None
        return self.findings[self.cursor_row]


def _age(seconds: float) -> str:
    seconds = max(seconds, 0)
    if seconds < 60:
        return f"{seconds:.0f}s"
    if seconds < 3600:
        return f"{seconds / 60:.0f}m"
    return f"{seconds / 3600:.1f}h"
