"""What the pipeline's updates become on the cockpit's screen, as plain instructions (no Textual here, so
all of it is tested without starting an app).

:class:`Feed` runs on the cockpit's one worker thread: each :class:`~sparktui.core.outbox.Update` becomes
lines grouped per pane, a diagnosis when it looks different (or its counts are due), every source's state
at a glance, the sources' notes and the pipeline's failure. The app posts each as a message
(:mod:`sparktui.tui.messages`). The functions below read a diagnosis for the screen's side: the evidence
lines to mark, the tracks stalled per node, the nodes with findings out of view, the warnings not said yet.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from sparktui.core import catalogue as cat
from sparktui.core.analysis.diagnosis import Diagnosis
from sparktui.core.events import SourceNote, State, StateChange
from sparktui.core.outbox import Line, Tally, Update
from sparktui.tui.layers import layer_of
from sparktui.tui.tallies import Census

#: Seconds between two showings of counts and ages that changed (nothing else changing).
COUNTS_EVERY = 0.5


@dataclass(frozen=True, slots=True)
class Lines:
    """Lines for the panes, grouped by (node, layer), each group in the order its lines arrived;
    ``received_at`` is when the oldest came in (``time.perf_counter()``)."""

    panes: Mapping[tuple[str, str], list[Line]]
    count: int
    received_at: float


@dataclass(frozen=True, slots=True)
class Sources:
    """Every source's state, what each has handed over, all of them counted, each one's last error (kept
    after it recovered), the incident's clock, the lines not shown and whether the pipeline ended."""

    states: Mapping[str, StateChange]
    tallies: Mapping[str, Tally]
    census: Census
    errors: Mapping[str, str]
    clock: float
    dropped: int
    done: bool


@dataclass(frozen=True, slots=True)
class Note:
    """News from a source that does not change its state (lines lost to a rotation)."""

    note: SourceNote


@dataclass(frozen=True, slots=True)
class Broke:
    """The pipeline stopped, and why (one line)."""

    reason: str


#: One thing to show: a diagnosis stands for itself.
Instruction = Lines | Diagnosis | Sources | Note | Broke


class Feed:
    """The pipeline's updates as instructions, in the order to show them. It keeps what it last said of the
    diagnosis, so that a diagnosis whose only change is counts going up waits :data:`COUNTS_EVERY`, and each
    source's last error."""

    def __init__(self, now: Callable[[], float] = time.monotonic) -> None:
        self.now = now
        self.shown: tuple[object, ...] = ()
        self.posted: float | None = None
        self.errors: dict[str, str] = {}

    def read(self, update: Update) -> list[Instruction]:
        said: list[Instruction] = []
        for change in update.changes:
            if change.state in (State.FAILED, State.RETRYING) and change.detail:
                self.errors[change.source] = change.detail
        if update.lines:
            panes: dict[tuple[str, str], list[Line]] = {}
            for line in update.lines:
                panes.setdefault((line.node, layer_of(line.kind.program)), []).append(line)
            said.append(Lines(panes, len(update.lines), update.received_at))
        diagnosis = update.diagnosis
        if diagnosis is not None and self._due(diagnosis, update.done):
            said.append(diagnosis)
        census = Census.of(update.states, update.tallies)
        errors = dict(self.errors)  # a copy: the one shown may wait in the queue while the next is made
        said.append(Sources(update.states, update.tallies, census, errors, update.clock, update.dropped, update.done))
        said += [Note(note) for note in update.notes]
        if update.error:
            said.append(Broke(update.error))
        return said

    def _due(self, diagnosis: Diagnosis, done: bool) -> bool:
        """A new or changed finding, or new stages (a node's or a rank's), are shown at once; only counts
        going up wait."""
        findings = tuple((f.signature, f.severity, f.nodes) for f in diagnosis.findings)
        looks = (findings, diagnosis.stages, diagnosis.progress, diagnosis.warnings, diagnosis.serving)
        now = self.now()
        if looks != self.shown or done or self.posted is None or now - self.posted >= COUNTS_EVERY:
            self.shown, self.posted = looks, now
            return True
        return False


def marks(diagnosis: Diagnosis) -> frozenset[tuple[str, int]]:
    """The evidence lines of every finding, as (source, line number)."""
    return frozenset((e.source, e.line) for f in diagnosis.findings for e in f.evidence)


def stalled(diagnosis: Diagnosis, signature: Callable[[str], cat.Signature | None]) -> dict[str, set[str]]:
    """Per node, the stage tracks a stall finding says stopped there (its first evidence line is where the
    stalled unit stopped)."""
    found: dict[str, set[str]] = {}
    for f in diagnosis.findings:
        sig = signature(f.signature)
        if sig is not None and sig.stall is not None and f.evidence:
            found.setdefault(f.evidence[0].node, set()).add(sig.stall.track)
    return found


def away(diagnosis: Diagnosis | None, shown: Sequence[str]) -> list[str]:
    """The nodes with a finding whose columns are not in view, by name."""
    if diagnosis is None:
        return []
    return sorted({n for f in diagnosis.findings for n in f.nodes} - set(shown))


class Warnings:
    """The diagnosis' warnings not said yet (a signature left out, a pattern disabled: each said once). A
    stopped spool says how many bytes it lost, a count that grows: it is said once too."""

    def __init__(self) -> None:
        self.said: set[str] = set()

    def new(self, warnings: Iterable[str]) -> list[tuple[str, str]]:
        """(title, warning) for each one not said before."""
        fresh = []
        for warning in warnings:
            spool = warning.startswith("spool stopped: ")
            key = warning.partition("; ")[0] if spool else warning
            if key not in self.said:
                self.said.add(key)
                fresh.append(("spool" if spool else "not used", warning))
        return fresh
