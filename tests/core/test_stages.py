"""Stage tracking: how far each unit got, stalls after the fact and on a live clock."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from sparktui.cli import main
from sparktui.core.analysis import progress
from sparktui.core.analysis.analyzer import Analyzer
from sparktui.core.analysis.diagnosis import Diagnosis
from sparktui.core.analysis.findings import STALL_EVIDENCE_MAX
from sparktui.core.analysis.progress import Cell, Grid, Row
from sparktui.core.analysis.stages import PENDING_AFTER
from sparktui.core.catalogue import Catalogue, CatalogueError
from sparktui.core.catalogue import load as load_catalogue
from sparktui.core.classify import node_in
from sparktui.core.events import Severity
from sparktui.core.words import NAMED

from ..conftest import FIXTURES, ROOT

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
    assert d.stages["rank0"]["nccl"].startswith("0 of 1 communicators ready")  # the source's node


def test_live_stall_needs_time_without_progress(catalogue: Catalogue) -> None:
    a = Analyzer(catalogue)
    a.add_source("rank0.log", "rank0")
    a.feed("rank0.log", START, now=1000.0)
    assert list(a.finish(now=1059.0).findings) == []  # the stage's stuck_after (60 s) has not passed
    stalled = a.finish(now=1061.0).findings
    assert [f.signature for f in stalled] == ["nccl-communicator-init-stalled"]
    a.feed("rank0.log", COMPLETE, now=1130.0)
    assert list(a.finish(now=5000.0).findings) == []


def test_a_live_stall_is_pending_until_its_window_passes(catalogue: Catalogue) -> None:
    """Short of the stall window, a unit that would be a stall is pending: said in the diagnosis, its JSON
    and the node's stage phrase (the cockpit's strip), with how long it has waited; not in a healthy
    pace's first seconds, and never once it is a finding or has moved on."""
    a = Analyzer(catalogue)
    a.add_source("rank0.log", "spark-a")
    a.feed("rank0.log", START, now=1000.0)
    assert a.finish(now=1000.0 + PENDING_AFTER - 1).pending == ()
    d = a.finish(now=1032.0)
    assert d.findings == ()
    (pending,) = d.pending
    assert (pending.signature, pending.who, pending.waited, pending.window) == (
        "nccl-communicator-init-stalled",
        "rank 0 on spark-a",
        32.0,
        60.0,
    )
    assert pending.short == "stall pending (32 s of 60)"
    assert d.stages["spark-a"]["nccl"].endswith("stopped at: communicator init started; stall pending (32 s of 60)")
    assert d.as_dict()["pending"][0]["window_s"] == 60.0
    named = a.finish(now=1061.0)
    assert named.pending == () and [f.signature for f in named.findings] == ["nccl-communicator-init-stalled"]
    assert "pending" not in named.stages["spark-a"]["nccl"]
    a.feed("rank0.log", COMPLETE, now=1070.0)
    assert a.finish(now=1090.0).pending == ()
    assert a.finish().pending == ()  # a finished log: "stopped at" is a finding, nothing is pending


def test_evidence_context_spans_blocks(catalogue: Catalogue) -> None:
    warn = "spark-a:2201:2201 [0] misc/socket.cc:50 NCCL WARN Bootstrap : no socket interface found"
    a = Analyzer(catalogue)
    a.add_source("x.log", "x")
    a.feed("x.log", "one\ntwo\nthree")
    a.feed("x.log", warn)
    a.feed("x.log", "after1\nafter2\nafter3\nafter4")
    ev = next(f for f in a.finish().findings if f.signature == "nccl-socket-ifname-no-interface").evidence[0]
    assert (ev.line, ev.before, ev.after) == (4, ("one", "two", "three"), ("after1", "after2", "after3"))


def nccl(host: str, pid: int, text: str) -> str:
    return f"{host}:{pid}:{pid} [0] NCCL INFO {text}"


def split(host: str, pid: int, comm: str, rank: int, parent: str, end: str) -> str:
    return nccl(
        host,
        pid,
        f"ncclCommSplit comm {comm} rank {rank} nranks 2 cudaDev 0 nvmlDev 0 busId 60 parent {parent} "
        f"splitCount 1 color 7 key {rank} - Init {end}",
    )


