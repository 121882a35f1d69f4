"""A capture of the stacks folded into what the logs told (pure): the stall finding's "now" part names the odd
rank and what it does, the rank x stage grid gets a "now" column, and the export carries the capture (in the
reports, the bundle's stacks.json, redacted as the rest) back into a replay. The capture is made of the real
dumps of tests/fixtures/stacks/gloo/second-group, the logs are the real two-host NCCL hang."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest

from sparktui.cli import main
from sparktui.core import catalogue as cat
from sparktui.core import settings
from sparktui.core.analysis.diagnosis import Diagnosis
from sparktui.core.liveness.verdict import builtin_words
from sparktui.core.pipeline import diagnose_files
from sparktui.core.report.export import export
from sparktui.core.report.fold import APART, NOW, fold, fold_finding, fold_grid, is_critical_stall, is_stall
from sparktui.core.report.incident import Incident
from sparktui.core.sources import bundle
from sparktui.core.sources.files import FileSource
from sparktui.core.stacks import snapshot
from sparktui.core.stacks.compare import compare
from sparktui.core.stacks.kinds import builtin_kinds
from sparktui.core.stacks.snapshot import Snapshot, SnapshotError

from ..conftest import FIXTURES
from .test_read import FIXTURES as STACKS
from .test_read import ranks_of

HANG = FIXTURES / "nccl" / "two-hosts-second-group-not-joined"
STALL = "nccl-second-communicator-not-joined"
TAKEN = datetime(2026, 12, 4, 5, 0, 7, tzinfo=UTC)


def scenario_line() -> int:
    """The line of serve_requests' sleep in the captured dumps (the scenario as it was when captured)."""
    text = (STACKS / "gloo" / "second-group" / "rank1.txt").read_text()
    return int(text.split("serve_requests (scenario.py:")[1].split(")")[0])


@pytest.fixture(scope="module")
def diagnosis(catalogue: cat.Catalogue) -> Diagnosis:
    logs = [FileSource(HANG / f"rank{r}.log", f"spark-{'ab'[r]}/nccl.log", f"spark-{'ab'[r]}") for r in (0, 1)]
    return diagnose_files(logs, catalogue)


def capture(findings: tuple[str, ...] = (STALL,)) -> Snapshot:
    """The hung gloo job's ranks as if on the two nodes: rank 0 on spark-a, rank 1 on spark-b."""
    found = ranks_of(STACKS / "gloo" / "second-group", 2)
    ranks = [replace(r, node=f"spark-{'ab'[i]}") for i, r in enumerate(found)]
    return snapshot.of(compare(ranks, builtin_kinds()), [], "the nodes", findings=findings, taken=TAKEN)


def odd_sentence() -> str:
    return (
        f"rank 1 on spark-b is idle in application code, in serve_requests (scenario.py:{scenario_line()}) and never "
        "entered new_group, which rank 0 waits in"
    )


def test_the_stall_finding_names_the_odd_rank_now(diagnosis: Diagnosis, catalogue: cat.Catalogue) -> None:
    stall = next(f for f in diagnosis.findings if f.signature == STALL)
    assert is_stall(stall, catalogue.get(STALL)) and is_critical_stall(stall, catalogue.get(STALL))
    folded = next(f for f in fold(diagnosis, capture()).findings if f.signature == STALL)
    assert folded.detail.startswith(stall.detail)
    now = folded.detail[len(stall.detail) :]
    assert now.startswith(
        "\n\nNow (every rank's stack, read by py-spy at 05:00:07 UTC):\n- job 127.0.0.1:29710: HANG: "
    )
    assert odd_sentence() in now


def test_a_capture_taken_for_no_finding_leaves_the_findings(diagnosis: Diagnosis) -> None:
    assert fold(diagnosis, capture(())).findings == diagnosis.findings
    assert fold(diagnosis, None) is diagnosis


def test_the_grid_has_a_now_column_per_rank(diagnosis: Diagnosis) -> None:
    (grid,) = diagnosis.progress
    folded = fold_grid(grid, capture())
    assert folded.columns == (*grid.columns, NOW)
    cells = {row.who: row.cells[-1] for row in folded.rows}
    assert (cells["rank 0"].short, cells["rank 0"].behind) == ("new_group", False)
    assert (cells["rank 1"].short, cells["rank 1"].behind) == ("serve_requests", True)
    assert cells["rank 1"].label.startswith("rank 1: idle in application code: serve_requests (scenario.py:")
    assert fold_grid(folded, capture()) is folded  # folded once
    elsewhere = snapshot.of([], [], "here", taken=TAKEN)
    assert fold_grid(grid, elsewhere) is grid  # no rank of the grid in it: unchanged


