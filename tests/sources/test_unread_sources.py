"""An input that could not be read is never read as a quiet, healthy one (trial 2026-12b §4 item 6): a
followed source that was never opened or connected in the whole session fails with why, is a warning (on
stderr and in the JSON's ``warnings``, and its source's ``error``), and the exit status is 2, as for a file
that could not be read, findings of the sources that were read printed all the same. A real closed port on
loopback, the test sshd's ``down`` alias (a closed port) and a real node."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from sparktui.cli import main
from tests.servers.sshd import SshdCluster

from ..conftest import FIXTURES

LOG = FIXTURES / "nccl" / "single-host-rendezvous-wrong-port" / "rank1.log"


@pytest.fixture
def closed_port() -> Iterator[int]:
    """A port on loopback that refuses connections: bound, never listening, so nobody else takes it."""
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        yield held.getsockname()[1]


def test_a_closed_metrics_port_is_not_healthy(closed_port: int, tmp_path: Path) -> None:
    uri = f"metrics://127.0.0.1:{closed_port}"
    done = subprocess.run(
        [sys.executable, "-m", "sparktui", "diagnose", "--follow", "--for", "3s", "--json", uri],
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "XDG_STATE_HOME": str(tmp_path / "state")},
    )
    assert done.returncode == 2, done.stderr
    diagnosis = json.loads(done.stdout)
    said = f"{uri}: never read: 127.0.0.1:{closed_port}: connection refused"
    assert diagnosis["warnings"] == [said]
    assert diagnosis["sources"][0]["error"] == said
    assert f"sparktui: {said}" in done.stderr.splitlines()


def test_the_trials_ssh_down(
    sshd_cluster: SshdCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    sshd_cluster.home_for(tmp_path / "home", monkeypatch)
    assert main(["diagnose", "--follow", "--for", "3s", "--no-spool", "ssh://down/x"]) == 2
    out, err = capsys.readouterr()
    assert out.startswith("1 source, 0 lines, no findings\n")
    assert "  ! " in out and "never read: " in out  # under the source, not a quiet one
    assert "sparktui: " in err and "never read: " in err and "connection refused" in err.lower()


def test_with_a_source_read_the_unread_one_is_still_named(
    sshd_cluster: SshdCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    sshd_cluster.home_for(tmp_path / "home", monkeypatch)
    logs = tmp_path / "logs"
    logs.mkdir()
    shutil.copy(LOG, logs / "rank1.log")
    code = main(
        [
            "diagnose",
            "--follow",
            "--for",
            "4s",
            "--json",
            "--no-spool",
            f"ssh://node-a/{logs}/rank1.log",
            "ssh://down/x",
        ]
    )
    out, err = capsys.readouterr()
    diagnosis = json.loads(out)
    assert code == 2  # as for files: an input that could not be read; what was read is diagnosed
    assert [f["signature"] for f in diagnosis["findings"]][:1] == ["torch-tcpstore-connect-timeout"]
    errors = {s["name"]: s.get("error") for s in diagnosis["sources"]}
    unread = [e for e in errors.values() if e]
    assert len(unread) == 1 and "never read: " in unread[0] and unread[0] in diagnosis["warnings"]
    assert sum(1 for line in err.splitlines() if "never read: " in line) == 1


def test_a_file_that_appears_late_is_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Waiting for a missing file stays: one that appears is read, and nothing is said about it."""
    import threading

    late = tmp_path / "late.log"
    timer = threading.Timer(1.0, lambda: shutil.copy(LOG, late))
    timer.start()
    try:
        code = main(["diagnose", "--follow", "--for", "4s", "--json", "--no-spool", str(late)])
    finally:
        timer.cancel()
    diagnosis = json.loads(capsys.readouterr().out)
    assert code == 1 and diagnosis["warnings"] == [] and "error" not in diagnosis["sources"][0]
