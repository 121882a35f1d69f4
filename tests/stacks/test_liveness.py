"""The live watch's rules, pure: when it reads the stacks (pacing), and what a reading of the real dumps of
tests/fixtures/stacks says (hung, loading, progressing, idle) and the finding a hang makes."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest

from sparktui.core.analysis.analyzer import Analyzer
from sparktui.core.analysis.diagnosis import Diagnosis
from sparktui.core.catalogue import Catalogue
from sparktui.core.events import Severity, finding_dict
from sparktui.core.liveness.pacing import Pacer
from sparktui.core.liveness.stamps import Stamps
from sparktui.core.liveness.verdict import WordsError, builtin_words, finding, judge, load_words, merged
from sparktui.core.liveness.watch import Live, Watcher, for_session, is_wedged, named, node_name
from sparktui.core.settings import LivenessSettings, SettingsError, load
from sparktui.core.sources.open import file_sources, ssh_targets
from sparktui.core.stacks import snapshot as snapshots
from sparktui.core.stacks.compare import compare
from sparktui.core.stacks.kinds import builtin_kinds
from sparktui.core.stacks.ranks import Gpu, Rank

from ..conftest import FIXTURES as FIXTURE_LOGS
from .test_read import FIXTURES, ranks_of

S = LivenessSettings()


def reading_of(ranks: list[Rank]):  # type: ignore[no-untyped-def]
    groups = compare(ranks, builtin_kinds())
    return judge(groups, snapshots.of(groups, [], "the test's nodes"), builtin_kinds())


def alone(folder: Path, rank: int, world: int) -> Rank:
    """Rank ``rank`` of a job whose dumps are the process of ``folder`` (a scenario run alone)."""
    (r,) = ranks_of(folder, 1)
    env = {**r.env, "RANK": str(rank), "WORLD_SIZE": str(world)}
    return replace(r, env=env, node=f"node-{'abcd'[rank]}", pid=100 + rank)


def test_quiet_logs_make_a_reading_due_once_per_quiet_spell() -> None:
    p = Pacer(S, started=0.0)
    assert p.due(5.0) == ""
    assert p.due(10.0) == "quiet"  # no line yet: quiet since the start
    p.read(10.0, "progressing")
    assert p.due(15.0) == ""
    assert p.due(20.0) == "again"  # still quiet: read again, a moving rank may hang later
    p.lines(21.0)
    p.read(20.0, "progressing")
    assert p.due(30.0) == ""
    assert p.due(31.0) == "quiet"  # a new quiet spell


def test_an_idle_server_is_read_once_a_minute_and_a_hang_every_few_seconds() -> None:
    p = Pacer(S, started=0.0)
    p.read(10.0, "idle")
    assert p.due(40.0) == "" and p.due(70.0) == "idle"
    p.lines(71.0)  # it served something: no longer idle
    assert p.due(80.0) == "" and p.due(81.0) == "quiet"
    p.read(81.0, "hang")
    p.lines(82.0)  # a hang is read again, logs or not, until a reading shows none
    assert p.due(90.0) == "" and p.due(91.0) == "hang"


def test_a_wedged_gpu_makes_a_reading_due_whatever_the_logs() -> None:
    p = Pacer(S, started=0.0)
    p.lines(1.0)
    p.wedged = True
    assert p.due(2.0) == "wedged"
    p.read(2.0, "progressing")
    p.lines(3.0)
    assert p.due(4.0) == "" and p.due(12.0) == "wedged"  # paced, though the logs move
    assert is_wedged(Gpu("GPU-1", "0", "NVIDIA GB10", "96 %", "21.37 W", "2405 MHz"), S.wedged_watts)
    assert not is_wedged(Gpu("GPU-1", "0", "NVIDIA GB10", "96 %", "45.10 W", "2405 MHz"), S.wedged_watts)
    assert not is_wedged(Gpu("GPU-1", "0", "NVIDIA GB10", "3 %", "10.02 W", "2405 MHz"), S.wedged_watts)
    assert not is_wedged(Gpu("GPU-1", "0", "NVIDIA GB10", "[N/A]", "[N/A]", "[N/A]"), S.wedged_watts)


def test_the_rank_that_never_joined_makes_a_critical_finding() -> None:
    reading = reading_of(ranks_of(FIXTURES / "nccl" / "second-group", 4))
    assert reading.state == "hang"
    found = finding(reading, builtin_words())
    assert found is not None
    assert found.severity is Severity.CRITICAL and found.signature == "live-rank-hang"
    assert found.title.startswith("rank 3 on node-d is idle in application code, in serve_requests")
    assert found.facts["hung"] == "rank 3 on node-d"
    assert found.facts["others_wait_in"] == "creating a process group: new_group"
    assert found.nodes[0] == "node-d"
    shown = merged(Diagnosis((), (), {}), found, reading.snapshot)
    assert [(f.signature, [b.rule for b in f.because]) for f in shown.findings] == [("live-rank-hang", ["L1"])]


def test_another_jobs_hang_comes_after_the_logs() -> None:
    """A hang of ranks on no node the logs' findings name, while the logs warn of their own (this machine's
    job beside another node's logs: trial 2026-12c): after them (L2); on one of their nodes: first (L1)."""
    reading = reading_of(ranks_of(FIXTURES / "nccl" / "second-group", 4))
    live = finding(reading, builtin_words())
    assert live is not None
    stall = replace(live, signature="nccl-init-stalled", severity=Severity.WARNING, nodes=("spark-a",), facts={})
    shown = merged(Diagnosis((), (stall,), {}), live, reading.snapshot)
    assert [f.signature for f in shown.findings] == ["nccl-init-stalled", "live-rank-hang"]
    assert [b.rule for b in shown.findings[1].because] == ["L2"]
    assert (
        "its ranks run on node-d, node-a, node-b, node-c, which none of them names" in shown.findings[1].because[0].text
    )
    ours = replace(stall, nodes=("node-b",))
    shown = merged(Diagnosis((), (ours,), {}), live, reading.snapshot)
    assert [(f.signature, f.because[0].rule) for f in shown.findings[:1]] == [("live-rank-hang", "L1")]
    quiet = replace(stall, severity=Severity.INFO)  # the logs say nothing worse: nothing to weigh it against
    assert merged(Diagnosis((), (quiet,), {}), live, reading.snapshot).findings[0].signature == "live-rank-hang"