def test_a_snapshot_reads_back_as_written(tmp_path: Path) -> None:
    taken = capture()
    assert snapshot.read(tmp_path) is None
    taken.write(tmp_path)
    assert snapshot.read(tmp_path) == taken
    assert taken.verdict == "hang" and taken.headline() == odd_sentence()
    (tmp_path / snapshot.FILE).write_text('{"version": 1, "taken": "yesterday"}')
    with pytest.raises(
        SnapshotError, match=r"stacks\.json: not a capture of the stacks \(KeyError: 'groups'\)|Invalid"
    ):
        snapshot.read(tmp_path)
    (tmp_path / snapshot.FILE).write_text("{")
    with pytest.raises(SnapshotError, match="not JSON"):
        snapshot.read(tmp_path)


def test_the_export_carries_it_redacted_into_a_replay(diagnosis: Diagnosis, tmp_path: Path) -> None:
    logs = tuple(FileSource(HANG / f"rank{r}.log", f"spark-{'ab'[r]}/nccl.log", f"spark-{'ab'[r]}") for r in (0, 1))
    incident = Incident(diagnosis, logs=logs, stacks=capture())
    export(incident, tmp_path / "plain")
    report = (tmp_path / "plain" / "report.md").read_text()
    assert "## Where each rank is" in report and "**hang**" in report
    assert "| **rank 1** | `spark-b` |" in report and odd_sentence() in report
    assert "| now |" in report  # the grid's column
    assert "Where each rank is" in (tmp_path / "plain" / "report.html").read_text()
    data = json.loads((tmp_path / "plain" / "report.json").read_text())
    assert data["stacks"]["verdict"] == "hang"
    assert odd_sentence() in next(f["detail"] for f in data["findings"] if f["signature"] == STALL)
    replayed = Incident.of_bundle(bundle.load(tmp_path / "plain" / "bundle"), diagnosis)
    assert replayed.stacks == capture()

    export(incident, tmp_path / "anonymous", anonymise_hosts=True, hosts=["spark-a", "spark-b"])
    kept = (tmp_path / "anonymous" / "bundle" / snapshot.FILE).read_text()
    assert "spark-b" not in kept and "spark-a" not in kept
    again = snapshot.read(tmp_path / "anonymous" / "bundle")
    b = bundle.load(tmp_path / "anonymous" / "bundle").sources[1].node  # spark-b's name in the whole export
    assert again is not None and b != "spark-b"
    assert again.groups[0].ranks[1].node == b and again.groups[0].findings[0].startswith(f"rank 1 on {b} is idle")


def test_the_stacks_settings(tmp_path: Path) -> None:
    path = tmp_path / "settings.toml"
    assert settings.load().stacks == settings.StacksSettings()  # no settings file: off
    path.write_text('[stacks]\ncapture_on_critical_stall = true\npy_spy = "/opt/py-spy"\n')
    assert settings.load(path).stacks == settings.StacksSettings(True, "/opt/py-spy")
    path.write_text('[stacks]\ncapture_on_critical_stall = "yes"\n')
    with pytest.raises(settings.SettingsError, match=r"stacks\.capture_on_critical_stall: must be true or false"):
        settings.load(path)
    path.write_text("[stacks]\ncapture = true\n")
    with pytest.raises(settings.SettingsError, match="capture"):
        settings.load(path)


