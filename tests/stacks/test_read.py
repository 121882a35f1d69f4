"""py-spy's dumps read, placed and compared: the real dumps of tests/fixtures/stacks (made by
tools/capture/stacks/capture.py: torch 2.13 CPU with gloo here, torch 2.11 with NCCL 2.28.9 on an H200)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparktui.core.stacks.compare import compare, exit_code
from sparktui.core.stacks.dump import Unreadable, parse
from sparktui.core.stacks.gather import read as read_node
from sparktui.core.stacks.kinds import builtin_kinds, place
from sparktui.core.stacks.ranks import Rank, Sample
from sparktui.core.stacks.script import Request

from ..conftest import ROOT

FIXTURES = ROOT / "tests" / "fixtures" / "stacks"


def ranks_of(folder: Path, world: int) -> list[Rank]:
    """The ranks of one captured scenario, each with its two dumps three seconds apart."""
    found = []
    for r in range(world):
        samples = []
        for at, suffix in ((1.0, ""), (4.0, ".later")):
            text = (folder / f"rank{r}{suffix}.txt").read_text()
            try:
                samples.append(Sample(at, parse(text)[0]))
            except Unreadable as exc:
                samples.append(Sample(at, None, str(exc)))
        env = {"RANK": str(r), "WORLD_SIZE": str(world), "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29710"}
        found.append(Rank(f"node-{'abcd'[r]}", "host", 100 + r, "python scenario.py", env, tuple(samples)))
    return found


def test_a_dump_reads_into_threads_and_frames() -> None:
    (process,) = parse((FIXTURES / "nccl" / "mismatch" / "rank0.txt").read_text())
    assert process.pid == 794
    assert process.python == "3.12.3"
    main, other = process.threads
    assert main.main and main.status == frozenset({"active"})
    assert str(main.frames[0]) == "synchronize (torch/cuda/__init__.py:1162)"
    assert other.name == "" and other.status == frozenset({"active", "gil"})  # sympy imported by a thread
    native = parse((FIXTURES / "nccl" / "mismatch" / "rank0.native.txt").read_text())[0].threads[0]
    assert native.frames[9].function == "cuCtxSynchronize_v2" and native.frames[9].native


def test_a_process_gone_is_py_spy_s_own_line() -> None:
    with pytest.raises(Unreadable, match="Failed to get process executable name"):
        parse((FIXTURES / "nccl" / "mismatch" / "rank3.txt").read_text())


@pytest.mark.parametrize(
    ("scenario", "rank", "kind", "function"),
    [
        ("gloo/second-group", 0, "process-group", "new_group"),
        ("gloo/second-group", 1, "idle", "serve_requests"),
        ("nccl/busy-python", 3, "busy-python", "tokenize_forever"),
        ("nccl/store-wait", 0, "store-wait", "_env_rendezvous_handler"),
        ("gloo/mismatch", 1, "collective", "broadcast"),
    ],
)
def test_where_a_rank_waits(scenario: str, rank: int, kind: str, function: str) -> None:
    found = place(parse((FIXTURES / scenario / f"rank{rank}.txt").read_text())[0], builtin_kinds())
    assert found is not None and found.key == (kind, function)


def test_native_frames_do_not_hide_the_python_place() -> None:
    """gloo's store wait in native code under new_group (py-spy --native) is new_group, as without them."""
    native = parse((FIXTURES / "gloo" / "second-group" / "rank0.native.txt").read_text())[0]
    assert any(f.function == "c10d::TCPStore::wait" for f in native.threads[0].frames)
    found = place(native, builtin_kinds())
    assert found is not None and found.key == ("process-group", "new_group")


def test_native_frames_place_the_rank_on_the_gpu() -> None:
    found = place(parse((FIXTURES / "nccl" / "mismatch" / "rank0.native.txt").read_text())[0], builtin_kinds())
    assert found is not None and found.key == ("gpu-wait", "synchronize")


def test_the_rank_that_never_created_the_group_is_named() -> None:
    (g,) = compare(ranks_of(FIXTURES / "nccl" / "second-group", 4), builtin_kinds())
    assert g.verdict == "hang"
    assert g.findings[0] == (
        "rank 3 on node-d is idle in application code, in serve_requests (scenario.py:51) and never entered "
        "new_group, which ranks 0-2 wait in"
    )
    assert [v.odd for v in g.views] == [False, False, False, True]
    assert exit_code([g]) == 1


def test_a_rank_busy_in_python_while_its_peers_wait() -> None:
    (g,) = compare(ranks_of(FIXTURES / "nccl" / "busy-python", 4), builtin_kinds())
    assert g.verdict == "hang"
    assert g.findings[0].startswith("rank 3 on node-d is busy in application code, in tokenize_forever")


def test_mismatched_collectives_are_named() -> None:
    (g,) = compare(ranks_of(FIXTURES / "gloo" / "mismatch", 2), builtin_kinds())
    assert g.verdict == "hang"
    assert "rank 1 on node-b waits in broadcast (inside a collective), not in all_reduce" in g.findings[0]


