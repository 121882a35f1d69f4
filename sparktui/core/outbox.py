"""What waits for a front end between two of its frames: the pipeline's side of the hand-over to a user
interface (or to ``sparktui diagnose``), coalesced.

The pipeline's thread puts lines, tallies, states and diagnoses into one :class:`Outbox`; the front end's
thread takes them out as one :class:`Update` per frame. Lines a slow front end never takes are dropped from
view beyond :data:`MAX_PENDING_LINES` (and counted), never from the analysis.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

from sparktui.core.analysis.diagnosis import Diagnosis
from sparktui.core.classify import Classification
from sparktui.core.events import SourceNote, StateChange
from sparktui.core.sources.base import Extent

#: State changes kept for a front end that does not take them (the latest state of each source is always kept).
MAX_CHANGES = 1000
#: Lines kept for a front end that does not take them; beyond it the oldest are dropped from view (and
#: counted), never from the analysis.
MAX_PENDING_LINES = 100_000


@dataclass(frozen=True, slots=True)
class Line:
    """A line as a front end shows it: its source, its number there, its node, the text made inert, and
    what the classifier says of it."""

    source: str
    number: int
    node: str
    text: str
    kind: Classification


@dataclass(frozen=True, slots=True)
class Tally:
    """What one source has handed over so far: its node and kind, its lines and the bytes of their text,
    and how much of the source that is, where it knows (a file: bytes read of its size)."""

    node: str
    kind: str
    lines: int = 0
    bytes: int = 0
    extent: Extent | None = None


@dataclass(frozen=True, slots=True)
class Update:
    """What changed since the previous update."""

    lines: tuple[Line, ...] = ()
    diagnosis: Diagnosis | None = None  # a new one, when it changed
    states: Mapping[str, StateChange] = field(default_factory=dict)  # every source's latest state
    tallies: Mapping[str, Tally] = field(default_factory=dict)  # what every source has handed over
    changes: tuple[StateChange, ...] = ()  # every state change since the previous update, in order
    notes: tuple[SourceNote, ...] = ()  # every source's note since the previous update, in order
    clock: float = 0.0  # seconds since the start (the incident's time, for a replay)
    read: int = 0  # lines received so far, from every source
    dropped: int = 0  # lines a slow front end was never shown (the analysis saw them all)
    received_at: float = 0.0  # time.perf_counter() when the oldest of ``lines`` arrived
    done: bool = False  # the last update: every source ended, or the pipeline was stopped
    error: str = ""  # why the pipeline stopped, when it broke


class Outbox:
    """What waits for the front end, coalesced: lines in order, the latest diagnosis, the latest states and
    tallies. Written on the pipeline's thread, read on the front end's."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._lines: list[Line] = []
        self._received_at = 0.0
        self._dropped = 0
        self._diagnosis: Diagnosis | None = None
        self._states: dict[str, StateChange] = {}
        self._tallies: dict[str, Tally] = {}
        self._changes: list[StateChange] = []
        self._notes: list[SourceNote] = []
        self._changed = False
        self._done = False
        self._error = ""

    def states(self) -> dict[str, StateChange]:
        """Every source's latest state (a copy)."""
        with self._cond:
            return dict(self._states)

    def add_lines(self, lines: list[Line], source: str, tally: Tally) -> None:
        with self._cond:
            if not self._lines:
                self._received_at = time.perf_counter()
            self._tallies[source] = tally
            self._lines += lines
            excess = len(self._lines) - MAX_PENDING_LINES
            if excess > 0:
                del self._lines[:excess]
                self._dropped += excess
            self._changed = True
            self._cond.notify()

    def set(
        self,
        *,
        diagnosis: Diagnosis | None = None,
        state: StateChange | None = None,
        tally: tuple[str, Tally] | None = None,
        note: SourceNote | None = None,
    ) -> None:
        """Put in what is new: a diagnosis, a source's state change, a source's tally, a source's note."""
        with self._cond:
            if diagnosis is not None:
                self._diagnosis = diagnosis
            if tally is not None:
                self._tallies[tally[0]] = tally[1]
            if state is not None:
                self._states[state.source] = state
                self._changes = [*self._changes[-(MAX_CHANGES - 1) :], state]
            if note is not None:
                self._notes = [*self._notes[-(MAX_CHANGES - 1) :], note]
            self._changed = True
            self._cond.notify()

    def wake(self) -> None:
        """Have the front end take an update although nothing here changed (more lines were read elsewhere)."""
        with self._cond:
            self._changed = True
            self._cond.notify()

    def finish(self, diagnosis: Diagnosis | None, error: str = "") -> None:
        with self._cond:
            if diagnosis is not None:
                self._diagnosis = diagnosis
            self._done, self._error, self._changed = True, error, True
            self._cond.notify()

    def wait(self) -> bool:
        """Block until something changed; whether a new diagnosis is among it (it goes out at once)."""
        with self._cond:
            while not self._changed:
                self._cond.wait()
            return self._diagnosis is not None

    def take(self, *, clock: float, read: int) -> Update:
        """Everything waiting, as one update (``clock`` and ``read`` are the pipeline's, at this moment)."""
        with self._cond:
            lines, self._lines = self._lines, []
            changes, self._changes = self._changes, []
            notes, self._notes = self._notes, []
            update = Update(
                lines=tuple(lines),
                diagnosis=self._diagnosis,
                states=dict(self._states),
                tallies=dict(self._tallies),
                changes=tuple(changes),
                notes=tuple(notes),
                clock=clock,
                read=read,
                dropped=self._dropped,
                received_at=self._received_at,
                done=self._done,
                error=self._error,
            )
            self._diagnosis, self._changed = None, False
            return update
