"""``diagnose --edge``: the parts that need no cluster, then the scan on a real Ray cluster's nodes.

The cluster tests live in ray_edge_in_netns.py and run in a process of their own inside a network namespace
that has only ``lo`` (``unshare --net``), as test_ray.py runs its own.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from ..conftest import ROOT

HERE = Path(__file__).parent


def test_edge_modules_import_without_ray() -> None:
    probe = "import sys, sparktui.core.edge.head, sparktui.core.pipeline; print('ray' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "False"


def test_edge_against_a_real_cluster() -> None:
    """ray_edge_in_netns.py: a head and three workers (one of them without the `regex` module), the same
    findings at the edge as pulled, a live follow, and a node whose scan is killed."""
    command = ["unshare", "--net", sys.executable, "-m", "pytest", "-q", "-rfEs", "-p", "no:cacheprovider"]
    done = subprocess.run(
        [*command, str(HERE / "ray_edge_in_netns.py")], cwd=ROOT, capture_output=True, text=True, timeout=400
    )
    report = "\n".join(line for line in (done.stdout + done.stderr).splitlines() if "network_util.cc" not in line)
    assert done.returncode == 0, report[-8000:]
    summary = report.strip().splitlines()[-1]
    assert " passed" in summary and "skipped" not in summary, summary
