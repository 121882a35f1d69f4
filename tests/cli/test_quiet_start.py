"""A fresh install is quiet: no third-party warning reaches the user (trial 2026-12c §4.1).

cryptography 51 marks DSA deprecated and asyncssh names DSA classes at import, so a first ``play`` printed ten
lines of ``CryptographyDeprecationWarning``. The commands run as a user runs them, in a process of their own,
with Python's default warning filters switched fully on."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest


def _sparktui(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONWARNINGS": "default"}
    return subprocess.run(
        [sys.executable, "-m", "sparktui", *args], capture_output=True, text=True, env=env, timeout=120, check=False
    )


@pytest.mark.parametrize(
    "args",
    [
        ("play", "free-port", "--set", "port=8000", "--dry-run"),  # the README's first playbook
        ("--version",),
    ],
)
def test_no_warning_reaches_stderr(args: tuple[str, ...]) -> None:
    done = _sparktui(*args)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""


def test_asyncssh_imports_quietly() -> None:
    """Every module that imports asyncssh goes through ``sparktui.core.remote``, whose filter silences it."""
    code = "import sparktui.core.remote.ssh, sparktui.core.remote.runner, sparktui.core.sources.ssh"
    env = {**os.environ, "PYTHONWARNINGS": "default"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
