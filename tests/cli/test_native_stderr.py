"""What native code writes on descriptor 2 (Ray's C++ core) goes to a private file once a Ray source is named, while
what Python writes on sys.stderr still reaches the terminal; the last line names the file (trial 2026-12c §4.17).
The real Ray case, in a namespace without a route, is in tests/sources/ray_in_netns.py."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SCRIPT = """
import os, sys
from sparktui.commands import native_stderr
native_stderr.keep_for(["ray://127.0.0.1:6379"])
os.write(2, b"[2026-12-06 03:00:00,000 W 1 1] network_util.cc:330: Failed to determine local IP\\n")
print("sparktui: a line of sparktui's own", file=sys.stderr)
print(native_stderr.said(), file=sys.stderr)
"""


def test_native_lines_go_to_the_file_and_pythons_to_the_terminal(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        capture_output=True,
        text=True,
        env={**os.environ, "XDG_STATE_HOME": str(tmp_path)},
        timeout=60,
        check=True,
    )
    (kept,) = (tmp_path / "sparktui" / "native").glob("ray-*.log")
    assert kept.read_text().endswith("network_util.cc:330: Failed to determine local IP\n")
    assert kept.stat().st_mode & 0o777 == 0o600
    assert done.stderr.splitlines() == [
        "sparktui: a line of sparktui's own",
        "Ray's own messages (1 line, the first: 'network_util.cc:330: Failed to determine local IP') were kept in "
        f"{kept}, not shown here",
    ]


def test_without_a_ray_source_nothing_is_moved(tmp_path: Path) -> None:
    script = SCRIPT.replace('["ray://127.0.0.1:6379"]', '["ssh://spark-a/var/log/x.log"]')
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        env={**os.environ, "XDG_STATE_HOME": str(tmp_path)},
        timeout=60,
        check=True,
    )
    assert "network_util.cc" in done.stderr and not (tmp_path / "sparktui" / "native").exists()