def test_diagnose_on_an_exported_bundle_folds_its_capture_in(
    diagnosis: Diagnosis, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`sparktui diagnose BUNDLE` shows the bundle's capture in the stall finding and the grid, as the replay
    and the export do (and a capture that cannot be read is said, in one line, and left out)."""
    logs = tuple(FileSource(HANG / f"rank{r}.log", f"spark-{'ab'[r]}/nccl.log", f"spark-{'ab'[r]}") for r in (0, 1))
    export(Incident(diagnosis, logs=logs, stacks=capture()), tmp_path / "report")
    exported = tmp_path / "report" / "bundle"
    assert main(["diagnose", "--quiet", "--json", str(exported)]) == 1
    data = json.loads(capsys.readouterr().out)
    detail = next(f["detail"] for f in data["findings"] if f["signature"] == STALL)
    assert detail.count("Now (every rank's stack, read by py-spy at 05:00:07 UTC)") == 1 and odd_sentence() in detail
    assert [g["columns"][-1] for g in data["progress"]] == [NOW]

    assert main(["diagnose", "--quiet", "--report", str(tmp_path / "again"), str(exported)]) == 1
    capsys.readouterr()
    again = json.loads((tmp_path / "again" / "report.json").read_text())
    assert next(f["detail"] for f in again["findings"] if f["signature"] == STALL) == detail  # folded once

    (exported / snapshot.FILE).write_text("{")
    assert main(["diagnose", "--quiet", "--json", str(exported)]) == 1
    shown = capsys.readouterr()
    assert "Now (every rank's stack" not in shown.out
    (line,) = shown.err.splitlines()
    assert line.startswith("sparktui: the bundle's capture of the stacks is left out: ") and "not JSON" in line


def test_diagnose_on_a_bundle_without_a_stall_reports_its_capture(
    catalogue: cat.Catalogue, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A capture taken with no stall finding (trial 2026-12c, W5: `W` on a log that named nothing, then `x`):
    `sparktui diagnose BUNDLE` says it in a section of its own, in text, Markdown and JSON, and the hang it
    saw is a critical finding (rule L1), as the live watch made it, not "no findings" above a HANG."""
    healthy = FIXTURES / "nccl" / "single-host-healthy"
    logs = tuple(FileSource(healthy / f"rank{r}.log", f"rank{r}.log", f"spark-{'ab'[r]}") for r in (0, 1))
    found = diagnose_files(logs, catalogue)
    assert not found.findings
    export(Incident(found, logs=logs, stacks=capture(())), tmp_path / "report")
    exported = str(tmp_path / "report" / "bundle")

    assert main(["diagnose", "--quiet", exported]) == 1
    text = capsys.readouterr().out
    assert "1 finding (1 critical)" in text and "no findings" not in text
    assert "why: L1 first: read from every rank's stack while it was hung" in text
    said = "Where each rank was: every rank's stack read by py-spy at 2026-12-04 05:00:07 UTC on the nodes: HANG"
    assert said in text
    assert "job 127.0.0.1:29710: HANG" in text and odd_sentence() in text

    assert main(["diagnose", "--quiet", "--json", exported]) == 1
    data = json.loads(capsys.readouterr().out)
    (hang,) = data["findings"]
    assert (
        hang["signature"] == builtin_words().id
        and hang["severity"] == "critical"
        and data["stacks"]["verdict"] == "hang"
    )
    assert hang["title"] == odd_sentence() and [b["rule"] for b in hang["because"]] == ["L1"]
    assert hang["facts"]["job"] == "127.0.0.1:29710"
    assert data["stacks"]["groups"][0]["findings"][0] == odd_sentence()

    assert main(["diagnose", "--quiet", "--format", "md", exported]) == 1
    assert "## Where each rank is" in capsys.readouterr().out

    calm = replace(capture(()), groups=())  # a capture that found nothing hung: no exit 1 of its own
    export(Incident(found, logs=logs, stacks=calm), tmp_path / "calm")
    assert main(["diagnose", "--quiet", str(tmp_path / "calm" / "bundle")]) == 0
    assert "Where each rank was" in capsys.readouterr().out


def test_only_the_finding_s_nodes_or_job_are_folded_in(diagnosis: Diagnosis) -> None:
    """A group is the finding's by a node it names (or that node's host name, domain aside) or by its job's
    store address among its facts; any other is said apart."""
    stall = next(f for f in diagnosis.findings if f.signature == STALL)
    found = ranks_of(STACKS / "gloo" / "second-group", 2)
    here = [replace(r, node="local") for r in found]

    def on(host: str) -> Snapshot:
        groups = compare(here, builtin_kinds())
        return snapshot.of(groups, [], "this machine", findings=(STALL,), taken=TAKEN, hosts={"local": host})

    folded = fold_finding(stall, on("SPARK-A.lab"))
    assert "- job 127.0.0.1:29710: HANG: rank 1 on local is idle" in folded.detail and APART not in folded.detail
    apart = fold_finding(stall, on("vm")).detail
    assert "no rank process of this finding's nodes (spark-a, spark-b) or job was found." in apart
    assert apart.split(APART)[1].startswith("\n- job 127.0.0.1:29710 on local (vm): HANG: rank 1 on local is idle")
    by_job = replace(stall, facts={**stall.facts, "master": "tcp://127.0.0.1:29710"})
    assert APART not in fold_finding(by_job, on("vm")).detail
    other_port = replace(stall, facts={**stall.facts, "master": "127.0.0.1:297101"})
    assert APART in fold_finding(other_port, on("vm")).detail
