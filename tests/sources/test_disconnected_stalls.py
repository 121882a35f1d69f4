"""A disconnect is not an NCCL hang (trial 2026-12b §4 item 7): while a followed source is down (its
connection cut, retrying) after it had streamed, its units' stall clocks do not count that time; a stall
found on a node whose log was unreadable for part of its wait says so beside it; and a source that was read,
then stayed down to the end, is named among the warnings. Over the real test sshd, stopped mid-follow, with
the NCCL track's ``stuck_after`` cut to a few seconds."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest

from sparktui.core import catalogue as cat
from sparktui.core.analysis.analyzer import Analyzer
from sparktui.core.analysis.diagnosis import Diagnosis
from sparktui.core.analysis.stages import downtime
from sparktui.core.events import Finding
from sparktui.core.pipeline import Pipeline
from sparktui.core.remote.ssh import SshNode
from sparktui.core.sources.ssh import SshFileSource
from tests.servers.sshd import SshdCluster, children, command_line
from tests.waiting import wait_until

from ..conftest import FIXTURES

#: Cut at the second communicator's ``Init START``: a live follow that stops here is a stall in time.
LOG = FIXTURES / "nccl" / "two-hosts-second-group-not-joined" / "rank0.log"
#: The NCCL stall signatures (this log's is ``nccl-second-communicator-not-joined``).
STALLS = {s.id for s in cat.load().signatures if s.stall is not None and s.stall.track == "nccl"}
#: Seconds without progress that make the stall, in the test's catalogue.
WINDOW = 3.0


def short_catalogue() -> cat.Catalogue:
    """The built-in catalogue with every NCCL stage stuck after :data:`WINDOW` seconds."""
    found = cat.load()
    tracks = tuple(
        replace(t, stages=tuple(replace(s, stuck_after=WINDOW) for s in t.stages)) if t.id == "nccl" else t
        for t in found.tracks
    )
    return replace(found, tracks=tracks)


def stalls(diagnosis: Diagnosis | None) -> list[Finding]:
    return [f for f in diagnosis.findings if f.signature in STALLS] if diagnosis is not None else []


def said(finding: Finding) -> str:
    return f"{finding.title} {finding.explanation} {finding.detail}"


def test_downtime_counts_only_what_overlaps() -> None:
    assert downtime([(10.0, 20.0), (30.0, None)], 15.0, 40.0) == 15.0  # 5 s of the first, 10 of the open one
    assert downtime([(0.0, 5.0)], 15.0, 40.0) == 0.0


def test_the_stall_clock_stops_while_the_source_is_down() -> None:
    """Pure: the tracker is given the outages; a stall whose wait is mostly an outage is not named, and one
    named says how much of its wait the log was unreadable."""
    a = Analyzer(short_catalogue())
    a.add_source("rank0.log", "spark-a")
    for line in LOG.read_text().splitlines():
        a.feed("rank0.log", line, now=100.0)
    assert stalls(a.finish(now=110.0))  # 10 s, nothing down: a stall
    assert not stalls(a.finish(now=110.0, down={"rank0.log": [(101.0, None)]}))  # 1 s of it readable
    (found,) = stalls(a.finish(now=110.0, down={"rank0.log": [(101.0, 106.0)]}))  # 5 s of 10 readable
    assert "no progress for 10 s; spark-a's log was unreadable for 5 s of them" in said(found)


def follow(sshd_cluster: SshdCluster, path: Path) -> Pipeline:
    node = SshNode("node-a", config=[sshd_cluster.ssh_config], known_hosts=sshd_cluster.known_hosts, agent=False)
    return Pipeline(short_catalogue(), [SshFileSource(node, str(path))], show=False).start()


def read_all(pipeline: Pipeline, lines: int) -> None:
    deadline = time.monotonic() + 30
    while pipeline.lines < lines:
        assert time.monotonic() < deadline, "the log was not read"
        time.sleep(0.02)


def test_a_node_unreadable_to_the_end_is_no_hang(sshd_cluster: SshdCluster, tmp_path: Path) -> None:
    path = tmp_path / "rank0.log"
    path.write_text(LOG.read_text())
    sshd = sshd_cluster["node-a"]
    pipeline = follow(sshd_cluster, path)
    try:
        read_all(pipeline, len(LOG.read_text().splitlines()))
        sshd.stop()
        time.sleep(2 * WINDOW)  # twice the window, as the trial's 72 s of 75 were
    finally:
        pipeline.stop()
        diagnosis = pipeline.wait()
        if sshd.process is None:
            sshd.start()
    assert stalls(diagnosis) == []  # the time it could not be read is no evidence of a hang
    (source,) = diagnosis.sources
    assert source.error is not None and source.error.startswith(f"{source.name}: unreadable for the last ")
    assert "(disconnected, never back)" in source.error


def test_a_stall_says_how_long_its_log_was_unreadable(sshd_cluster: SshdCluster, tmp_path: Path) -> None:
    path = tmp_path / "rank0.log"
    path.write_text(LOG.read_text())
    sshd = sshd_cluster["node-a"]
    pipeline = follow(sshd_cluster, path)
    back = threading.Timer(WINDOW, sshd.start)
    found: list[Finding] = []
    try:
        read_all(pipeline, len(LOG.read_text().splitlines()))
        sshd.stop()
        back.start()
        for update in pipeline.updates():  # the log back, time without progress goes on counting
            found = stalls(update.diagnosis)
            if found or update.clock > 60:
                break
    finally:
        back.cancel()
        pipeline.stop()
        diagnosis = pipeline.wait()
        back.join()
        if sshd.process is None:
            sshd.start()
    assert found, "no stall once the log was back"
    text = said(found[0])
    assert "Stuck: no progress for " in text and "spark-a's log was unreadable for " in text, text
    assert all(s.error is None for s in diagnosis.sources)  # it came back: no warning


def test_diagnose_names_the_node_it_lost(
    sshd_cluster: SshdCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The trial's repro, shortened: ``diagnose --follow`` over SSH, sshd stopped once the log is read."""
    sshd_cluster.home_for(tmp_path / "home", monkeypatch)
    path = tmp_path / "rank0.log"
    path.write_text(LOG.read_text())
    command = [sys.executable, "-m", "sparktui", "diagnose", "--follow", "--for", "6s", "--json", "--no-spool"]
    run = subprocess.Popen([*command, f"ssh://node-a/{path}"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    sshd = sshd_cluster["node-a"]
    try:
        # the node's follower started (it sends the 55 lines at once), and a moment for them to come over
        follower = [str(path), "tail"]  # (sparktui's own command line names the path too)
        wait_until(lambda: any(all(w in command_line(p) for w in follower) for p in children(0)), 60, "the follower")
        time.sleep(1)
        sshd.stop()
        out, err = run.communicate(timeout=120)
    finally:
        if sshd.process is None:
            sshd.start()
    diagnosis = json.loads(out)
    (source,) = diagnosis["sources"]
    assert source["lines"] == len(LOG.read_text().splitlines()), err
    assert run.returncode == 2  # an input that could not be read to the end, as for one never read
    assert source["error"] in diagnosis["warnings"] and "unreadable for the last " in source["error"]
    assert os.fsdecode(err).count("unreadable for the last ") == 1