def world(host: str, pid: int, comm: str, rank: int, end: str) -> str:
    return nccl(
        host,
        pid,
        f"ncclCommInitRankConfig comm {comm} rank {rank} nranks 2 cudaDev 0 nvmlDev 0 busId 60 "
        f"commId 0x5eed - Init {end}",
    )


def diagnose(catalogue: Catalogue, *blocks: tuple[str, str]) -> Analyzer:
    """Each block a file, named after the host its NCCL lines name, as a file read is."""
    a = Analyzer(catalogue)
    for name, text in blocks:
        a.add_source(name, node_in(text) or name)
        a.feed(name, text)
    return a


def test_a_communicator_begins_at_its_first_visible_line(catalogue: Catalogue) -> None:
    a = diagnose(catalogue, ("a.log", nccl("node-a", 7, "Comm config Blocking set to 1")))
    (unit,) = a.correlation.tracker.units
    assert (unit.stage, unit.key) == ("config", "")
    a.feed("a.log", nccl("node-a", 7, "Using network Socket") + "\n" + world("node-a", 7, "0xa1", 0, "START"))
    (unit,) = a.correlation.tracker.units  # Init START names the communicator Comm config began
    assert (unit.stage, unit.key, unit.facts["commid"]) == ("init_start", "0xa1", "0x5eed")


def lazy_world(host: str, pid: int, comm: str, rank: int) -> list[str]:
    peer = 1 - rank
    return [
        world(host, pid, comm, rank, "START"),
        world(host, pid, comm, rank, "COMPLETE"),
        nccl(host, pid, f"Channel 00/0 : {peer}[0] -> {rank}[0] [receive] via NET/Socket/0"),
        nccl(host, pid, "Connected all rings, use ring PXN 0 GDR 0"),
    ]


def test_channels_after_init_complete_are_the_first_collective(catalogue: Catalogue) -> None:
    a = diagnose(catalogue, ("a.log", "\n".join(lazy_world("node-a", 7, "0xa1", 0))))
    (unit,) = a.correlation.tracker.units
    assert unit.stage == "collective_connected" and unit.done


def test_a_rank_that_never_joins_a_split_first_collective(catalogue: Catalogue) -> None:
    a_lines = [
        *lazy_world("node-a", 7, "0xa1", 0),
        split("node-a", 7, "0xa2", 0, "0xa1", "START"),
        split("node-a", 7, "0xa2", 0, "0xa1", "COMPLETE"),
        nccl("node-a", 7, "Channel 00/0 : 1[0] -> 0[0] [receive] via NET/Socket/0"),
    ]
    b_lines = [
        *lazy_world("node-b", 8, "0xb1", 1),
        split("node-b", 8, "0xb2", 1, "0xb1", "START"),
        split("node-b", 8, "0xb2", 1, "0xb1", "COMPLETE"),
    ]
    a = diagnose(catalogue, ("a.log", "\n".join(a_lines)), ("b.log", "\n".join(b_lines)))
    d = a.finish()
    root = d.findings[0]
    assert (root.signature, root.severity, root.nodes[0]) == (
        "nccl-collective-rank-never-joined",
        Severity.CRITICAL,
        "node-b",
    )
    assert "rank 1 on node-b stopped at 'communicator ready'" in root.detail
    (grid,) = d.progress
    assert grid.columns == ("0x5eed (2 ranks)", "split 1 (2 ranks)")  # the splits are one column, tied by parent
    assert [(r.who, r.behind) for r in grid.rows] == [("rank 0", False), ("rank 1", True)]
    assert grid.verdict == "rank 1 on node-b is behind the other ranks."


def test_a_rank_that_never_opened_the_second_communicator_is_absent_from_its_column(catalogue: Catalogue) -> None:
    second = nccl(
        "node-a", 7, "ncclCommInitRankConfig comm 0xa9 rank 0 nranks 2 cudaDev 0 busId 60 commId 0x2b0b - Init START"
    )
    a_lines = [*lazy_world("node-a", 7, "0xa1", 0), second]
    d = diagnose(
        catalogue, ("a.log", "\n".join(a_lines)), ("b.log", "\n".join(lazy_world("node-b", 8, "0xb1", 1)))
    ).finish()
    (grid,) = d.progress
    assert [[c.short for c in r.cells] for r in grid.rows] == [["in use", "init"], ["in use", "absent"]]
    assert [r.behind for r in grid.rows] == [False, True]
    assert grid.verdict == "rank 1 on node-b never joined 0x2b0b, which the other ranks wait in."


