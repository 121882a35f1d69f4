"""A live stall in the cockpit on the two spark test nodes: a real 2-rank gloo job (torch's CPU build) across
the nodes, rank 0 in spark-a's engine container and rank 1 in spark-b's, hung in new_group (rank 1 sleeps in
application code); the cockpit's stall finding (the two-host NCCL hang's logs, read live as the same two
nodes': a replay has no live ranks to read) offers ``W``, which reads every rank's stack over SSH and through
each node's Docker engine with the real py-spy (put where the py-spy-stacks playbook puts it). Every rank's
wait is shown, the odd rank named; the grid's "now" column and the export carry it."""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from docker.models.containers import Container

from sparktui.core.audit import read_log
from sparktui.core.cluster import Cluster, Node
from sparktui.core.sources.files import FileRead, FileSource
from sparktui.core.stacks.script import BROUGHT
from sparktui.tui.factory import make_app
from sparktui.tui.screens.finding import FindingScreen
from sparktui.tui.screens.progress import ProgressScreen
from sparktui.tui.screens.stacks import StacksScreen
from sparktui.tui.session import Session
from tests.servers.cockpit import ENGINE
from tests.servers.sparks import IFACE, Sparks, ray_volumes
from tests.stacks.jobs import PYTHON, SCENARIO, SLEEP_LINE
from tests.stacks.test_docker import PY_SPY, VENV
from tests.tui.conftest import HANG
from tests.waiting import until, wait_until

STALL = "nccl-second-communicator-not-joined"
PORT = 29655
SIZE = (180, 50)


@pytest.fixture
def hung(sparks: Sparks) -> Iterator[dict[str, Container]]:
    """The job's two ranks, each in its node's engine container (``vllm_node``), both in place."""
    head = sparks.head
    volumes = {
        **ray_volumes(),  # this machine's Python and the libraries
        str(VENV): {"bind": str(VENV), "mode": "ro"},  # torch
        str(SCENARIO.parent): {"bind": "/scenario", "mode": "ro"},
        str(PY_SPY): {"bind": BROUGHT, "mode": "ro"},
    }
    ranks = {}
    for rank, node in enumerate((head, *sparks.workers)):
        env = {"RANK": str(rank), "WORLD_SIZE": "2", "MASTER_ADDR": head.address, "MASTER_PORT": str(PORT)}
        env.update(GLOO_SOCKET_IFNAME=IFACE, PYTHONUNBUFFERED="1", OMP_NUM_THREADS="1")
        command = [str(PYTHON), "/scenario/scenario.py", "second-group"]
        ranks[node.name] = node.engine_container(
            command=command, ray=False, volumes=volumes, environment=env, cap_add=["SYS_PTRACE"]
        )

    def in_place() -> bool:
        for c in ranks.values():
            c.reload()
            assert c.status == "running", c.logs().decode()[-2000:]
        return all(b"in place" in c.logs() for c in ranks.values())

    wait_until(in_place, 120, "both ranks in place in the nodes' containers")
    yield ranks


async def test_w_on_a_live_stall_shows_every_rank_and_the_export_carries_it(
    sparks: Sparks, hung: dict[str, Container], tmp_path: Path
) -> None:
    a, b = sparks.head, sparks.workers[0]
    nodes = tuple(Node(n.name, n.name, "head" if n is a else "worker") for n in sparks)
    both = (a, b)
    logs = tuple(FileRead(FileSource(HANG / f"rank{r}.log", f"{n.name}/nccl.log", n.name)) for r, n in enumerate(both))
    cluster = Cluster(tmp_path / "sparktui.toml", nodes, ENGINE)
    app = make_app(Session("t", live=logs), export_dir=tmp_path, cluster=cluster)
    async with app.run_test(size=SIZE) as pilot:
        await until(lambda: app.diagnosis and any(f.signature == STALL for f in app.diagnosis.findings), 30, STALL)
        await pilot.pause()
        row = next(i for i, f in enumerate(app.findings_table.findings) if f.signature == STALL)
        app.findings_table.move_cursor(row=row)
        await pilot.press("enter")
        finding = await until(lambda: isinstance(app.screen, FindingScreen) and app.screen, 10, "the finding")
        await pilot.press("W")
        screen = await until(lambda: isinstance(app.screen, StacksScreen) and app.screen, 10, "the stacks' screen")
        await until(lambda: screen.phase != "capturing", 60, "the capture's end")
        taken = screen.snapshot
        assert screen.phase == "done" and taken is not None, screen.progress.content
        group = next(g for g in taken.groups if g.job == f"{a.address}:{PORT}")
        assert [(r.rank, r.node, r.place, r.wait, r.odd) for r in group.ranks] == [
            (0, a.name, "vllm_node", "process-group", False),
            (1, b.name, "vllm_node", "idle", True),
        ], taken.problems
        odd = (
            f"rank 1 on {b.name}/vllm_node is idle in application code, in serve_requests (scenario.py:{SLEEP_LINE}) "
            "and never entered new_group, which rank 0 waits in"
        )
        assert group.findings[0] == odd and group.verdict == "hang"
        await pilot.pause()
        shown = html.unescape(re.sub(r"<[^>]*>", "", app.export_screenshot())).replace("\xa0", " ")
        assert "verdict: HANG" in shown and "new_group" in shown and "serve_requests" in shown  # every rank's wait
        assert f"{a.name}/vllm_node" in shown and f"{b.name}/vllm_node" in shown
        await pilot.press("escape")
        await until(lambda: app.screen is finding, 10, "back on the finding")
        await pilot.press("escape")
        await pilot.press("G")
        grid_screen = await until(lambda: isinstance(app.screen, ProgressScreen) and app.screen, 10, "the grid")
        (grid,) = grid_screen.grids
        now = {(r.node, r.who): (r.cells[-1].short, r.cells[-1].behind) for r in grid.rows}
        assert grid.columns[-1] == "now"
        assert now == {(a.name, "rank 0"): ("new_group", False), (b.name, "rank 1"): ("serve_requests", True)}
        await pilot.press("escape")
        await pilot.press("x")
        report = await until(lambda: next(tmp_path.glob("sparktui-report-*/report.md"), None), 30, "the export")
    text = report.read_text()
    assert "## Where each rank is" in text and odd in text and "| now |" in text
    assert (report.parent / "bundle" / "stacks.json").is_file()
    ran = sorted(
        (e.node, e.exit_code) for e in read_log(report.parent / "bundle" / "audit.jsonl") if e.step == "stacks"
    )
    assert ran == [(a.name, 0), (b.name, 0)]
    print(f"stacks read over both nodes in {taken.seconds:.1f} s")  # the measure, for the log (no assertion)
