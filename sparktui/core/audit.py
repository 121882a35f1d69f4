"""The audit log: every command sparktui ran on a node, as the action runner records it for the report."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any


@dataclass(frozen=True, slots=True)
class AuditEntry:
    """One command that ran: what, where, when, how it ended and what it printed.

    ``command``, ``node``, ``place``, ``playbook`` and ``step`` are those of the rendered
    :class:`sparktui.core.playbooks.Command` that ran. ``exit_code`` is None when the command did not finish
    (timed out, cancelled, connection lost). ``started`` is timezone-aware.
    """

    command: str
    node: str  # a node name, or "local" for the machine running sparktui
    started: datetime
    exit_code: int | None
    output: str = ""  # standard output and error as captured, interleaved
    duration_s: float | None = None
    place: str = "host"  # "host" or "container"
    playbook: str = ""
    step: str = ""

    @property
    def outcome(self) -> str:
        if self.exit_code is None:
            return "did not finish"
        return "ok" if self.exit_code == 0 else f"exit {self.exit_code}"

    def as_dict(self) -> dict[str, Any]:
        return {
            "command": self.command,
            "node": self.node,
            "place": self.place,
            "playbook": self.playbook,
            "step": self.step,
            "started": self.started.isoformat(),
            "duration_s": self.duration_s,
            "exit_code": self.exit_code,
            "output": self.output,
        }