def test_a_rank_gone_and_ranks_never_started() -> None:
    (g,) = compare(ranks_of(FIXTURES / "nccl" / "mismatch", 4), builtin_kinds())
    assert g.verdict == "hang" and "rank 3 on node-d is not read: Error: Failed to get" in g.findings[0]
    alone = ranks_of(FIXTURES / "nccl" / "store-wait", 1)
    alone = [Rank(r.node, r.place, r.pid, r.command, {**r.env, "WORLD_SIZE": "4"}, r.samples) for r in alone]
    (g,) = compare(alone, builtin_kinds())
    assert g.missing == (1, 2, 3) and g.verdict == "hang"
    assert (
        g.findings[0] == "ranks 1-3 of 4 were found on no node searched, while rank 0 waits in _env_rendezvous_handler"
    )


def test_ranks_together_name_no_one() -> None:
    (g,) = compare(ranks_of(FIXTURES / "nccl" / "healthy", 4), builtin_kinds())
    assert g.verdict == "together" and not any(v.odd for v in g.views)
    assert exit_code([g]) == 0


def test_a_healthy_job_moves_between_the_dumps() -> None:
    (g,) = compare(ranks_of(FIXTURES / "gloo" / "healthy", 2), builtin_kinds())
    assert g.verdict in ("progressing", "no-wait")
    assert exit_code([g]) == 0


def test_what_the_node_script_printed_on_the_h200() -> None:
    """The node script's own output on the H200 (second call: tests/fixtures/stacks/nccl-2), read back: the
    GPU, which rank holds it, and rank 3 named."""
    lines = (FIXTURES / "nccl-2" / "second-group" / "node-script.txt").read_text().splitlines()
    node = read_node("h200", lines, "5f3c9e1a7b20", Request(samples=2))
    assert node.problems == []
    assert [str(g) for g in node.gpus] == ["gpu0 0 % 128.12 W 1980 MHz"]
    assert [(r.rank, r.pid, r.gpu is not None, len(r.samples)) for r in node.ranks] == [
        (0, 506, True, 2),
        (1, 507, True, 2),
        (2, 508, True, 2),
        (3, 510, True, 2),
    ]
    (g,) = compare(node.ranks, builtin_kinds())
    assert g.verdict == "hang" and 0.9 < g.seconds < 2
    assert g.findings[0] == (
        "rank 3 on h200 is idle in application code, in serve_requests (scenario.py:62) and never entered "
        "new_group, which ranks 0-2 wait in (its GPU: gpu0 0 % 128.12 W 1980 MHz)"
    )


@pytest.mark.parametrize(
    ("dump", "kind", "function"),
    [
        ("nccl-2/load-weights/rank0.txt", "weights", "load_file"),
        ("nccl-2/compile/rank0.later.txt", "compile", None),
        ("gloo/ray-get/rank0.txt", "ray-get", "get"),
    ],
)
def test_weights_compile_and_ray_get(dump: str, kind: str, function: str | None) -> None:
    found = place(parse((FIXTURES / dump).read_text())[0], builtin_kinds())
    assert found is not None and found.kind.id == kind
    assert function is None or found.frame.function == function


def test_a_driver_in_ray_get_is_no_odd_rank() -> None:
    (driver,) = ranks_of(FIXTURES / "gloo" / "ray-get", 1)
    ranks = ranks_of(FIXTURES / "gloo" / "second-group", 2)
    env = {k: v for k, v in ranks[0].env.items() if k != "RANK"}  # the driver's store, no rank of its own
    ranks = [*ranks, Rank("node-a", "host", 99, "python", env, driver.samples)]
    (g,) = compare(ranks, builtin_kinds())
    assert [v.odd for v in g.views] == [False, True, False]  # rank 1 only, not the driver beside rank 0


def test_marker_lines_without_the_run_s_nonce_are_output() -> None:
    """A program that prints a marker of its own (another nonce) cannot start a section: its line stays in the
    section it was printed in."""
    lines = (FIXTURES / "nccl-2" / "load-weights" / "node-script.txt").read_text().splitlines()
    at = lines.index(next(line for line in lines if line.startswith("@@stacks 5f3c9e1a7b20 env ")))
    forged = [*lines[: at + 1], "@@stacks 000000000000 proc 1", *lines[at + 1 :]]
    node = read_node("h200", forged, "5f3c9e1a7b20", Request(samples=2))
    assert [r.pid for r in node.ranks] == [2206]
    assert node.ranks[0].env["RANK"] == "0" and len(node.ranks[0].samples) == 2


def test_a_node_cut_off_says_so() -> None:
    lines = (FIXTURES / "nccl-2" / "load-weights" / "node-script.txt").read_text().splitlines()
    node = read_node("h200", lines[:12], "5f3c9e1a7b20", Request(samples=2))
    assert node.problems == ["h200: the gathering was cut off before it ended"]
