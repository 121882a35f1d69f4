"""Floods of per-source lines (the trial's R2 and F12): a resume of thousands of files said `resumed: ...` once per
file, and thousands of files past a hard limit on open files said `!` and `retrying` for each, thousands of times.
A few of each kind are shown, then one line counts the rest; the JSON still lists every source's."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

from sparktui.core.floods import Flood

FILES = 300


def test_one_line_per_kind_past_the_first_few() -> None:
    flood = Flood()
    shown = [flood.admit(f"n{i:04}.log", f"n{i:04}.log: retrying in {i / 10} s") for i in range(100)]
    shown += [flood.admit("a.log", "another thing")]
    assert shown == [True] * 3 + [False] * 97 + [True]
    assert flood.folded() == ["… and the same from 97 more (like n0002.log's above), not shown"]


def files(tmp_path: Path) -> Path:
    logs = tmp_path / "k"
    logs.mkdir()
    for i in range(FILES):
        (logs / f"n{i:04}.log").write_text(f"hello {i}\n")
    return logs


def follow(tmp_path: Path, *extra: str, files_at_most: int = 0) -> subprocess.CompletedProcess[str]:
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (files_at_most, files_at_most))

    return subprocess.run(
        [sys.executable, "-m", "sparktui", "diagnose", "--follow", "--for", "4s", *extra, "k"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "XDG_STATE_HOME": str(tmp_path / "state"), "HOME": str(tmp_path)},
        timeout=120,
        preexec_fn=limit if files_at_most else None,
        check=False,
    )


def test_a_resume_of_many_files_says_it_in_a_few_lines(tmp_path: Path) -> None:
    files(tmp_path)
    assert follow(tmp_path).returncode == 0
    done = follow(tmp_path)
    assert done.returncode == 0, done.stderr
    out = done.stdout.splitlines()
    assert [line.startswith("  ! n000") and "resumed: the" in line for line in out[1:4]] == [True] * 3
    assert out[4] == f"  ! … and the same from {FILES - 3} more (like n0002.log's above), not shown (--json lists each)"
    assert len(out) == 5
    err = [line for line in done.stderr.splitlines() if "resumed: the" in line or "… and" in line]
    assert (
        len(err) == 4
        and err[3] == f"sparktui: … and the same from {FILES - 3} more (like n0002.log's above), not shown"
    )
    listed = json.loads(follow(tmp_path, "--json").stdout)
    assert sum(any(n.startswith("resumed:") for n in s["notes"]) for s in listed["sources"]) == FILES


def test_many_files_past_the_hard_limit_say_it_in_a_few_lines(tmp_path: Path) -> None:
    """Under a hard limit of 100 open files, 300 files cannot all be opened: each is still named in the JSON."""
    files(tmp_path)
    done = follow(tmp_path, "--fresh", files_at_most=100)
    assert done.returncode == 2, done.stderr
    never = [line for line in done.stdout.splitlines() if "never read" in line]
    assert len(never) == 3 and "no open file left for it" in never[0]
    assert "  ! … and the same from" in done.stdout
    err = done.stderr.splitlines()
    retrying = {line.split(": ")[1] for line in err if "retrying cannot open" in line}  # each retry of three
    assert len(retrying) == 3, retrying
    assert sum("never read" in line for line in err) == 3
    assert len(err) < 40, done.stderr
