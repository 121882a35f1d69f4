"""The live-sources issue's end-to-end check: one `sparktui diagnose --follow --for` over a file on an SSH
node, a container on an SSH node (through its forwarded Docker socket) and a local container, while the
SSH connections are cut and come back. Every line arrives once and every failure in the logs is named.
(The Ray log API has its own end-to-end test in a loopback-only network namespace: test_ray.py.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from sparktui.cli import main
from tests.conftest import FIXTURES
from tests.servers.dockerd import Containers, DockerEngine, log_lines
from tests.servers.sshd import SshdCluster
from tests.waiting import wait_until

from .test_ssh import followers_of

NODE_SOCKET = Path("/var/run/docker.sock")
IFNAME = FIXTURES / "nccl" / "two-hosts-wrong-socket-ifname" / "rank0.log"
RAY_BACKEND = "vllm/ray-backend-without-ray/server.log"
PORT_IN_USE = "vllm/port-in-use/server.log"
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def node_docker_socket(docker_engine: DockerEngine) -> Iterator[None]:
    """The test nodes are this machine: their Docker socket, where a node's engine listens, is the test
    engine's."""
    engine = docker_engine.base_url.removeprefix("unix://")
    if NODE_SOCKET.exists() or NODE_SOCKET.is_symlink():
        if os.path.realpath(NODE_SOCKET) != os.path.realpath(engine):
            pytest.fail(f"{NODE_SOCKET} belongs to another Docker engine; the test nodes need it for theirs")
        yield
        return
    NODE_SOCKET.symlink_to(engine)
    try:
        yield
    finally:
        NODE_SOCKET.unlink()


def test_follow_everything_while_connections_drop(
    sshd_cluster: SshdCluster,
    docker_containers: Containers,
    node_docker_socket: None,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    sshd_cluster.home_for(tmp_path / "home", monkeypatch)
    monkeypatch.setenv("DOCKER_HOST", docker_containers.engine.base_url)
    local = docker_containers.create(log=RAY_BACKEND, env={"PAUSE_AT": "15"})
    remote = docker_containers.create(log=PORT_IN_USE, env={"PAUSE_AT": "5"})
    rank0 = IFNAME.read_text().splitlines(True)
    path = tmp_path / "rank0.log"
    path.write_text("".join(rank0[:12]))
    uris = [f"ssh://node-a/{path}", f"ssh://node-b/docker/{remote}", f"docker://{local}"]
    result: dict[str, int] = {}
    run = threading.Thread(
        target=lambda: result.setdefault(
            "code", main(["diagnose", "--follow", "--for", "20s", "--json", "--no-spool", *uris])
        )
    )
    run.start()
    # the window is fixed by --for: every source connected (both nodes' SSH connections up, the file's remote
    # follower reading) before the connections are cut
    wait_until(
        lambda: all(sshd_cluster[a].sessions() for a in ("node-a", "node-b")) and followers_of(path),
        30,
        "every source connected",
    )
    for alias in ("node-a", "node-b"):
        sshd_cluster[alias].kill_connections()
    with path.open("a") as fh:
        fh.writelines(rank0[12:])
    (docker_containers.control / "go").touch()
    run.join(timeout=60)
    assert not run.is_alive()
    captured = capsys.readouterr()
    doc = json.loads(captured.out)
    found = {f["signature"] for f in doc["findings"]}
    assert {"nccl-socket-ifname-no-interface", "vllm-ray-not-installed", "server-port-in-use"} <= found
    lines = {s["name"]: s["lines"] for s in doc["sources"]}
    assert lines[f"node-a:{path}"] == len(rank0)
    assert lines[f"docker://{local}"] == len(log_lines(FIXTURES / RAY_BACKEND))
    assert lines[f"ssh://node-b/docker/{remote}"] == len(log_lines(FIXTURES / PORT_IN_USE)), captured.err
    assert "retrying" in captured.err  # the cut connections were seen, and recovered from
    assert result["code"] == 1


def follow_for(seconds: int, *uris: str) -> subprocess.CompletedProcess[str]:
    """``sparktui diagnose --follow --for Ns --json --no-spool URI...`` in a process of its own (the test's HOME)."""
    command = [sys.executable, "-m", "sparktui", "diagnose", "--follow", "--for", f"{seconds}s", "--json", "--no-spool"]
    return subprocess.run([*command, *uris], capture_output=True, text=True, timeout=120, cwd=ROOT)


def test_following_a_container_over_ssh_ends_without_a_traceback(
    sshd_cluster: SshdCluster,
    docker_containers: Containers,
    node_docker_socket: None,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Trial 12b §4 item 15 (N14): the session ends while the forwarded Docker socket still carries the log
    stream; asyncio printed 'Exception in callback ... CancelledError' for it."""
    sshd_cluster.home_for(tmp_path / "home", monkeypatch)
    remote = docker_containers.create(log=PORT_IN_USE, env={"PAUSE_AT": "5"})
    done = follow_for(4, f"ssh://node-b/docker/{remote}")
    assert "Traceback" not in done.stderr and "Exception in callback" not in done.stderr, done.stderr
    assert {s["name"]: s["lines"] for s in json.loads(done.stdout)["sources"]} == {f"ssh://node-b/docker/{remote}": 5}
    assert done.returncode == 0  # what it read so far is healthy


def test_a_node_without_a_docker_engine_says_so_in_its_source_only(
    sshd_cluster: SshdCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Trial 12b §4 item 15 (N16): each retry printed a bare 'node-b: cannot forward to /var/run/docker.sock'
    line besides the source's own."""
    assert not NODE_SOCKET.exists(), f"{NODE_SOCKET} is there: this test needs a node without a Docker engine"
    sshd_cluster.home_for(tmp_path / "home", monkeypatch)
    done = follow_for(3, "ssh://node-b/docker/c8")
    assert "Traceback" not in done.stderr and "Exception in callback" not in done.stderr, done.stderr
    said = done.stderr.splitlines()
    assert said and all(line.startswith("sparktui: ") for line in said), said
    assert any("ssh://node-b/docker/c8: retrying" in line for line in said), said
    assert done.returncode == 2  # never read
