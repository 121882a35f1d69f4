"""A mistyped command (the trial's M5): `sparktui diagnoes x` opened the cockpit on two files that do not exist. A
first word that names no file and is close to a command is refused in one line naming the command meant; one
that names a file still opens it. And values mistyped as negative (M4, M6) get their option's own one line."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from sparktui.cli import main

from ..tui.test_terminal import ended, needs_tmux, screen, start, tmux

#: The tmux server may be older than this test: the code under test is named, as this process finds it. (Each
#: command prints an empty line first: a new pane loses its first line.)
HERE = "PYTHONPATH=" + shlex.quote(os.environ.get("PYTHONPATH", ""))


@pytest.mark.parametrize(
    ("argv", "meant"),
    [
        (["diagnoes", "x"], "diagnose"),
        (["stack"], "stacks"),
        (["chek", "spark-a"], "check"),
        (["replya", "b"], "replay"),
    ],
)
def test_a_typo_of_a_command_names_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], argv: list[str], meant: str
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err == f"sparktui: no command {argv[0]!r} (did you mean {meant}?), and no file of that name\n"


def test_a_file_of_that_name_is_opened(tmp_path: Path) -> None:
    """Here `diagnoes` is a log: the cockpit is what it asks for (with no terminal, its one line says so)."""
    (tmp_path / "diagnoes").write_text("a log\n")
    done = subprocess.run(
        [sys.executable, "-m", "sparktui", "diagnoes"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "HOME": str(tmp_path)},
        timeout=60,
        start_new_session=True,
        check=False,
    )
    assert done.returncode == 2 and "the cockpit needs a terminal" in done.stderr, done.stderr


@needs_tmux
def test_on_a_terminal_the_typo_is_said_and_no_cockpit_opens(tmp_path: Path) -> None:
    session = f"sparktui-typo-{uuid.uuid4().hex[:8]}"
    start(session, f"echo; {HERE} {sys.executable} -m sparktui diagnoes x; echo rc=$?", tmp_path)
    try:
        ended(session, 60)
        shown = screen(session)
        assert "no command 'diagnoes' (did you mean diagnose?)" in shown and "rc=2" in shown, shown
    finally:
        tmux("kill-session", "-t", session)


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["diagnose", "--follow", "--for", "-5s", "x"], "sparktui: --for: the duration must be positive\n"),
        (["diagnose", "--follow", "--for", "-.5m", "x"], "sparktui: --for: the duration must be positive\n"),
        (
            ["replay", "b", "--speed", "-1"],
            "sparktui: --speed: -1 is no speed: give times real time, or 0 for all at once\n",
        ),
        (
            ["demo", "--speed", "nan"],
            "sparktui: --speed: nan is no speed: give times real time, or 0 for all at once\n",
        ),
    ],
)
def test_a_negative_duration_or_speed_is_refused_by_its_own_check(
    capsys: pytest.CaptureFixture[str], argv: list[str], said: str
) -> None:
    """The trial's M4 and M6: `--for -5s` got argparse's "expected one argument" (the value taken for an option), and
    `replay --speed -1` replayed all at once as `--speed 0` does."""
    assert main(argv) == 2
    assert capsys.readouterr().err == said
