"""The audit log: every command sparktui ran on a node, as the action runner records it for the report."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from sparktui.core.dirs import private_dir, private_file


@dataclass(frozen=True, slots=True)
class AuditEntry:
    """One command that ran: what, where, when, how it ended and what it printed.

    ``command``, ``node``, ``place``, ``playbook`` and ``step`` are those of the rendered
    :class:`sparktui.core.remote.runner.Command` that ran. ``exit_code`` is None when the command did not finish
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

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> AuditEntry:
        """The entry :meth:`as_dict` wrote; raises ValueError (or KeyError, TypeError) for anything else."""
        started = datetime.fromisoformat(str(d["started"]))
        if started.tzinfo is None:
            raise ValueError("started: no time zone")
        code, duration = d.get("exit_code"), d.get("duration_s")
        return cls(
            str(d["command"]),
            str(d["node"]),
            started,
            None if code is None else int(code),
            str(d.get("output", "")),
            None if duration is None else float(duration),
            str(d.get("place", "host")),
            str(d.get("playbook", "")),
            str(d.get("step", "")),
        )


@dataclass
class AuditLog:
    """Append-only JSON lines, one per command that ran, written to every one of ``paths`` (the user's
    audit log, and the incident's own when a session has one). Commands and their output carry host
    names and secrets: each file is 0600 and its folder 0700, as the spool's, whatever the umask."""

    paths: tuple[Path, ...]

    def add(self, entry: AuditEntry) -> None:
        line = json.dumps(entry.as_dict(), ensure_ascii=False) + "\n"
        for path in self.paths:
            os.close(private_dir(path.parent))
            with private_file(path) as fh:
                fh.write(line)


def read_log(path: Path) -> list[AuditEntry]:
    """The entries of an audit log; a missing file has none, and a line that is not an entry is skipped."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return []
    entries = []
    for line in text.splitlines():
        try:
            entries.append(AuditEntry.from_dict(json.loads(line)))
        except (ValueError, KeyError, TypeError, AttributeError):
            continue
    return entries
