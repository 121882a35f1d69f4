"""`sparktui diagnose --follow --for` over real SSH: the same root cause as reading the files. (A silent
hang needs its stall time to pass before a live session names it, tests/core/test_stages.py covers that;
a session that ends sooner says the stall is pending.)"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from sparktui.cli import main
from tests.servers.sshd import SshdCluster

from ..conftest import FIXTURES

HANG = FIXTURES / "nccl" / "two-hosts-second-group-not-joined"
IFNAME = FIXTURES / "nccl" / "two-hosts-wrong-socket-ifname"


def test_follow_over_ssh(
    sshd_cluster: SshdCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    sshd_cluster.home_for(tmp_path / "home", monkeypatch)
    logs = tmp_path / "logs"
    logs.mkdir()
    for rank in ("rank0.log", "rank1.log"):
        shutil.copy(IFNAME / rank, logs / rank)
    report = tmp_path / "report"
    code = main(
        [
            "diagnose",
            "--follow",
            "--for",
            "6s",
            "--json",
            "--report",
            str(report),
            f"ssh://node-a/{logs}/rank0.log",
            f"ssh://node-b/{logs}/rank1.log",
        ]
    )
    captured = capsys.readouterr()
    doc = json.loads(captured.out)
    assert code == 1, (captured.err, doc["sources"], doc["findings"])
    assert doc["findings"][0]["signature"] == "nccl-socket-ifname-no-interface"
    expected = [len((IFNAME / r).read_text().splitlines()) for r in ("rank0.log", "rank1.log")]
    assert [s["lines"] for s in doc["sources"]] == expected
    # the incident on the test nodes, exported: four forms, and the bundle re-analyses to the same findings
    assert {p.name for p in report.iterdir()} == {"report.md", "report.html", "report.json", "bundle"}
    assert main(["diagnose", "--json", str(report / "bundle")]) == 1
    again = json.loads(capsys.readouterr().out)
    assert [f["signature"] for f in again["findings"]] == [f["signature"] for f in doc["findings"]]


def test_an_unknown_host_key_is_refused_with_one_line(
    sshd_cluster: SshdCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    sshd_cluster.home_for(tmp_path / "home", monkeypatch)
    (tmp_path / "home" / ".ssh" / "known_hosts").write_text("")
    main(["diagnose", "--follow", "--for", "3s", "--json", "--no-spool", f"ssh://node-a/{HANG}/rank0.log"])
    err = capsys.readouterr().err
    assert "failed" in err and "node-a" in err and "Traceback" not in err
    assert "ssh-keyscan" in err and "connect once with --trust-new-host-key" in err  # both ways to fix it


def test_a_follow_shorter_than_the_stall_window_says_the_stall_is_pending(
    sshd_cluster: SshdCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    sshd_cluster.home_for(tmp_path / "home", monkeypatch)
    code = main(["diagnose", "--follow", "--for", "7s", "--no-spool", f"ssh://node-a/{HANG}/rank0.log"])
    out = capsys.readouterr().out
    assert code == 0 and "no findings" in out
    (line,) = [line for line in out.splitlines() if "stall pending" in line]
    assert "rank 0 on spark-a has stopped at 'communicator init started'" in line
    assert "of 60)" in line and "A later NCCL communicator never completed on the ranks that began it" in line
