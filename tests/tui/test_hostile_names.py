"""The trial's repros (2026-12c, E2, E4 and E7) in a real terminal (tmux), every byte the cockpit wrote read back
(``pipe-pane``): a log file whose name holds a title-setting OSC and a right-to-left override, and a bundle whose
``node`` holds them, neither retitle the terminal nor reach it raw, in the cockpit or in a replay; the fact with
an override is shown escaped."""

from __future__ import annotations

import os
import shlex
import sys
import uuid
from pathlib import Path

from ..cli.test_hostile_names import BIDI_LINE, CAPTURED, HOSTILE_NAME
from ..waiting import wait_until
from .test_terminal import needs_tmux, screen, start, tmux, wait_for

FINDING = "The model directory (or its config.json)"


def _watched(tmp_path: Path, arguments: str) -> tuple[str, Path]:
    """``sparktui ARGUMENTS`` in a tmux session whose every output byte goes to a file, from its first."""
    session = f"sparktui-{uuid.uuid4().hex[:8]}"
    raw = tmp_path / "raw"
    path = shlex.quote(os.environ.get("PYTHONPATH", ""))  # the code under test, whatever tmux server runs it
    start(session, f"sleep 1; PYTHONPATH={path} {shlex.quote(sys.executable)} -m sparktui {arguments}", tmp_path)
    tmux("pipe-pane", "-t", session, f"cat >> {shlex.quote(str(raw))}")
    return session, raw


def _assert_inert(session: str, raw: Path) -> None:
    stream = raw.read_bytes()
    assert b"PWNED-TITLE" not in stream  # the OSC's payload never reached the terminal, nor its title
    assert "\u202e".encode() not in stream  # the override in the name, the node and the fact: never raw
    assert "PWNED" not in tmux("display-message", "-p", "-t", session, "#{pane_title}")


@needs_tmux
def test_a_hostile_file_name_and_fact_never_reach_the_terminal(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    lines = CAPTURED.read_text().splitlines(keepends=True)
    error = next(i for i, line in enumerate(lines) if "Invalid repository ID" in line)
    (logs / HOSTILE_NAME).write_text("".join(lines[error - 5 : error + 2]))
    (logs / "bidi.log").write_text(BIDI_LINE)
    session, raw = _watched(tmp_path, "logs/*")  # the shell gives the names as they are: the title holds them
    try:
        shown = wait_for(session, FINDING, seconds=60)
        assert "name\\u202egol" in shown  # the column of the node named from the file
        tmux("send-keys", "-t", session, "Enter")  # the finding in full: its facts
        wait_for(session, "Q\\u202ewenx", seconds=20)
        _assert_inert(session, raw)
    finally:
        tmux("kill-session", "-t", session)


@needs_tmux
def test_a_replay_of_a_bundle_with_a_hostile_node_never_retitles_the_terminal(tmp_path: Path) -> None:
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    (bundle / "a.log").write_text(BIDI_LINE)
    (bundle / "bundle.toml").write_text(
        'format = 1\ntitle = "t"\n[[sources]]\nname = "a.log"\nnode = "evil\\u001b]0;PWNED-TITLE\\u0007\\u202enode"\n'
    )
    session, raw = _watched(tmp_path, "replay --speed 0 bundle")
    try:
        wait_for(session, FINDING, seconds=60)
        wait_until(lambda: "evil\\u202enode" in screen(session), 20, "the node shown, its override escaped")
        _assert_inert(session, raw)
    finally:
        tmux("kill-session", "-t", session)
