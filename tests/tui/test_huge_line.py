"""A log of one huge line in the cockpit, in a real terminal (trial 2026-12b §4 item 13, N21): a 2 GiB sparse
file froze the status at `t+0s 0%` for about 50 s (its node learnt by classifying each 8 MiB piece of the line
whole), took 2.2 GB (256 pieces of it waiting in the queue while the file was read without a pause) and `q`
39 s. Now the node is learnt from the first MiB, a line is classified by what is shown of it, and the reading
lets the consumer keep up, so the cockpit reads on, holds a few pieces at most and quits at once."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
import uuid
from pathlib import Path

from ..waiting import wait_until
from .test_terminal import ended, needs_tmux, screen, start, tmux

#: Far below the 2.2 GB that 256 queued pieces of 8 MiB took; the cockpit alone takes about 100 MB.
MAX_RSS_KB = 600_000


def peak_rss_kb(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    found = re.search(r"^VmHWM:\s+(\d+) kB", status, re.M)
    assert found, status
    return int(found[1])


def read_share(session: str) -> int:
    """The share of the file read, as the status bar says it (0 before it says)."""
    found = re.search(r"of 2\.0 GiB read \((\d+)%\)", screen(session))
    return int(found[1]) if found else 0


@needs_tmux
def test_a_two_gib_line_is_read_on_and_q_quits(tmp_path: Path) -> None:
    log = tmp_path / "sparse.log"
    with log.open("wb") as sparse:
        sparse.truncate(2 << 30)  # 2 GiB of zeros, no newline, on no disk block
    session = f"sparktui-{uuid.uuid4().hex[:8]}"
    start(session, f"{shlex.quote(sys.executable)} -m sparktui {log}; echo $? > ended", tmp_path)
    try:
        shell = int(tmux("display-message", "-p", "-t", session, "#{pane_pid}"))
        cockpit = int(
            wait_until(
                lambda: subprocess.run(["pgrep", "-P", str(shell)], capture_output=True).stdout, 30, "the cockpit"
            )
        )
        wait_until(lambda: read_share(session) >= 10, 120, "a tenth of the file read, as the status bar says")
        assert peak_rss_kb(cockpit) < MAX_RSS_KB
        tmux("send-keys", "-t", session, "q")
        ended(session, 15)
        assert (tmp_path / "ended").read_text() == "0\n"
    finally:
        tmux("kill-session", "-t", session)
