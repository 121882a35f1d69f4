"""`sparktui diagnose` on a terminal says how far it got: lines, bytes of the total, the share, and the
time left at the pace so far; piped, it says nothing."""

from __future__ import annotations

import os
import pty
import re
import select
import subprocess
import sys
from pathlib import Path

from sparktui.commands.diagnose import progress
from sparktui.core.events import State, StateChange
from sparktui.core.pipeline import Tally, Update
from sparktui.core.sources.base import Extent

from ..conftest import FIXTURES, ROOT

HANG = FIXTURES / "nccl" / "two-hosts-second-group-not-joined" / "rank0.log"
_CSI = re.compile(rb"\x1b\[[0-?]*[ -/]*[@-~]")


def big_log(path: Path, megabytes: int) -> Path:
    """A real capture repeated to about ``megabytes`` MiB."""
    text = HANG.read_bytes()
    path.write_bytes(text * ((megabytes << 20) // len(text) + 1))
    return path


def on_a_terminal(*args: str) -> tuple[str, bytes]:
    """What ``sparktui diagnose ARGS`` draws on a terminal as its standard error (each frame of its status
    line), and its standard output."""
    master, slave = pty.openpty()
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "200"}
    command = [sys.executable, "-m", "sparktui", "diagnose", *args]
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=slave, cwd=ROOT, env=env) as process:
        os.close(slave)
        drawn = b""
        while True:
            ready, _, _ = select.select([master], [], [], 0.2)
            if ready:
                try:
                    data = os.read(master, 1 << 16)
                except OSError:  # the process closed the terminal
                    break
                if not data:
                    break
                drawn += data
            elif process.poll() is not None:
                break
        out = process.communicate(timeout=120)[0]
    os.close(master)
    return _CSI.sub(b"", drawn).decode(errors="replace"), out


def test_a_big_file_shows_bytes_and_share_on_a_terminal(tmp_path: Path) -> None:
    log = big_log(tmp_path / "big.log", 16)
    drawn, out = on_a_terminal("-j", "1", str(log))
    assert b"1 finding" in out
    frames = [f.strip() for f in re.split(r"[\r\n]", drawn) if "MiB of 16.0 MiB" in f]
    assert frames, drawn[-2000:]
    shares = [int(m.group(1)) for f in frames if (m := re.search(r"\((\d+) %\)", f))]
    assert shares and all(0 <= s <= 100 for s in shares) and min(shares) < 100
    assert all("lines" in f for f in frames)


def test_the_progress_line_gives_the_time_left_at_the_pace_so_far() -> None:
    mib = 1 << 20
    states = {"big.log": StateChange("big.log", State.STREAMING)}
    tallies = {"big.log": Tally("n1", "file, read once", 1000, 16 * mib, Extent(16 * mib, 64 * mib))}
    update = Update(states=states, tallies=tallies, read=1000)
    assert progress("reading", update, 10.0) == (
        "reading 1 source: 1,000 lines, 16.0 MiB of 64.0 MiB (25 %), about 30 s left"
    )
    assert progress("reading", update, 0.5).endswith("(25 %)")  # too early to tell the pace
    assert "2 min 30 s left" in progress("reading", update, 50.0)
    stream = {"-": Tally("n1", "stream, read once", 7, 700, Extent(700, None))}
    unknown = Update(tallies=stream, read=7)  # a stream: its size is not known
    assert progress("reading", unknown, 10.0) == "reading 0 sources: 7 lines"
