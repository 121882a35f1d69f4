"""``sparktui stacks`` on real hung jobs (torch's CPU build, gloo, 2 ranks) dumped by the real py-spy: on
this machine, and on a test node over the real sshd."""

from __future__ import annotations

import json
import platform
import sys
from pathlib import Path
from typing import Any

import pytest

from sparktui.cli import main
from sparktui.core.dirs import state_dir
from sparktui.core.stacks.script import BROUGHT
from tests.servers.fixtures import sshd_cluster
from tests.servers.sshd import SshdCluster

from .jobs import SLEEP_LINE, job

__all__ = ["sshd_cluster"]
#: The real py-spy of this machine (the PATH finds it through pyenv's shim, which a node's shell has not).
PY_SPY = Path(sys.executable).parent / "py-spy"


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, Any], str]:
    code = main(["stacks", "--json", *argv])
    captured = capsys.readouterr()
    return code, json.loads(captured.out), captured.err


def group(result: dict[str, Any], job: str) -> dict[str, Any]:
    return next(g for g in result["groups"] if g["job"] == job)


@pytest.fixture
def no_cluster_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_the_rank_that_never_joined_new_group(no_cluster_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with job("second-group", no_cluster_file) as j:
        code, result, err = run(["--samples", "2", "--interval", "0.5"], capsys)
    assert code == 1, result
    g = group(result, j.job)
    assert g["verdict"] == "hang"
    assert g["findings"][0] == (
        f"rank 1 on local is idle in application code, in serve_requests (scenario.py:{SLEEP_LINE}) and never entered "
        "new_group, which rank 0 waits in"
    )
    assert [(r["rank"], r["wait"], r["odd"]) for r in g["ranks"]] == [(0, "process-group", False), (1, "idle", True)]
    assert "sparktui: local: py-spy dump of pid" in err  # progress while gathering


def test_native_frames_name_the_same_wait(no_cluster_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``stacks --native`` (trial 2026-12c, S4): the same verdict and names, not c10d::TCPStore::wait."""
    with job("second-group", no_cluster_file) as j:
        code, result, _ = run(["--native", "--samples", "2", "--interval", "0.5"], capsys)
    assert code == 1, result
    g = group(result, j.job)
    assert g["findings"][0].endswith("and never entered new_group, which rank 0 waits in")
    assert g["ranks"][0]["function"] == "new_group"


def test_a_healthy_busy_job_is_progressing(no_cluster_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with job("healthy", no_cluster_file, 2, "--numel", "256") as j:
        code, result, _ = run(["--samples", "5", "--interval", "0.5"], capsys)
    g = group(result, j.job)
    assert g["verdict"] in ("progressing", "together"), g
    assert code == 0, result


def test_over_ssh(
    sshd_cluster: SshdCluster, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    sshd_cluster.home_for(tmp_path / "home", monkeypatch)
    monkeypatch.chdir(tmp_path)
    with job("second-group", tmp_path) as j:
        code, result, _ = run(["node-a", "--samples", "1"], capsys)  # sshd's PATH has no py-spy
        assert code == 2, result
        assert group(result, j.job)["verdict"] == "unread"
        assert result["problems"] == [
            "node-a: py-spy is not installed: its ranks were found but not dumped (sparktui stacks --bring-py-spy "
            "copies this machine's there for the run, sparktui play py-spy-stacks installs one with pip; both remove "
            "it after)"
        ]
        code, result, _ = run(["node-a", "--samples", "2", "--interval", "0.5", "--py-spy", str(PY_SPY)], capsys)
        assert code == 1, result
        g = group(result, j.job)
        assert g["findings"][0].startswith("rank 1 on node-a is idle in application code, in serve_requests")
        assert {r["node"] for r in g["ranks"]} == {"node-a"}
        # without a py-spy on the node: this machine's brought over the SSH connection, used, and taken away
        code, result, err = run(["node-a", "--samples", "1", "--bring-py-spy", "--yes"], capsys)
        assert code == 1, (result, err)
        assert group(result, j.job)["findings"][0].startswith("rank 1 on node-a is idle in application code")
        assert result["problems"] == []
    said = " ".join(err.split())
    assert f"sparktui: node-a: copy {PY_SPY} (this machine's, {platform.machine()}) to {BROUGHT}, dump" in said
    assert not Path(BROUGHT).parent.parent.exists()  # removed after
    audit = (state_dir() / "audit.jsonl").read_text()
    assert "bring py-spy" in audit and "remove the brought py-spy" in audit and "# input: " in audit
