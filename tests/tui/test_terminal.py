"""`sparktui demo` in a real terminal (tmux): the screen fills, the hang is named, keys work."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
import uuid

import pytest

TMUX = shutil.which("tmux")


def screen(session: str) -> str:
    return subprocess.run([TMUX or "tmux", "capture-pane", "-p", "-t", session], capture_output=True, text=True).stdout


def wait_for(session: str, text: str, seconds: float = 30) -> str:
    deadline = time.monotonic() + seconds
    shown = ""
    while time.monotonic() < deadline:
        shown = screen(session)
        if text in shown:
            return shown
        time.sleep(0.2)
    raise AssertionError(f"{text!r} never appeared; the screen was:\n{shown}")


@pytest.mark.skipif(TMUX is None, reason="tmux is installed by the test command (tools/test.sh)")
def test_demo_in_tmux() -> None:
    assert TMUX is not None
    session = f"sparktui-{uuid.uuid4().hex[:8]}"
    command = f"{sys.executable} -m sparktui demo --speed 60"
    subprocess.run([TMUX, "new-session", "-d", "-s", session, "-x", "170", "-y", "48", command], check=True)
    try:
        shown = wait_for(session, "A later NCCL communicator never completed")
        assert "spark-a" in shown and "spark-b" in shown
        assert "communicators ready" in shown
        subprocess.run([TMUX, "send-keys", "-t", session, "?"], check=True)
        wait_for(session, "sparktui: keys")
        subprocess.run([TMUX, "send-keys", "-t", session, "Escape"], check=True)
        time.sleep(0.5)  # a lone ESC followed at once by a key reads as alt+key
        subprocess.run([TMUX, "send-keys", "-t", session, "q"], check=True)
        deadline = time.monotonic() + 10
        while (
            time.monotonic() < deadline
            and session in subprocess.run([TMUX, "list-sessions"], capture_output=True, text=True).stdout
        ):
            time.sleep(0.2)
        assert session not in subprocess.run([TMUX, "list-sessions"], capture_output=True, text=True).stdout
    finally:
        subprocess.run([TMUX, "kill-session", "-t", session], capture_output=True)
