"""Thousands of followed files under a low ``ulimit -n`` (trial 2026-12b §4 item 2, N26): the soft limit is
raised for them up to the hard one; past the hard one, the files left over are each a warning saying why and
what to do (exit 2), and the others, the spool and the diagnosis go on."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from sparktui.core.sources.descriptors import RESERVE

ROOT = Path(__file__).resolve().parents[2]


def many_logs(folder: Path, count: int) -> Path:
    folder.mkdir()
    for n in range(count):
        (folder / f"n{n:04d}.log").write_text(f"worker {n} started\n")
    return folder


def spooled(home: Path) -> int:
    """The logs the session's spool holds so far (each made at its source's first batch, written at once)."""
    return sum(1 for _ in (home / ".local/state/sparktui/incidents").glob("*/*/*.log"))


def follow(folder: Path, home: Path, soft: int, hard: int, files: int) -> subprocess.CompletedProcess[str]:
    """``ulimit -Sn SOFT -Hn HARD; sparktui diagnose --follow --json FOLDER``, ended (SIGTERM, as ``timeout``
    would) once its spool holds ``files`` logs."""
    env = {**os.environ, "HOME": str(home)}
    for name in ("XDG_STATE_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME"):
        env.pop(name, None)
    script = f'ulimit -Sn {soft} && ulimit -Hn {hard} && exec "$@"'
    command = ["bash", "-c", script, "bash", sys.executable, "-m", "sparktui", "diagnose", "--follow", "--json"]
    run = subprocess.Popen(
        [*command, str(folder)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT
    )
    try:
        deadline = time.monotonic() + 240
        while spooled(home) < files:
            assert run.poll() is None, run.communicate()
            assert time.monotonic() < deadline, f"{spooled(home)} of {files} files spooled in 240 s"
            time.sleep(0.2)
        run.send_signal(signal.SIGTERM)
        out, err = run.communicate(timeout=120)
    finally:
        if run.poll() is None:
            run.kill()
            run.communicate()
    return subprocess.CompletedProcess(command, run.returncode, out, err)


def test_five_thousand_files_followed_under_a_soft_limit_of_1024(tmp_path: Path) -> None:
    folder = many_logs(tmp_path / "k5", 5000)
    done = follow(folder, tmp_path / "home", 1024, 8192, 5000)
    assert "Traceback" not in done.stderr and "stopped" not in done.stderr, done.stderr[-2000:]
    report = json.loads(done.stdout)
    assert report["warnings"] == []
    assert sorted(s["lines"] for s in report["sources"]) == [1] * 5000
    assert done.returncode == 0, done.stderr[-2000:]


def test_files_past_the_hard_limit_are_each_a_warning_and_the_rest_is_read(tmp_path: Path) -> None:
    folder = many_logs(tmp_path / "k2", 2000)
    room = 1024 - RESERVE
    done = follow(folder, tmp_path / "home", 1024, 1024, room)
    assert "Traceback" not in done.stderr and "spool stopped" not in done.stderr, done.stderr[-2000:]
    assert done.stdout, (done.returncode, done.stderr[-2000:])
    report = json.loads(done.stdout)
    read = [s for s in report["sources"] if s["lines"] == 1]
    assert len(read) == room
    unread = [w for w in report["warnings"] if "no open file left for it" in w]
    assert len(unread) == 2000 - room, report["warnings"][:3]
    assert "follows 2000 files and may open 1024 files" in unread[0] and "ulimit -Hn" in unread[0]
    assert all("\n" not in w for w in unread)
    assert done.returncode == 2
    assert "no open file left for it" in done.stderr  # said in text too


def test_a_low_hard_limit_still_follows_most_of_what_it_allows(tmp_path: Path) -> None:
    """``ulimit -n 256``: a quarter is kept for the rest, not 256, so 192 files are followed rather than none."""
    folder = many_logs(tmp_path / "k3", 300)
    done = follow(folder, tmp_path / "home", 256, 256, 192)
    report = json.loads(done.stdout)
    assert len([s for s in report["sources"] if s["lines"] == 1]) == 192
    assert len([w for w in report["warnings"] if "no open file left for it" in w]) == 108
    assert done.returncode == 2
