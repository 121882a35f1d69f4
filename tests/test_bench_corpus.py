"""The bench's corpora (bench/corpus.py): real captures, whole, with each node its own host and each restart
its own processes, and a shuffled file that holds exactly the directory's lines."""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

from bench.corpus import FIXTURES, build_directory, build_shuffled, host_name, load_captures, parse_capture
from sparktui.core.classify import nccl_hosts

_RAY_IP = re.compile(r", ip=([\d.]+)\)")
_NCCL_PID = re.compile(r"(?m)^(?:\[[\d-]+ [\d:.]+\] )?[\w.-]+:(\d+):\d+ \[\d+\] ")


def _captures(*names: str) -> list:
    return [parse_capture(n, (FIXTURES / n).read_bytes()) for n in names]


CAPTURES = _captures(
    "nccl4/four-hosts-rank-oom/rank2.log",
    "nccl/two-hosts-healthy/rank1.log",
    "vllm/mp-2-nodes-loopback/server.log",
    "ray/gpu-placement-group-infeasible-ray2.40.0/driver.log",
)


def test_a_capture_is_its_file_cut_at_its_fields() -> None:
    for capture in CAPTURES:
        original = (FIXTURES / capture.name).read_bytes()
        assert capture.render({f: f[1] for f in capture.fields}) == original
    kinds = {kind for c in CAPTURES for kind, _ in c.fields}
    assert kinds == {"host", "pid", "ip"}
    assert len(load_captures()) > 100


def test_every_node_is_its_own_host_and_every_restart_its_own_processes(tmp_path: Path) -> None:
    corpus = build_directory(tmp_path / "dir", CAPTURES, nodes=4, total=400_000, seed=1)
    assert corpus.files == 4 and 300_000 < corpus.size < 500_000
    for index, file in enumerate(sorted(corpus.path.iterdir())):
        text = file.read_text(encoding="utf-8", errors="surrogateescape")
        assert file.name == f"{host_name(index)}.log"
        assert set(nccl_hosts(text)) == {host_name(index)}
        assert set(_RAY_IP.findall(text)) == {f"10.0.{index}.1"}
        # A restart starts at a capture's first line; its NCCL pids are new on this node.
        pids_of_restart: defaultdict[int, set[str]] = defaultdict(set)
        restart = 0
        first_lines = {(FIXTURES / c.name).read_bytes().split(b"\n", 1)[0][:30] for c in CAPTURES}
        for line in text.splitlines():
            if line.encode()[:30] in first_lines:
                restart += 1
            m = _NCCL_PID.match(line)
            if m:
                pids_of_restart[restart].add(m.group(1))
        seen: set[str] = set()
        for pids in pids_of_restart.values():
            assert not pids & seen
            seen |= pids


def test_the_shuffled_file_holds_the_directorys_lines(tmp_path: Path) -> None:
    directory = build_directory(tmp_path / "dir", CAPTURES, nodes=3, total=200_000, seed=2)
    shuffled = build_shuffled(directory, tmp_path / "shuffled.log", seed=2)
    lines = sorted(b"".join(p.read_bytes() for p in sorted(directory.path.iterdir())).split(b"\n"))
    assert shuffled.size == directory.size and shuffled.lines == directory.lines
    assert sorted(shuffled.path.read_bytes().split(b"\n")) == lines
    assert not list(tmp_path.glob("*.bucket*"))
