"""Which program, layer, process and node each line comes from, across the prefix formats of §0.1."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparktui.core.classify import BARE_NCCL, PREFIXES, PrefixError, classify, load_prefixes, peeled_by

from ..conftest import FIXTURES

CASES = [
    # NCCL INFO, WARN before 2.26, WARN with timestamp (2.26+), WARN with (func) (HEAD)
    (
        "spark-a:2201:2201 [0] NCCL INFO Bootstrap : Using enp1s0f1np1:192.168.100.10<0>",
        "nccl",
        "INFO",
        "spark-a",
        None,
    ),
    (
        "spark-a:2201:2250 [0] misc/socket.cc:50 NCCL WARN NET/Socket : no interface found",
        "nccl",
        "WARN",
        "spark-a",
        None,
    ),
    (
        "[2026-11-30 04:28:41] spark-b:2590:2744 [0] transport/net_socket.cc:567 NCCL WARN x",
        "nccl",
        "WARN",
        "spark-b",
        None,
    ),
    ("spark-b:1:2 [1] init.cc:99 (ncclCommInitRank) NCCL WARN y", "nccl", "WARN", "spark-b", None),
    ("NCCL version 2.21.5+cuda12.4", "nccl", "INFO", None, None),
    # Ray's worker prefix around an NCCL line: the node is the Ray ip
    (
        "(RayWorkerWrapper pid=4411, ip=10.0.0.2) spark-b:4411:4411 [0] NCCL INFO Init COMPLETE",
        "nccl",
        "INFO",
        "10.0.0.2",
        None,
    ),
    # vLLM 0.6, 0.8, 0.10+ child process, worker rank
    ("INFO 12-01 10:11:12 api_server.py:12] vLLM API server version 0.6.6", "vllm", "INFO", None, None),
    ("INFO 05-02 10:11:12 [api_server.py:1043] vLLM API server version 0.8.5", "vllm", "INFO", None, None),
    (
        "(EngineCore_DP0 pid=412) ERROR 11-30 04:55:01 [core.py:708] EngineCore failed to start.",
        "vllm",
        "ERROR",
        None,
        None,
    ),
    (
        "(Worker_TP1 pid=913) INFO 11-30 04:55:09 [parallel_state.py:1165] rank 1 in world size 2",
        "vllm",
        "INFO",
        None,
        1,
    ),
    # SGLang: no level, TP/DP tags
    ("[2026-03-02 10:14:07 TP1] Init torch distributed begin.", "sglang", "", None, 1),
    ("[2026-03-02 10:14:07 DP0 TP3] Load weight begin. avail mem=70.1 GB", "sglang", "", None, 3),
    # Ray Python and C++, torch c10, uvicorn, docker, python traceback
    ("2026-11-30 04:22:26,241\tINFO scripts.py:1085 -- Ray runtime started.", "ray", "INFO", None, None),
    (
        "[2026-11-30 04:22:11,274 W 15491 15491] network_util.cc:330: Failed to determine local IP",
        "ray",
        "WARNING",
        None,
        None,
    ),
    ("(raylet, ip=10.0.0.3) [2026-11-30 04:22:11,274 E 1 1] node_manager.cc:1: x", "ray", "ERROR", "10.0.0.3", None),
    ("[rank1]:[E1130 04:55:01.123 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught", "torch", "ERROR", None, 1),
    ("INFO:     Application startup complete.", "uvicorn", "INFO", None, None),
    (
        'docker: Error response from daemon: could not select device driver "" with capabilities: [[gpu]].',
        "docker",
        "ERROR",
        None,
        None,
    ),
    ("ValueError: Model architectures ['Qwen9ForCausalLM'] are not supported for now.", "python", "ERROR", None, None),
    ("just some text", "other", "", None, None),
]


@pytest.mark.parametrize(("line", "program", "level", "node", "rank"), CASES)
def test_classify(line: str, program: str, level: str, node: str | None, rank: int | None) -> None:
    got = classify(line)
    assert (got.program, got.level, got.node, got.rank) == (program, level, node, rank)


def test_vllm_process_names_are_layers() -> None:
    assert classify("(APIServer pid=1) INFO 11-30 04:55:01 [api_server.py:1] x").layer == "vllm:APIServer"


def test_lines_that_begin_with_nccl_own_prefix_lose_nothing_to_the_launchers_prefixes() -> None:
    """classify() skips peeling for a line that starts with ``host:pid:tid [dev]``; no prefix may take
    anything off such a line, in any captured log or any prefix's own example."""
    lines = [e["line"] for p in PREFIXES for e in p.examples]
    for path in FIXTURES.rglob("*.log"):
        lines += path.read_text(encoding="utf-8", errors="replace").split("\n")
    bare = [line for line in lines if BARE_NCCL.match(line)]
    assert len(bare) > 10_000
    assert [line for line in bare if peeled_by(line)] == []


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("[[prefixes]]\nwhat = 'x'\npattern = '^x'\n", "prefixes[0].id: needs a non-empty string"),
        ("[[prefixes]]\nid = 'x'\nwhat = 'x'\npattern = '^(x'\n", "prefixes[0].pattern: not a regular expression"),
        ("[[prefixes]]\nid = 'x'\nwhat = 'x'\npattern = '^x'\nneeds = ['a']\n", "prefixes[0].needs: unknown key"),
        ("prefixes = 3\n", "prefixes: needs an array of [[prefixes]] tables"),
        ("[[prefixes]\n", "not valid TOML"),
    ],
)
def test_a_broken_prefix_file_is_refused_in_one_line_naming_the_key(tmp_path: Path, text: str, said: str) -> None:
    path = tmp_path / "prefixes.toml"
    path.write_text(text)
    with pytest.raises(PrefixError) as refused:
        load_prefixes(path)
    message = str(refused.value)
    assert message.startswith(f"{path}: ") and said in message and "\n" not in message


def test_the_built_in_prefixes_load_whole() -> None:
    assert [p.id for p in load_prefixes()] == [p.id for p in PREFIXES] and all(p.examples for p in PREFIXES)
