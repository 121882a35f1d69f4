"""A hang named by itself in the cockpit, in a real terminal (tmux), on the two spark test nodes: the real
2-rank gloo job of test_stacks_on_sparks (rank 0 in spark-a's engine container waits in new_group, rank 1
in spark-b's sleeps in application code), followed through each container's log over SSH with the nodes
in the cluster file. The logs go quiet after "in place"; without a key press the live watch reads every
rank's stack over SSH and docker exec (py-spy where the py-spy-stacks playbook puts it) and the screen
names rank 1, its node as the cluster names it, what it does and where rank 0 waits."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import uuid
from pathlib import Path

from docker.models.containers import Container

from tests.servers.sparks import Sparks
from tests.sparks.test_stacks_on_sparks import hung
from tests.tui.test_terminal import TMUX, screen, tmux, wait_for

from ..conftest import ROOT

__all__ = ["hung"]


def test_the_cockpit_names_the_hung_rank_without_a_key(
    sparks: Sparks, hung: dict[str, Container], tmp_path: Path
) -> None:
    assert TMUX is not None, "tmux is installed by the test command (tools/test.sh)"
    a, b = sparks.head, sparks.workers[0]
    nodes = "".join(f'[[nodes]]\nname = "{n.name}"\nssh = "{n.name}"\n' for n in (a, b))
    (tmp_path / "sparktui.toml").write_text(nodes)
    env = {
        "HOME": os.environ["HOME"],  # the sparks fixture's: its SSH client files reach the nodes by name
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "PYTHONPATH": str(ROOT),
    }
    sources = [f"ssh://{n.name}/docker/vllm_node" for n in (a, b)]
    line = " ".join(
        ["cd", shlex.quote(str(tmp_path)), "&&", "exec", "env"]
        + [f"{k}={shlex.quote(v)}" for k, v in env.items()]
        + [shlex.quote(sys.executable), "-m", "sparktui", *sources]
    )
    session = f"sparktui-{uuid.uuid4().hex[:8]}"
    subprocess.run([TMUX, "new-session", "-d", "-s", session, "-x", "200", "-y", "50", line], check=True)
    try:
        wait_for(session, "in place", seconds=60)  # both logs followed; from here on, no key and no line
        shown = wait_for(session, f"rank 1 on {b.name}/vllm_node is idle in application code", seconds=90)
        flat = " ".join(shown.replace("▌", " ").split())  # the notification's lines, joined
        assert "critical" in shown, shown  # the findings table's row
        assert "serve_requests" in flat and "never entered new_group, which rank 0 waits in" in flat, shown
    finally:
        print(screen(session))
        tmux("kill-session", "-t", session)
