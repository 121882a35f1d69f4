"""`sparktui play` runs a playbook on the SSH test nodes: exact commands, values quoted, the audit log
written, a failed step rolled back, and read-only mode refusing anything that changes a node."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sparktui.cli import main
from tests.servers.sshd import SshdCluster

BOOK = """
id = "mark-nodes"
title = "Write a marker on every node"
key = "k"
risk = "changes-node"
description = "Writes the message into a file on every node; a failing check rolls it back."

[params.message]
kind = "text"
from = ["fact:message", "ask"]

[params.dir]
kind = "path"
from = ["ask"]

[params.fail]
kind = "int"
from = ["ask"]
default = "0"

[params.refuse]
kind = "int"
from = ["ask"]
default = "0"

[[steps]]
title = "precheck"
on = "head"
changes = false
run = "test {refuse} = 0"

[[steps]]
title = "write the marker"
on = "all"
run = "printf '%s\\\\n' {message} > {dir}/marker-{node}"

[[steps]]
title = "check"
on = "head"
run = "test {fail} = 0"

[[rollback]]
title = "remove the markers"
on = "all"
run = "rm -f {dir}/marker-{node}"
"""


@pytest.fixture
def setup(sshd_cluster: SshdCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    sshd_cluster.home_for(tmp_path / "home", monkeypatch)
    books = tmp_path / "books"
    books.mkdir()
    (books / "mark-nodes.toml").write_text(BOOK)
    (tmp_path / "out").mkdir()
    return tmp_path


def play(tmp: Path, *extra: str) -> int:
    return main(
        [
            "play",
            "mark-nodes",
            "--playbooks",
            str(tmp / "books"),
            "--node",
            "node-a",
            "--node",
            "node-b",
            "--set",
            f"dir={tmp / 'out'}",
            "--yes",
            *extra,
        ]
    )


def audit_entries() -> list[dict[str, object]]:
    import os

    path = Path(os.environ["XDG_STATE_HOME"]) / "sparktui" / "audit.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_runs_on_every_node_with_the_value_quoted(setup: Path, capsys: pytest.CaptureFixture[str]) -> None:
    evil = "hi'; touch " + str(setup / "pwned") + " #$(id)"
    assert play(setup, "--set", f"message={evil}") == 0
    assert not (setup / "pwned").exists()
    assert (setup / "out" / "marker-node-a").read_text() == evil + "\n"
    assert (setup / "out" / "marker-node-b").read_text() == evil + "\n"
    entries = audit_entries()
    assert [(e["node"], e["exit_code"]) for e in entries] == [("node-a", 0)] * 2 + [("node-b", 0), ("node-a", 0)]
    assert all(e["playbook"] == "mark-nodes" for e in entries)


def test_a_failed_step_rolls_back(setup: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert play(setup, "--set", "message=x", "--set", "fail=1") == 1
    assert not list((setup / "out").iterdir())  # the rollback removed what the first step wrote
    assert "rollback ran 2 commands" in capsys.readouterr().out


def test_a_failed_check_before_any_change_offers_no_rollback(setup: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert play(setup, "--set", "message=x", "--set", "refuse=1") == 1
    assert "Failed before changing anything (only checks ran)" in capsys.readouterr().out
    assert [e["step"] for e in audit_entries()] == ["precheck"]


def test_read_only_mode_runs_nothing_that_changes_a_node(setup: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert play(setup, "--set", "message=x", "--readonly") == 2
    assert "refused in read-only mode" in capsys.readouterr().err
    assert not list((setup / "out").iterdir())


def test_without_a_terminal_or_yes_nothing_runs(setup: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        [
            "play",
            "mark-nodes",
            "--playbooks",
            str(setup / "books"),
            "--node",
            "node-a",
            "--set",
            f"dir={setup / 'out'}",
            "--set",
            "message=x",
        ]
    )
    assert code == 2 and "--yes" in capsys.readouterr().err
    assert not list((setup / "out").iterdir())