CUT = FIXTURES / "nccl" / "two-hosts-second-group-cut-at-comm-config"


def test_a_rank_that_began_a_communicator_its_peers_never_began_is_the_second_group_deadlock(
    catalogue: Catalogue, capsys: pytest.CaptureFixture[str]
) -> None:
    """The real capture post mortem (NCCL lines only, rank 0 cut at its second communicator's first line):
    rank 1 completed the first communicator with rank 0 and went quiet, so more than the end of the logs says
    rank 0 waits: an error first, naming both ranks and what tells a hang from a cut log; diagnose exits 1."""
    d = diagnose(catalogue, *((p.name, p.read_text().rstrip("\n")) for p in sorted(CUT.glob("rank*.log")))).finish()
    root = d.findings[0]
    assert (root.signature, root.severity, root.nodes) == (
        "nccl-second-communicator-not-joined",
        Severity.CRITICAL,
        ("spark-a", "spark-b"),
    )
    assert "process 839 on spark-a (rank 0 of commId 0x9d9ed4d7c9124a21) stopped at 'communicator requested'" in (
        root.detail
    )
    assert "Rank 1 on spark-b completed the communicator before it" in root.detail
    assert "still running" in root.detail and "a later line from it" in root.detail
    assert "Nothing else in the logs says it was stuck" not in root.detail
    assert root.facts["ranks_never_began"] == "1"
    assert d.progress[0].verdict == "rank 1 on spark-b never joined communicator 2, which the other ranks wait in."
    assert main(["diagnose", str(CUT)]) == 1
    assert "never completed on the ranks that began it" in capsys.readouterr().out


def job(ranks: int, per_node: int, *, second: dict[int, str], version: bool = True) -> list[tuple[str, str]]:
    """A socket start-up of ``ranks`` ranks, ``per_node`` to a node (one log per node), as NCCL 2.28 prints
    it: the first communicator complete and its rings connected on every rank, then the second one on the
    ranks of ``second`` as far as the stage given (``config``, ``init_start``, ``done``)."""
    logs: dict[str, list[str]] = {}
    for r in range(ranks):
        host, pid = f"gpu-{r // per_node:02d}", 1000 + r
        lines = logs.setdefault(host, [])
        first = f"ncclCommInitRankConfig comm 0x{r + 1:x}00 rank {r} nranks {ranks} cudaDev {r % per_node} busId 60"
        lines += [nccl(host, pid, "NCCL version 2.28.9+cuda13.0")] if version else []
        lines += [
            nccl(host, pid, "NET/Socket : Using [0]eth0:10.0.0.1<0>"),
            nccl(host, pid, "Comm config Blocking set to 1"),
            nccl(host, pid, "Using network Socket"),
            nccl(host, pid, f"{first} commId 0x11 - Init START"),
            nccl(host, pid, f"{first} commId 0x11 - Init COMPLETE"),
            nccl(host, pid, f"Channel 00/0 : {(r - 1) % ranks}[0] -> {r}[0] [receive] via NET/Socket/0"),
            nccl(host, pid, "Connected all rings, use ring PXN 0 GDR 0"),
        ]
        stage = second.get(r)
        if stage is None:
            continue
        lines.append(nccl(host, pid, "Comm config Blocking set to 1"))
        again = f"ncclCommInitRankConfig comm 0x{r + 1:x}01 rank {r} nranks {ranks} cudaDev {r % per_node} busId 60"
        if stage in ("init_start", "done"):
            lines.append(nccl(host, pid, f"{again} commId 0x22 - Init START"))
        if stage == "done":
            lines.append(nccl(host, pid, f"{again} commId 0x22 - Init COMPLETE"))
    return [(f"{host}.log", "\n".join(lines)) for host, lines in logs.items()]


def loud(d: Diagnosis) -> list[tuple[str, Severity]]:
    return [(f.signature, f.severity) for f in d.findings if f.severity >= Severity.ERROR]