@pytest.mark.parametrize(
    ("scenario", "world", "state"),
    [
        ("gloo/second-group", 2, "hang"),
        ("gloo/mismatch", 2, "hang"),
        ("nccl/busy-python", 4, "hang"),
        ("gloo/store-wait", 1, "idle"),
        ("gloo/healthy", 2, "idle"),  # both dumps caught every rank in the same all_reduce: together, no hang
    ],
)
def test_each_captured_scenario_reads_as_it_is(scenario: str, world: int, state: str) -> None:
    assert reading_of(ranks_of(FIXTURES / scenario, world)).state == state


def test_a_rank_loading_weights_or_compiling_is_slow_not_hung() -> None:
    """Rank 0 waits in new_group (the real dumps); the last rank loads weights or compiles (the real dumps of
    a process doing so): without the progress kinds the comparison calls it hung."""
    waiting = ranks_of(FIXTURES / "gloo" / "second-group", 2)[0]
    for scenario in ("load-weights", "compile"):
        reading = reading_of([waiting, alone(FIXTURES / "gloo" / scenario, 1, 2)])
        assert reading.state == "loading", scenario
        assert reading.hung == () and finding(reading, builtin_words()) is None


def test_ranks_are_named_by_their_host() -> None:
    (r,) = ranks_of(FIXTURES / "gloo" / "store-wait", 1)
    assert named(replace(r, env={**r.env, "NCCL_HOSTID": "spark-c"})).node == "spark-c"
    assert named(replace(r, node="local")).node not in ("local", "")
    assert named(r).node == r.node
    assert node_name("local") == named(replace(r, node="local")).node and node_name("spark-b") == "spark-b"  # RAS's


def test_the_settings_and_the_words_are_checked(tmp_path: Path) -> None:
    path = tmp_path / "settings.toml"
    path.write_text("[liveness]\nquiet_seconds = 5\nrounds = 4\n")
    live = load(path).liveness
    assert (live.quiet_seconds, live.rounds, live.idle_seconds) == (5.0, 4, 60.0)
    path.write_text("[liveness]\nrounds = 1\n")
    with pytest.raises(SettingsError, match="rounds: a whole number, 2 or more"):
        load(path)
    path.write_text("[liveness]\nquiet = 5\n")
    with pytest.raises(SettingsError, match=r"liveness\.quiet: unknown key"):
        load(path)
    words = tmp_path / "rank-hang.toml"
    words.write_text('id = "x"\ncategory = "no_such"\nseverity = "critical"\nexplanation = "e"\n')
    with pytest.raises(WordsError, match="category: not a category"):
        load_words(words)


