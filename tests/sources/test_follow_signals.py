"""SIGTERM and SIGHUP end ``diagnose --follow`` as ctrl+c does (trial 2026-12b §4 item 5): the diagnosis
printed, the spool closed as a bundle that reads back, the exit status ctrl+c gives. A real process, real
signals, and ``timeout`` as the trial ran it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from ..conftest import FIXTURES
from ..waiting import wait_until

LOG = FIXTURES / "nccl" / "single-host-rendezvous-wrong-port" / "rank1.log"
FOUND = "1 source, 85 lines, 1 finding (1 error)"


def _env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "XDG_STATE_HOME": str(tmp_path / "state"), "XDG_CONFIG_HOME": str(tmp_path / "config")}


def _spooled(tmp_path: Path) -> int:
    """The lines of the log the spool holds (each batch is on disk as it is received)."""
    return sum(len(p.read_text().splitlines()) for p in (tmp_path / "state").rglob(LOG.name))


@pytest.mark.parametrize("number", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_signal_ends_it_with_the_diagnosis(tmp_path: Path, number: signal.Signals) -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "sparktui", "diagnose", "--follow", str(LOG)],
        env=_env(tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        lines = len(LOG.read_text().splitlines())
        wait_until(lambda: _spooled(tmp_path) == lines or process.poll() is not None, 60, "the lines read")
        assert process.poll() is None, process.communicate()[1]
        process.send_signal(number)
        out, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 1, err  # as ctrl+c: the finding reaches --fail-on error
    assert out.startswith(FOUND) and "Traceback" not in err
    spool = err.split("received lines kept in ")[1].split(" (")[0]
    again = subprocess.run(
        [sys.executable, "-m", "sparktui", "diagnose", spool], env=_env(tmp_path), capture_output=True, text=True
    )
    assert again.returncode == 1 and "torch-tcpstore-connect-timeout" in again.stdout, again.stderr


def test_the_trials_timeout(tmp_path: Path) -> None:
    done = subprocess.run(
        ["timeout", "5", sys.executable, "-m", "sparktui", "diagnose", "--follow", str(LOG)],
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 124  # timeout's own status: it sent SIGTERM
    assert done.stdout.startswith(FOUND)
    assert "received lines kept in" in done.stderr