def test_a_large_healthy_socket_start_up_is_not_a_hang(catalogue: Catalogue) -> None:
    """64 ranks on 8 nodes over sockets: complete, cut after the first communicator, or cut anywhere in a
    second one that every rank began, nothing is an error."""
    everyone = dict.fromkeys(range(64), "done")
    assert diagnose(catalogue, *job(64, 8, second=everyone)).finish().findings == ()
    assert diagnose(catalogue, *job(64, 8, second={})).finish().findings == ()
    midway = {r: ("config", "init_start")[r % 2] for r in range(64)}  # no line names half of them yet
    d = diagnose(catalogue, *job(64, 8, second=midway)).finish()
    assert loud(d) == [] and {f.severity for f in d.findings} == {Severity.WARNING}
    assert "last seen" not in d.findings[0].detail and "ranks_never_began" not in d.findings[0].facts


def test_any_rank_absent_from_a_new_communicator_is_named(catalogue: Catalogue) -> None:
    """Of 64 ranks, all began the second communicator (at its first line or its Init START) but one, which
    went quiet after the first: an error naming that rank."""
    second = {r: ("config", "init_start")[r % 2] for r in range(64) if r != 37}
    d = diagnose(catalogue, *job(64, 8, second=second)).finish()
    root = d.findings[0]
    assert (root.signature, root.severity) == ("nccl-second-communicator-not-joined", Severity.CRITICAL)
    assert "Rank 37 on gpu-04 completed the communicator before it" in root.detail
    assert root.facts["ranks_never_began"] == "37"
    assert "gpu-04" in root.nodes
    # Where some ranks completed it, the others are behind those (a peer got further), and none went quiet.
    second = {r: ("config", "init_start", "done")[r % 3] for r in range(64)}
    (behind,) = diagnose(catalogue, *job(64, 8, second=second)).finish().findings
    assert "ranks_never_began" not in behind.facts and "completed the communicator before" not in behind.detail


def test_ranks_outside_a_smaller_new_communicator_are_not_taken_for_absent(catalogue: Catalogue) -> None:
    """Ranks 0 and 1 of four begin a two-rank group and stop in its init; ranks 2 and 3 are not in it and
    stay quiet: only the end of the logs speaks for the stall."""
    logs = job(4, 1, second={})
    pair = [
        nccl(
            f"gpu-0{r}",
            1000 + r,
            f"ncclCommInitRankConfig comm 0x{r}77 rank {r} nranks 2 cudaDev 0 busId 60 commId 0x33 - Init START",
        )
        for r in (0, 1)
    ]
    logs = [(name, text + "\n" + pair[i]) if i < 2 else (name, text) for i, (name, text) in enumerate(logs)]
    d = diagnose(catalogue, *logs).finish()
    assert [(f.signature, f.severity) for f in d.findings] == [
        ("nccl-second-communicator-not-joined", Severity.WARNING)
    ]
    assert "Nothing else in the logs says it was stuck" in d.findings[0].detail


def test_a_stall_only_the_end_of_the_log_speaks_for_is_a_warning(catalogue: Catalogue) -> None:
    both = [world("node-a", 7, "0xa1", 0, "START"), world("node-b", 8, "0xb1", 1, "START")]
    d = diagnose(catalogue, ("x.log", "\n".join(both))).finish()
    assert [(f.signature, f.severity) for f in d.findings] == [("nccl-communicator-init-stalled", Severity.WARNING)]
    assert "Nothing else in the logs says it was stuck" in d.findings[0].detail
    assert d.progress[0].verdict == "Symmetric: every rank stopped at 'communicator init started'."


def test_the_logs_own_clock_corroborates_a_stall(catalogue: Catalogue) -> None:
    stamped = [
        "2026-12-01T10:00:00.000000000Z " + world("node-a", 7, "0xa1", 0, "START"),
        "2026-12-01T10:05:00.000000000Z some later line of the same container",
    ]
    d = diagnose(catalogue, ("x.log", "\n".join(stamped))).finish()
    assert [(f.signature, f.severity) for f in d.findings] == [("nccl-communicator-init-stalled", Severity.ERROR)]
    assert "the log went on for 300 s without progress" in d.findings[0].detail


def test_a_connect_stall_on_one_node_is_told_apart_from_one_across_nodes(catalogue: Catalogue) -> None:
    def cut_after_trees(nnodes: int) -> list[str]:
        return [
            world("node-a", 7, "0xa1", 0, "START"),
            nccl("node-a", 7, f"comm 0xa1 rank 0 nRanks 2 nNodes {nnodes} localRanks {3 - nnodes} localRank 0 MNNVL 0"),
            nccl("node-a", 7, "Trees [0] 1/-1/-1->0->-1 [1] -1/-1/-1->0->1"),
        ]

    found = {
        n: [f.signature for f in diagnose(catalogue, ("x.log", "\n".join(cut_after_trees(n)))).finish().findings]
        for n in (1, 2)
    }
    assert found == {
        1: ["nccl-communicator-connect-stalled-one-node"],
        2: ["nccl-communicator-connect-stalled"],
    }


