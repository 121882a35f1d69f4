"""When each finding of a live session was first made, on the wall clock: noted from every diagnosis as it
comes, written into the findings (``detected_at``) of the one shown at the end. Pure but for the clock."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime

from sparktui.core.analysis.diagnosis import Diagnosis


def _now() -> datetime:
    return datetime.now(UTC)


@dataclass
class Stamps:
    clock: Callable[[], datetime] = _now
    first: dict[str, str] = field(default_factory=dict)  # signature -> when first made

    def see(self, diagnosis: Diagnosis) -> None:
        when = ""
        for f in diagnosis.findings:
            if f.signature not in self.first:
                when = when or self.clock().isoformat(timespec="milliseconds")
                self.first[f.signature] = f.detected_at or when

    def stamp(self, diagnosis: Diagnosis) -> Diagnosis:
        """``diagnosis`` with each finding's ``detected_at`` (its own where it has one, as a live one does)."""
        self.see(diagnosis)
        findings = tuple(
            f if f.detected_at else replace(f, detected_at=self.first[f.signature]) for f in diagnosis.findings
        )
        return replace(diagnosis, findings=findings)
