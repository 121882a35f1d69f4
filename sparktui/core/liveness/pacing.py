"""When the live watch reads every rank's stack: a rule over the time the logs went quiet, the last reading
and what it said. Pure: the times are given (seconds on one monotonic clock).

* Every log quiet for ``quiet_seconds``, and no reading yet in this quiet spell: read. A GPU wedged: read,
  and again every ``quiet_seconds`` while it stays so, whatever the logs do.
* A hang named: read again every ``quiet_seconds``, logs or not, until a reading shows no hang.
* The last reading said progressing or loading: read again ``quiet_seconds`` after it while the logs stay
  quiet (a loading rank that then hangs is caught).
* A rank the watch had seen ended while others of its job still run, or a job was first found with fewer ranks
  than its world size: read now (a rank that died or left while its peers wait on it need not wait for the logs
  to go quiet).
* The last reading said idle (or found no rank, or could read none) and no line came since: read again only after
  ``idle_seconds`` (an idle server is not read every few seconds).
"""

from __future__ import annotations

from dataclasses import dataclass

from sparktui.core.settings import LivenessSettings


@dataclass
class Pacer:
    settings: LivenessSettings
    started: float
    last_line: float | None = None  # when the logs last grew
    read_at: float | None = None  # when the last reading began
    state: str = ""  # what it said
    lines_since: bool = False  # lines came after it began
    wedged: bool = False  # a GPU sits at high utilisation on low power
    vanished: bool = False  # a rank seen before ended while others of its job run on, or a job was first short

    def lines(self, now: float) -> None:
        self.last_line = now
        self.lines_since = True

    def read(self, now: float, state: str) -> None:
        """A reading that began at ``now`` said ``state``."""
        self.read_at, self.state, self.lines_since, self.vanished = now, state, False, False

    def quiet(self, now: float) -> float:
        """Seconds every log has been quiet (since the start, when none has said anything)."""
        return now - (self.last_line if self.last_line is not None else self.started)

    def due(self, now: float) -> str:
        """Why a reading is due now ("quiet", "wedged", "hang", "vanished", "again", "idle"), or "" when none is."""
        s = self.settings
        since = None if self.read_at is None else now - self.read_at
        if self.vanished and self.state != "hang":
            return "vanished"
        if self.state == "hang":
            return "hang" if since is None or since >= s.quiet_seconds else ""
        if self.quiet(now) < s.quiet_seconds and not self.wedged:
            return ""
        if since is None:
            return "wedged" if self.wedged else "quiet"
        if self.state in ("idle", "none", "unread") and not self.lines_since:
            return "idle" if since >= s.idle_seconds else ""
        if self.wedged:  # the logs may move meanwhile: read again every quiet_seconds while it lasts
            return "wedged" if since >= s.quiet_seconds else ""
        quiet_began = now - self.quiet(now)
        if self.read_at is not None and self.read_at < quiet_began:
            return "wedged" if self.wedged else "quiet"  # a new quiet spell
        return "again" if since >= s.quiet_seconds else ""