def test_a_stall_asks_only_for_facts_a_track_reads(tmp_path: Path) -> None:
    text = (ROOT / "diagnostics" / "nccl-communicator-connect-stalled-one-node.toml").read_text()
    (tmp_path / "nccl-communicator-connect-stalled-one-node.toml").write_text(
        text.replace('where = { nnodes = "1" }', 'where = { nodes = "1" }')
    )
    shutil.copytree(ROOT / "diagnostics" / "stages", tmp_path / "stages")
    with pytest.raises(CatalogueError) as caught:
        load_catalogue([tmp_path])
    assert caught.value.key == "stall.where.nodes" and "no stage track reads a fact 'nodes'" in caught.value.reason


def test_a_log_that_stops_after_rings_connected_is_not_a_stall(catalogue: Catalogue) -> None:
    lines = [world("node-a", 7, "0xa1", 0, "START"), nccl("node-a", 7, "Connected all trees")]
    assert diagnose(catalogue, ("x.log", "\n".join(lines))).finish().findings == ()


def test_live_first_collective_hang_is_named_within_a_minute_and_progress_clears_it(catalogue: Catalogue) -> None:
    a = Analyzer(catalogue)
    a.add_source("a.log", "a")
    a.feed("a.log", "\n".join(lazy_world("node-a", 7, "0xa1", 0)[:3]), now=1000.0)
    assert a.finish(now=1050.0).findings == ()
    assert [f.signature for f in a.finish(now=1061.0).findings] == ["nccl-collective-connect-stalled"]
    a.feed("a.log", nccl("node-a", 7, "Connected all rings, use ring PXN 0 GDR 0"), now=1062.0)
    assert a.finish(now=2000.0).findings == ()


def test_eight_ranks_of_one_host_are_eight_rows(catalogue: Catalogue) -> None:
    lines = [
        nccl(
            "gpu-a", 100 + r, f"comm 0x{r}f rank {r} nranks 8 cudaDev {r} nvmlDev {r} busId 60 commId 0x77 - Init START"
        )
        for r in range(8)
    ]
    d = diagnose(catalogue, ("x.log", "\n".join(lines))).finish()
    (grid,) = d.progress
    assert [r.who for r in grid.rows] == [f"rank {r}" for r in range(8)]
    assert [r.who for r in grid.compact()] == ["ranks 0-7"]
    assert d.stages["gpu-a"]["nccl"].startswith("8 processes: 0 of 1 communicators ready")


def test_lines_folded_by_ray_count_and_say_so(catalogue: Catalogue) -> None:
    folded = "(RayWorkerWrapper pid=4411, ip=10.0.0.2) " + world("node-b", 8, "0xb1", 1, "COMPLETE")
    lines = [
        world("node-a", 7, "0xa1", 0, "START"),
        world("node-b", 8, "0xb1", 1, "START"),
        folded + " [repeated 3x across cluster]",
    ]
    d = diagnose(catalogue, ("x.log", "\n".join(lines))).finish()
    (stall,) = d.findings  # rank 0 looks behind, but its COMPLETE may be one of the folded lines
    assert stall.severity == Severity.WARNING
    assert "de-duplication folded" in stall.detail
    warn = "(RayWorkerWrapper pid=4411, ip=10.0.0.2) node-b:8:8 [0] misc/socket.cc:50 NCCL WARN Bootstrap : "
    warn += "no socket interface found"
    d = diagnose(catalogue, ("y.log", warn + " [repeated 4x across cluster]")).finish()
    found = next(f for f in d.findings if f.signature == "nccl-socket-ifname-no-interface")
    assert found.count == 4 and "3 identical lines of other workers were folded" in found.detail


