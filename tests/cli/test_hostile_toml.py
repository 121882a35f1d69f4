"""Hostile TOML files (the trial's H1, H3, H5, H6): nesting deeper than the parser can follow, a FIFO, a folder or
a device where a file is looked for. Each gets one line naming the file and the reason, exit 2, and never a
traceback or a wait for ever."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from ..tui.test_terminal import ended, needs_tmux, screen, start, tmux

#: The tmux server may be older than this test: the code under test is named, as this process finds it. (Each
#: command prints an empty line first: a new pane loses its first line.)
HERE = "PYTHONPATH=" + shlex.quote(os.environ.get("PYTHONPATH", ""))

LOG = Path(__file__).resolve().parents[1] / "fixtures" / "nccl" / "two-hosts-second-group-not-joined" / "rank0.log"


def run(where: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOME": str(where)}
    return subprocess.run(
        [sys.executable, "-m", "sparktui", *args],
        capture_output=True,
        text=True,
        cwd=where,
        env=env,
        timeout=60,
        start_new_session=True,
        check=False,
    )


def one_line(done: subprocess.CompletedProcess[str], *said: str) -> None:
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
    for text in said:
        assert text in done.stderr, done.stderr


def deep(depth: int) -> str:
    return "x = " + "[" * depth + "]" * depth + "\n"


@pytest.mark.parametrize("command", [["play", "free-port", "--dry-run"], ["check", "--no-probe"], ["stacks"]])
def test_a_cluster_file_nested_100000_deep_is_one_line(tmp_path: Path, command: list[str]) -> None:
    (tmp_path / "sparktui.toml").write_text(deep(100_000))
    one_line(run(tmp_path, *command), "sparktui.toml: not valid TOML", "nested too deeply")


@pytest.mark.parametrize(
    ("make", "said"),
    [
        (lambda p: p.mkdir(), "it is a folder, not a regular file"),
        (os.mkfifo, "it is a FIFO, not a regular file"),
        (lambda p: p.symlink_to("/dev/zero"), "it is a character device, not a regular file"),
    ],
)
def test_a_cluster_file_that_is_no_file_is_said_not_passed_over(
    tmp_path: Path, make: Callable[[Path], object], said: str
) -> None:
    """It was taken for no cluster file at all (`runs on this machine`), exit 0."""
    make(tmp_path / "sparktui.toml")
    one_line(run(tmp_path, "play", "free-port", "--dry-run"), f"{tmp_path / 'sparktui.toml'}: cannot read: {said}")


def test_a_settings_file_that_is_a_fifo_is_said(tmp_path: Path) -> None:
    config = tmp_path / "config"
    (config / "sparktui").mkdir(parents=True)
    os.mkfifo(config / "sparktui" / "settings.toml")
    done = subprocess.run(
        [sys.executable, "-m", "sparktui", "diagnose", "--follow", "--for", "1s", str(LOG)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "HOME": str(tmp_path), "XDG_CONFIG_HOME": str(config)},
        timeout=60,
        check=False,
    )
    one_line(done, "settings.toml: cannot read: it is a FIFO")


def test_a_signature_nested_50000_deep_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "sigs").mkdir()
    (tmp_path / "sigs" / "x.toml").write_text(deep(50_000))
    one_line(run(tmp_path, "diagnose", "--signatures", "sigs", str(LOG)), "x.toml: not valid TOML", "too deeply")


def test_a_fifo_among_the_signatures_is_refused_not_waited_on(tmp_path: Path) -> None:
    """`diagnose --signatures sigs` waited for a writer to the FIFO for ever."""
    (tmp_path / "sigs").mkdir()
    os.mkfifo(tmp_path / "sigs" / "x.toml")
    one_line(run(tmp_path, "diagnose", "--signatures", "sigs", str(LOG)), "x.toml: cannot read: it is a FIFO")


@needs_tmux
def test_the_cockpit_on_a_deeply_nested_cluster_file_says_it_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "sparktui.toml").write_text(deep(100_000))
    session = f"sparktui-deep-{os.getpid()}"
    start(session, f"echo; {HERE} {sys.executable} -m sparktui {LOG}; echo rc=$?", tmp_path)
    try:
        ended(session, 60)
        shown = screen(session)
        assert "nested too deeply" in shown and "rc=2" in shown and "Traceback" not in shown, shown
    finally:
        tmux("kill-session", "-t", session)
