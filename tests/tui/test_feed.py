"""The feed's translation of the pipeline's updates into what the cockpit shows, without an app: the real
two-host hang read through the core, its lines and diagnosis handed over as the pipeline's updates are."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace

from sparktui.core.catalogue import Catalogue
from sparktui.core.classify import classify
from sparktui.core.events import SourceNote, State, StateChange
from sparktui.core.outbox import Line, Update
from sparktui.core.pipeline import diagnose_files
from sparktui.core.sources.files import FileSource
from sparktui.tui import feed
from sparktui.tui.feed import COUNTS_EVERY, Feed, Warnings

from .conftest import HANG


def hang_lines() -> list[Line]:
    lines = []
    for rank, node in ((0, "spark-a"), (1, "spark-b")):
        name = f"rank{rank}.log"
        for number, text in enumerate((HANG / name).read_text().splitlines(), 1):
            lines.append(Line(name, number, node, text, classify(text)))
    return lines


def hang_files() -> list[FileSource]:
    return [FileSource(HANG / f"rank{r}.log", f"rank{r}.log", node) for r, node in ((0, "spark-a"), (1, "spark-b"))]


class Clock:
    """The feed's clock, moved by hand."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_lines_are_grouped_by_node_and_layer_in_their_order() -> None:
    lines = hang_lines()
    said = Feed().read(Update(lines=tuple(lines), received_at=5.0))
    (panes, sources) = said
    assert isinstance(panes, feed.Lines) and isinstance(sources, feed.Sources)
    assert panes.count == len(lines) and panes.received_at == 5.0
    assert {node for node, _ in panes.panes} == {"spark-a", "spark-b"}
    assert ("spark-a", "nccl") in panes.panes
    assert sum(len(group) for group in panes.panes.values()) == len(lines)
    for group in panes.panes.values():
        numbers = [(line.source, line.number) for line in group]
        assert numbers == sorted(numbers)


def test_a_diagnosis_is_shown_when_it_changed_and_its_counts_only_when_due(catalogue: Catalogue) -> None:
    diagnosis = diagnose_files(hang_files(), catalogue)
    assert diagnosis.findings
    clock = Clock()
    translator = Feed(clock)
    assert diagnosis in translator.read(Update(diagnosis=diagnosis))
    counted = replace(diagnosis, findings=tuple(replace(f, count=f.count + 1) for f in diagnosis.findings))
    assert counted not in translator.read(Update(diagnosis=counted))  # counts only: they wait
    clock.now += COUNTS_EVERY
    assert counted in translator.read(Update(diagnosis=counted))
    assert counted in translator.read(Update(diagnosis=counted, done=True))  # the last one always
    fewer = replace(diagnosis, findings=diagnosis.findings[1:])
    assert fewer in translator.read(Update(diagnosis=fewer))  # a finding gone: at once


def test_errors_are_kept_after_recovery_notes_are_said_and_a_failure_last() -> None:
    translator = Feed()
    failed = StateChange("rank0.log", State.FAILED, "connection refused")
    note = SourceNote("rank0.log", "rotated: 12 lines lost")
    first = translator.read(Update(changes=(failed,), notes=(note,), states={"rank0.log": failed}, error="broke"))
    sources, said, broke = first
    assert isinstance(sources, feed.Sources) and sources.errors == {"rank0.log": "connection refused"}
    assert sources.census.count(State.FAILED) == 1
    assert said == feed.Note(note) and broke == feed.Broke("broke")
    back = StateChange("rank0.log", State.STREAMING)
    (later,) = translator.read(Update(changes=(back,), states={"rank0.log": back}, clock=3.0, dropped=7))
    assert isinstance(later, feed.Sources)
    assert later.errors == {"rank0.log": "connection refused"} and later.clock == 3.0 and later.dropped == 7
    assert sources.errors is not later.errors  # the one posted first is not changed by the next


def test_marks_stalls_and_nodes_away(catalogue: Catalogue) -> None:
    diagnosis = diagnose_files(hang_files(), catalogue)
    marked = feed.marks(diagnosis)
    assert marked and {source for source, _ in marked} <= {"rank0.log", "rank1.log"}
    stalls = feed.stalled(diagnosis, catalogue.get)
    stall_ids = {f.signature for f in diagnosis.findings if catalogue.get(f.signature).stall is not None}
    assert bool(stalls) == bool(stall_ids)
    assert feed.away(diagnosis, ["spark-a", "spark-b"]) == []
    assert feed.away(diagnosis, []) == ["spark-a", "spark-b"]
    assert feed.away(None, []) == []


def test_warnings_are_said_once_and_a_spool_once_whatever_it_lost() -> None:
    warnings = Warnings()
    said = warnings.new(["x.toml: left out", "spool stopped: disk full; 10 bytes lost"])
    assert said == [("not used", "x.toml: left out"), ("spool", "spool stopped: disk full; 10 bytes lost")]
    assert warnings.new(["x.toml: left out", "spool stopped: disk full; 99 bytes lost"]) == []


def test_the_feed_loads_without_textual() -> None:
    probe = "import sys, sparktui.tui.feed; print(sorted(m for m in ('textual', 'rich') if m in sys.modules))"
    assert subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout == "[]\n"