def test_a_report_prints_the_open_part_of_a_large_grid_and_says_what_it_left_out() -> None:
    ready, waiting = Cell("init_complete", "ready", "ready", done=True), Cell("init_start", "init", "init")
    late = Cell("init_start", "init", "init", behind=True)
    columns = tuple(f"0x{i:04x} (64 ranks)" for i in range(20))
    rows = [Row(f"node-{r // 8}", f"rank {r}", (ready,) * 19 + (waiting,)) for r in range(63)]
    rows.append(Row("node-7", "rank 63", (ready,) * 19 + (late,)))
    # every rank of a node alike but the last one's: eight nodes fold into eight rows, node-7 into two
    shown, left_out = Grid("nccl", "NCCL", columns, tuple(rows), "").brief(rows=4, columns=3)
    assert shown.columns == ("0x0000 (64 ranks)", "0x0001 (64 ranks)", "0x0013 (64 ranks)")  # the late one kept
    assert [(r.node, r.who) for r in shown.rows] == [
        ("node-0", "ranks 0-7"),
        ("node-1", "ranks 8-15"),
        ("node-2", "ranks 16-23"),
        ("node-7", "rank 63"),  # the one behind, kept although it comes last
    ]
    assert left_out == "17 more columns and 5 more rows not shown (the cockpit's G shows them all)."


def test_a_stall_over_many_nodes_quotes_a_few_and_counts_the_rest(catalogue: Catalogue) -> None:
    """Thirty copies of a real two-host hang, each on hosts of its own (the copies share the capture's commId:
    one peer group): one finding naming every stalled node, quoting a bounded number of lines, its sentence
    naming a dozen of them and counting the others."""
    capture = FIXTURES / "nccl" / "two-hosts-second-group-not-joined"
    a = Analyzer(catalogue)
    for k in range(30):
        for rank, host in (("rank0", "spark-a"), ("rank1", "spark-b")):
            name, node = f"pair{k:02d}-{rank}.log", f"{host}-{k:02d}"
            a.add_source(name, node)
            a.feed(name, (capture / f"{rank}.log").read_text().replace(host, node).rstrip("\n"))
    d = a.finish()
    (hang,) = [f for f in d.findings if f.signature == "nccl-second-communicator-not-joined"]
    assert len(hang.nodes) >= 30 and hang.count >= 30
    assert 0 < len(hang.evidence) <= STALL_EVIDENCE_MAX
    assert f"rank 0 on spark-a-11 and {30 - NAMED} more stopped at" in hang.detail, hang.detail
    assert len(hang.detail) < 4000, len(hang.detail)
    two = Analyzer(catalogue)  # the capture as it is: every stalled rank quoted
    for rank in ("rank0", "rank1"):
        two.add_source(f"{rank}.log", rank)
        two.feed(f"{rank}.log", (capture / f"{rank}.log").read_text().rstrip("\n"))
    (small,) = [f for f in two.finish().findings if f.signature == "nccl-second-communicator-not-joined"]
    assert {e.node for e in small.evidence} == {"rank0", "rank1"}


def test_a_grid_too_big_to_look_at_keeps_its_most_concerning_part(
    catalogue: Catalogue, monkeypatch: pytest.MonkeyPatch
) -> None:
    def init(host: str, rank: int, commid: str, end: str) -> str:
        text = (
            f"ncclCommInitRankConfig comm 0x{rank}{commid[-1]} rank {rank} nranks 4 cudaDev 0 busId 60 commId {commid}"
        )
        return nccl(host, 10 + rank, f"{text} - Init {end}")

    hosts = ["node-a", "node-b", "node-c", "node-d"]
    lines = [init(h, r, "0x2", "START") for r, h in enumerate(hosts)] + [
        init(h, r, "0x2", "COMPLETE") for r, h in enumerate(hosts)
    ]
    lines += [init(h, r, "0x1", "START") for r, h in enumerate(hosts)] + [
        init(h, r, "0x1", "COMPLETE") for r, h in enumerate(hosts[:3])
    ]
    monkeypatch.setattr(progress, "GRID_ROWS", 2)
    monkeypatch.setattr(progress, "GRID_COLUMNS", 1)
    (grid,) = diagnose(catalogue, ("x.log", "\n".join(lines))).finish().progress
    assert grid.columns == ("0x1 (4 ranks)",)  # the communicator someone is behind in
    assert [(r.node, r.behind) for r in grid.rows] == [("node-a", False), ("node-d", True)]
    assert grid.verdict == (
        "rank 3 on node-d is behind the other ranks. "
        "(1 more communicator and 2 more processes, ready or alike, are left out of this grid.)"
    )
