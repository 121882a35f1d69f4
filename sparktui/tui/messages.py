"""What the cockpit's one pipeline worker posts to the app: small messages, each for the handlers that own
the widgets it changes. The worker never touches a widget."""

from __future__ import annotations

from collections.abc import Mapping

from textual.message import Message

from sparktui.core.analysis.diagnosis import Diagnosis
from sparktui.core.events import SourceNote, StateChange
from sparktui.core.pipeline import Line, Tally
from sparktui.tui import feed
from sparktui.tui.tallies import Census


class LinesArrived(Message, bubble=False):
    """Lines for the panes, grouped by (node, layer) by the worker, each group in the order its lines
    arrived; ``received_at`` is when the oldest came in (``time.perf_counter()``, for measuring how long a
    line takes to reach the screen)."""

    def __init__(self, panes: Mapping[tuple[str, str], list[Line]], count: int, received_at: float) -> None:
        super().__init__()
        self.panes, self.count, self.received_at = panes, count, received_at


class DiagnosisChanged(Message, bubble=False):
    """A new diagnosis: the findings table, the evidence marks and the stage strips follow it."""

    def __init__(self, diagnosis: Diagnosis) -> None:
        super().__init__()
        self.diagnosis = diagnosis


class SourcesChanged(Message, bubble=False):
    """Every source's state, what each has handed over, all of them counted, and each one's last error (kept
    after it recovered), the incident's clock and lines read: only the newest one matters, so one still
    waiting in the queue is replaced by the next."""

    def __init__(
        self,
        states: Mapping[str, StateChange],
        tallies: Mapping[str, Tally],
        census: Census,
        errors: Mapping[str, str],
        clock: float,
        dropped: int,
        done: bool,
    ) -> None:
        super().__init__()
        self.states, self.tallies, self.census, self.errors = states, tallies, census, errors
        self.clock, self.dropped, self.done = clock, dropped, done

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, SourcesChanged) and not message.done


class SourceNoted(Message, bubble=False):
    """News from a source that does not change its state (lines lost to a rotation): each one is said."""

    def __init__(self, note: SourceNote) -> None:
        super().__init__()
        self.note = note


class PipelineFailed(Message, bubble=False):
    """The pipeline broke; the reason, in one line."""

    def __init__(self, reason: str) -> None:
        super().__init__()
        self.reason = reason


def of(said: feed.Instruction) -> Message:
    """The message that carries one of the feed's instructions to its handler."""
    match said:
        case feed.Lines():
            return LinesArrived(said.panes, said.count, said.received_at)
        case feed.Sources():
            s = said
            return SourcesChanged(s.states, s.tallies, s.census, s.errors, s.clock, s.dropped, s.done)
        case feed.Note():
            return SourceNoted(said.note)
        case feed.Broke():
            return PipelineFailed(said.reason)
        case _:
            return DiagnosisChanged(said)
