"""Where an export goes (the trial's R7, R8): every export makes a folder of its own, even two in one second on two
threads; `--report DIR` replaces an earlier export there whole, and refuses a folder holding anything else."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

from sparktui.core.report.export import new_folder

from ..conftest import FIXTURES

HANG = FIXTURES / "nccl" / "two-hosts-second-group-not-joined"
OTHER = FIXTURES / "nccl4" / "four-hosts-rank-exception"


def test_exports_racing_for_one_name_each_get_a_folder(tmp_path: Path) -> None:
    made: list[Path] = []
    start = threading.Barrier(8)

    def one() -> None:
        start.wait()
        made.append(new_folder(tmp_path, "sparktui-report-20261206-035644"))

    threads = [threading.Thread(target=one) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(set(made)) == 8 and all(p.is_dir() for p in made)
    assert sorted(p.name for p in made)[0] == "sparktui-report-20261206-035644"
    assert "sparktui-report-20261206-035644-8" in {p.name for p in made}


def diagnose(where: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sparktui", "diagnose", *args],
        capture_output=True,
        text=True,
        cwd=where,
        env={**os.environ, "HOME": str(where)},
        timeout=120,
        check=False,
    )


def test_a_second_report_into_one_folder_keeps_nothing_of_the_first(tmp_path: Path) -> None:
    """`diagnose A --report r; diagnose B --report r` left A's logs in r/bundle beside B's."""
    first = diagnose(tmp_path, str(HANG), "--report", "r")
    assert first.returncode == 1 and (tmp_path / "r" / "bundle" / "rank0.log").exists(), first.stderr
    second = diagnose(tmp_path, str(OTHER / "rank2.log"), "--report", "r")
    assert second.returncode == 1, second.stderr
    logs = sorted(p.name for p in (tmp_path / "r" / "bundle").iterdir() if p.suffix == ".log")
    assert logs == ["rank2.log"]
    assert "rank2.log" in (tmp_path / "r" / "bundle" / "bundle.toml").read_text()


def test_a_report_into_a_folder_of_other_files_is_refused(tmp_path: Path) -> None:
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "notes.txt").write_text("mine\n")
    done = diagnose(tmp_path, str(HANG), "--report", "r")
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "--report r: the folder holds files that are not an earlier sparktui report" in done.stderr
    assert sorted(p.name for p in (tmp_path / "r").iterdir()) == ["notes.txt"]
