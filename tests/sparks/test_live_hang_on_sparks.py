"""A hang named by itself in the cockpit, in a real terminal (tmux), on the two spark test nodes: a real
2-rank gloo job (torch's CPU build), rank 0 in spark-a's engine container waiting in new_group, rank 1 in
spark-b's sleeping in application code (the ``second-group`` scenario), each writing its log into a file
that the cockpit follows over SSH, with the nodes in the cluster file. The logs go quiet after "in place";
without a key press the live watch reads every rank's stack over SSH and docker exec (py-spy where the
py-spy-stacks playbook puts it) and the screen names rank 1, its node as the cluster names it, what it
does and where rank 0 waits."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from docker.models.containers import Container

from sparktui.core.stacks.script import BROUGHT
from tests.servers.sparks import IFACE, Sparks, ray_volumes
from tests.stacks.jobs import PYTHON, SCENARIO
from tests.stacks.test_docker import PY_SPY, VENV
from tests.tui.test_terminal import TMUX, screen, tmux, wait_for
from tests.waiting import wait_until

from ..conftest import ROOT

PORT = 29657


@pytest.fixture
def logged(sparks: Sparks, tmp_path: Path) -> Iterator[Path]:
    """The job's two ranks in the nodes' engine containers (``vllm_node``), both in place; their logs' folder."""
    logs = tmp_path / "logs"
    logs.mkdir()
    volumes = {
        **ray_volumes(),  # this machine's Python and the libraries
        str(VENV): {"bind": str(VENV), "mode": "ro"},  # torch
        str(SCENARIO.parent): {"bind": "/scenario", "mode": "ro"},
        str(PY_SPY): {"bind": BROUGHT, "mode": "ro"},
        str(logs): {"bind": "/logs", "mode": "rw"},
    }
    ranks: list[Container] = []
    for rank, node in enumerate((sparks.head, *sparks.workers)):
        env = {"RANK": str(rank), "WORLD_SIZE": "2", "MASTER_ADDR": sparks.head.address, "MASTER_PORT": str(PORT)}
        env.update(GLOO_SOCKET_IFNAME=IFACE, PYTHONUNBUFFERED="1", OMP_NUM_THREADS="1")
        run = f"exec {shlex.quote(str(PYTHON))} /scenario/scenario.py second-group > /logs/rank{rank}.log 2>&1"
        ranks.append(
            node.engine_container(
                command=["sh", "-c", run], ray=False, volumes=volumes, environment=env, cap_add=["SYS_PTRACE"]
            )
        )

    def in_place() -> bool:
        for c in ranks:
            c.reload()
            assert c.status == "running", c.logs().decode()[-2000:]
        return all(b"in place" in (logs / f"rank{r}.log").read_bytes() for r in range(2))

    wait_until(in_place, 120, "both ranks in place in the nodes' containers")
    yield logs


def test_the_cockpit_names_the_hung_rank_without_a_key(sparks: Sparks, logged: Path, tmp_path: Path) -> None:
    assert TMUX is not None, "tmux is installed by the test command (tools/test.sh)"
    a, b = sparks.head, sparks.workers[0]
    nodes = "".join(
        f'[[nodes]]\nname = "{n.name}"\nssh = "{n.name}"\nrole = "{"head" if n is a else "worker"}"\n' for n in (a, b)
    )
    (tmp_path / "sparktui.toml").write_text(nodes)
    env = {
        "HOME": os.environ["HOME"],  # the sparks fixture's: its SSH client files reach the nodes by name
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "PYTHONPATH": str(ROOT),
    }
    sources = [f"ssh://{n.name}/{logged}/rank{r}.log" for r, n in enumerate((a, b))]
    line = " ".join(
        ["cd", shlex.quote(str(tmp_path)), "&&", "env"]
        + [f"{k}={shlex.quote(v)}" for k, v in env.items()]
        + [shlex.quote(sys.executable), "-m", "sparktui", *sources]
    )
    session = f"sparktui-{uuid.uuid4().hex[:8]}"
    # the shell stays once the cockpit ended, with what it printed
    subprocess.run(
        [TMUX, "new-session", "-d", "-s", session, "-x", "170", "-y", "48", line + "; sleep 600"], check=True
    )
    try:
        wait_for(session, "2 sources: 2 streaming", seconds=60)  # both logs followed; from here on, no key
        shown = wait_for(session, f"rank 1 on {b.name}/vllm_node is idle in application code", seconds=90)
        assert "critical" in shown, shown  # the findings table's row, first: no key was pressed
        tmux("send-keys", "-t", session, "Enter")  # the finding: what rank 1 does, where rank 0 waits

        def why() -> bool:
            now = screen(session)
            return (
                "in serve_requests (scenario.py:" in now and "never entered new_group" in now and "which rank 0" in now
            )

        try:
            wait_until(why, 30, "the finding's screen")
        except AssertionError as exc:
            raise AssertionError(f"{exc}; the screen was:\n{screen(session)}") from None
    finally:
        tmux("kill-session", "-t", session)
