"""`sparktui check` polish (the trial's C8, C10): a node that does not answer is named with the reason, and the
check's report heads itself with its nodes and speaks in the check's verdicts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sparktui.cli import main


def test_a_node_that_does_not_answer_is_named_with_the_reason(capsys: pytest.CaptureFixture[str]) -> None:
    """C8: `node-unreachable` said `spark-c did not answer: nothing of it could be checked`, never why."""
    assert main(["check", "--json", "--no-probe", "root@127.0.0.1:1"]) == 1
    (unreachable,) = [
        f for f in json.loads(capsys.readouterr().out)["findings"] if f["signature"] == "node-unreachable"
    ]
    assert unreachable["detail"].startswith("root@127.0.0.1:1 did not answer (")
    assert "Connection refused" in unreachable["detail"], unreachable["detail"]


def test_the_checks_report_heads_itself_with_its_nodes_and_its_verdicts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """C10: the report of a two-node check said `0 sources, 0 lines · 0 nodes`, graded BLOCK as ERROR, and put
    `first at check:0` and `seen 2x` under findings no log line shows."""
    assert main(["check", "--no-probe", "root@127.0.0.1:1", "root@127.0.0.1:2", "--report", str(tmp_path / "r")]) == 1
    html = (tmp_path / "r" / "report.html").read_text()
    md = (tmp_path / "r" / "report.md").read_text()
    assert "2 nodes checked, verdict block" in html and "| checked | 2 nodes checked, verdict block |" in md
    assert "0 sources" not in html and "0 sources" not in md
    assert '<span class="pill error">block</span>' in html and "(1 block)" in html
    assert "**block** · `node-unreachable`" in md
    assert "check:0" not in html and "check:0" not in md and "seen 2x" not in html