def test_each_finding_says_when_it_was_first_made() -> None:
    clock = iter([datetime(2026, 12, 6, 5, 0, s, tzinfo=UTC) for s in range(10)])
    stamps = Stamps(lambda: next(clock))
    reading = reading_of(ranks_of(FIXTURES / "nccl" / "second-group", 4))
    hang = finding(reading, builtin_words())
    assert hang is not None
    logged = replace(hang, signature="a-log-finding", detected_at="")
    stamps.see(Diagnosis((), (logged,), {}))
    stamps.see(Diagnosis((), (logged,), {}))  # seen again: its first time stays
    live = replace(hang, detected_at="2026-12-06T05:00:09.000+00:00")
    shown = stamps.stamp(merged(Diagnosis((), (logged,), {}), live, reading.snapshot))
    assert [f.detected_at for f in shown.findings] == ["2026-12-06T05:00:09.000+00:00", "2026-12-06T05:00:00.000+00:00"]
    assert finding_dict(1, shown.findings[1])["detected_at"] == "2026-12-06T05:00:00.000+00:00"


def test_a_rank_that_left_its_job_makes_a_reading_due_at_once() -> None:
    p = Pacer(S, started=0.0)
    p.lines(1.0)
    p.vanished = True
    assert p.due(2.0) == "vanished"  # the logs are not quiet yet: a rank that left its job is enough
    p.read(2.0, "progressing")
    assert p.due(3.0) == ""
    p.read(4.0, "hang")
    p.vanished = True
    assert p.due(5.0) == ""  # a standing hang keeps its own pace


def test_the_watch_remembers_each_jobs_nodes_and_sees_a_rank_go() -> None:
    watch = Watcher({}, "the test's nodes", S)
    four = [
        named(replace(r, env={**r.env, "NCCL_HOSTID": f"host{r.rank}"}))
        for r in ranks_of(FIXTURES / "nccl" / "second-group", 4)
    ]
    watch._roll_call(four)
    assert not watch.pacer.vanished
    watch._roll_call(four[:3])  # rank 3 went while the others run on
    assert watch.pacer.vanished
    watch.pacer.read(0.0, "hang")
    watch._roll_call([])  # every rank gone: the job ended, nothing to read; its nodes are remembered
    assert not watch.pacer.vanished
    watch._publish(Live())
    assert watch.live.jobs == {"127.0.0.1:29710": ("host0", "host1", "host2", "host3")}
    late = Watcher({}, "the test's nodes", S)
    late._roll_call(four[:3])  # first seen three of four: read once for it
    assert late.pacer.vanished
    late.pacer.read(0.0, "idle")
    late._roll_call(four[:3])  # still three (the fourth may run on a node not watched): not again
    assert not late.pacer.vanished


def test_a_rank_killed_without_a_word_is_named_by_the_nodes_the_watch_saw(catalogue: Catalogue) -> None:
    """The real logs of rank 3 SIGKILLed (NCCL 2.28.9, torch 2.11, no NCCL_DEBUG): ranks 0-2 say they lost a
    peer, rank 3's log says nothing; the watch saw the four ranks running before."""
    folder = FIXTURE_LOGS / "torchrun" / "nccl-killed-rank-silent"
    sources, _ = file_sources([str(folder)])
    analyzer = Analyzer(catalogue)
    for s in sources:
        analyzer.add_source(s.name, s.node)
        analyzer.feed(s.name, s.path.read_text(encoding="utf-8"))
    logged = analyzer.finish()
    root = logged.findings[0]
    assert (root.signature, root.nodes) == ("nccl-peer-connection-lost", ("host0", "host1", "host2"))
    assert not any(b.rule == "T2" for b in root.because)  # the logs alone do not know host3 ran
    told = merged(logged, None, None, [("host0", "host1", "host2", "host3")]).findings[0]
    assert next(b.text for b in told.because if b.rule == "T2").startswith("host3 reported no such loss")
    other_job = merged(logged, None, None, [("spark-a", "spark-b")])
    assert other_job is logged  # the watch saw another job: nothing said


def test_the_watch_reads_the_nodes_the_sources_are_read_from() -> None:
    """Trial 2026-12c F1, F2: `diagnose --follow ssh://node5/...` watched this machine, and named a local
    job's hang as node5's only finding. With no cluster file the watch reads where `W` captures: the nodes of
    the ssh:// sources, and this machine only where a path or a local container is read beside them."""
    assert ssh_targets(["ssh://node5/var/log/x.log"]) == {"node5": "node5"}
    assert ssh_targets(["ssh://me@node6:2260/x.log", "rank0.log"]) == {"node6": "me@node6:2260", "local": ""}
    assert ssh_targets(["ssh://node5/x.log", "docker://engine"]) == {"node5": "node5", "local": ""}
    assert ssh_targets(["rank0.log", "docker://engine"]) == {}
    watch, _ = for_session(None, ssh_targets(["ssh://node5/var/log/x.log"]))
    assert watch.targets == {"node5": "node5"} and watch.where.startswith("the nodes of the sources (node5")
    here, _ = for_session(None, {})
    assert here.targets == {"local": ""} and here.where.startswith("this machine")
