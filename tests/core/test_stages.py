"""Stage tracking: how far each unit got, stalls after the fact and on a live clock."""

from __future__ import annotations

from sparktui.core.analysis.analyzer import Analyzer
from sparktui.core.catalogue import Catalogue

START = (
    "spark-a:2201:2201 [0] NCCL INFO ncclCommInitRank comm 0x5581f0c0 rank 0 nranks 2 cudaDev 0 nvmlDev 0 "
    "busId 1000 commId 0x9a1e2c3d4b5a6978 - Init START"
)
COMPLETE = START.replace("Init START", "Init COMPLETE")


def test_stopped_at_in_a_finished_log(catalogue: Catalogue) -> None:
    a = Analyzer(catalogue)
    a.add_source("rank0.log", "rank0")
    a.feed("rank0.log", START)
    d = a.finish()
    assert [f.signature for f in d.findings] == ["nccl-communicator-init-stalled"]
    assert d.stages["spark-a"]["nccl"].startswith("0 of 1 communicators ready")


def test_live_stall_needs_time_without_progress(catalogue: Catalogue) -> None:
    a = Analyzer(catalogue)
    a.add_source("rank0.log", "rank0")
    a.feed("rank0.log", START, now=1000.0)
    assert list(a.finish(now=1059.0).findings) == []  # the stage's stuck_after (60 s) has not passed
    stalled = a.finish(now=1061.0).findings
    assert [f.signature for f in stalled] == ["nccl-communicator-init-stalled"]
    a.feed("rank0.log", COMPLETE, now=1130.0)
    assert list(a.finish(now=5000.0).findings) == []


def test_evidence_context_spans_blocks(catalogue: Catalogue) -> None:
    warn = "spark-a:2201:2201 [0] misc/socket.cc:50 NCCL WARN Bootstrap : no socket interface found"
    a = Analyzer(catalogue)
    a.add_source("x.log", "x")
    a.feed("x.log", "one\ntwo\nthree")
    a.feed("x.log", warn)
    a.feed("x.log", "after1\nafter2\nafter3\nafter4")
    ev = next(f for f in a.finish().findings if f.signature == "nccl-socket-ifname-no-interface").evidence[0]
    assert (ev.line, ev.before, ev.after) == (4, ("one", "two", "three"), ("after1", "after2", "after3"))
