"""Nodes whose clocks disagree (``analysis.clocks``): found from the times their lines say, said, and kept out
of the ranking's clock rule (O5) across them, so the causes keep their order."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

from sparktui.core.analysis.clocks import APART_S, clocks

ROOT = Path(__file__).resolve().parents[2]
EXCEPTION = ROOT / "tests" / "fixtures" / "nccl4" / "four-hosts-rank-exception"
HOUR = 3600.0


def test_nodes_whose_times_overlap_or_start_a_little_later_share_one_clock() -> None:
    said = [("a", 100.0), ("a", 900.0), ("b", 500.0), ("c", 900.0 + APART_S - 1)]
    assert not clocks(said).warnings()
    assert not clocks([("a", 1.0), ("a", 9 * HOUR)]).off_by  # one node: nothing to compare


def test_a_node_hours_ahead_of_the_others_is_said_and_by_how_much() -> None:
    said = [("a", 100.0), ("a", 200.0), ("b", 150.0), ("c", 3 * HOUR + 150.0)]
    found = clocks(said)
    assert found.off_by == {"c": 3 * HOUR - 50.0}
    (line,) = found.warnings()
    assert line.startswith("the nodes' clocks disagree: c's lines are 3.0 h ahead of the other nodes'")
    behind = clocks([("a", 5 * HOUR), ("b", 5 * HOUR + 60), ("c", HOUR)])
    assert behind.off_by == {"c": -4 * HOUR}
    assert "4.0 h behind" in behind.warnings()[0]


def test_a_clock_hours_off_does_not_reorder_the_causes(tmp_path: Path) -> None:
    """The trial's repro (issue 38, §4.11): rank 2 raises first; its one timestamped line moved 3 h on, its
    RuntimeError would read as later than the lost sockets it caused. It stays first, and the skew is said."""
    logs = tmp_path / "logs"
    shutil.copytree(EXCEPTION, logs)
    rank2 = logs / "rank2.log"
    text = rank2.read_text(encoding="utf-8")
    shifted = re.sub(r"(?<=[IWE]1201 )(\d\d)(?=:\d\d:\d\d)", lambda m: f"{int(m[1]) + 3:02d}", text)
    assert shifted != text
    rank2.write_text(shifted, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "sparktui", "diagnose", "--json", str(logs)],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    report = json.loads(done.stdout)
    first = report["findings"][0]
    assert (first["signature"], first["facts"]["exception"]) == ("unrecognised-failure", "RuntimeError")
    assert "node-c's clock is 3.0 h ahead of the others'" in {b["rule"]: b["text"] for b in first["because"]}["O5"]
    assert any("node-c's lines are 3.0 h ahead" in w for w in report["warnings"])
    assert all(f["because"] for f in report["findings"])
