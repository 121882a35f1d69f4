"""The stacks in the cockpit, on this machine: the two-host NCCL hang's logs, read live, name a critical
stall, a real 2-rank gloo job (torch's CPU build) hangs in new_group here, and ``W`` on the stall finding reads
every rank's stack with the real py-spy. The capture is folded into the finding only where the logs are this
machine's; the same logs of spark-a and spark-b show it apart, as another machine's (trial 2026-12c, W7). The
export carries the capture. A replay (the demo too) reads no stacks: it shows its bundle's capture, or says
that there are no live ranks. With the setting on, a live session captures once by itself when a critical
stall is named."""

from __future__ import annotations

import html
import json
import re
import socket
from pathlib import Path
from typing import Any

import pytest

from sparktui.commands.cockpit import demo_bundle, live_session
from sparktui.core import catalogue as cat
from sparktui.core.audit import read_log
from sparktui.core.cluster import Cluster, Deployment, Node
from sparktui.core.dirs import state_dir
from sparktui.core.errors import Refused
from sparktui.core.liveness.verdict import builtin_words
from sparktui.core.pipeline import diagnose_files
from sparktui.core.report.export import export
from sparktui.core.report.fold import APART
from sparktui.core.report.incident import Incident
from sparktui.core.sources import bundle
from sparktui.core.sources.files import FileRead, FileSource
from sparktui.core.stacks.script import BROUGHT
from sparktui.tui.app import Session, SparkApp
from sparktui.tui.factory import demo, make_app
from sparktui.tui.screens.finding import FindingScreen
from sparktui.tui.screens.progress import ProgressScreen
from sparktui.tui.screens.stacks import StacksScreen
from sparktui.tui.stacks import NO_LIVE_RANKS, Captures
from tests.servers.fixtures import sshd_cluster
from tests.servers.sshd import SshdCluster
from tests.tui.conftest import make_bundle, wait_done
from tests.waiting import until

from .jobs import SLEEP_LINE, job
from .test_fold import HANG, capture
from .test_live import PY_SPY

__all__ = ["sshd_cluster"]
STALL = "nccl-second-communicator-not-joined"
SIZE = (180, 50)


def screen_text(app: SparkApp) -> str:
    """What the screen shows, its styled pieces joined."""
    return html.unescape(re.sub(r"<[^>]*>", "", app.export_screenshot())).replace("\xa0", " ")


@pytest.fixture
def hang(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> SparkApp:
    monkeypatch.chdir(tmp_path)  # no cluster file: this machine
    loaded = bundle.load(make_bundle(tmp_path / "bundle"))
    return SparkApp(Session("hang", loaded, speed=0), cat.load(), export_dir=tmp_path)


def live_hang(nodes: tuple[str, str], **kwargs: Any) -> SparkApp:
    """A live session on the hang's two logs, read once, as the logs of ``nodes``."""
    logs = (FileRead(FileSource(HANG / f"rank{r}.log", f"rank{r}.log", nodes[r])) for r in (0, 1))
    return SparkApp(Session("hang", live=tuple(logs)), cat.load(), **kwargs)


async def test_w_on_the_stall_finding_shows_every_rank_here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The hang's logs as this machine's: the capture of its ranks is folded into the stall finding."""
    monkeypatch.chdir(tmp_path)  # no cluster file: this machine
    here = socket.gethostname()
    app = live_hang((here, here), export_dir=tmp_path)
    with job("second-group", tmp_path) as j:
        async with app.run_test(size=SIZE) as pilot:
            await until(lambda: app.diagnosis and any(f.signature == STALL for f in app.diagnosis.findings), 30, STALL)
            await pilot.pause()
            row = next(i for i, f in enumerate(app.findings_table.findings) if f.signature == STALL)
            app.findings_table.move_cursor(row=row)
            await pilot.press("enter")
            finding = await until(lambda: isinstance(app.screen, FindingScreen) and app.screen, 10, "the finding")
            assert " W  Where every rank is now" in screen_text(app)
            await pilot.press("W")
            screen = await until(lambda: isinstance(app.screen, StacksScreen) and app.screen, 10, "the stacks")
            await until(lambda: screen.phase != "capturing", 30, "the capture")
            assert screen.phase == "done" and screen.snapshot is not None
            group = next(g for g in screen.snapshot.groups if g.job == j.job)
            assert [(r.rank, r.wait, r.odd) for r in group.ranks] == [(0, "process-group", False), (1, "idle", True)]
            odd = (
                f"rank 1 on local is idle in application code, in serve_requests (scenario.py:{SLEEP_LINE}) and "
                "never entered new_group, which rank 0 waits in"
            )
            assert group.findings[0] == odd
            await pilot.pause()
            shown = screen_text(app)
            assert "verdict: HANG" in shown and "creating a process group: new_group" in shown
            await pilot.press("escape")
            await until(lambda: app.screen is finding, 10, "back on the finding")
            await pilot.pause()
            shown = screen_text(app)
            assert "Now (every rank's stack, read by py-spy at" in shown and f"- job {j.job}: HANG: " in shown
            assert "not folded in" not in shown
            await pilot.press("escape")
            await pilot.press("x")
            report = await until(lambda: next(tmp_path.glob("sparktui-report-*/report.md"), None), 30, "the export")
    text = report.read_text()
    assert "## Where each rank is" in text and odd in text
    folder = report.parent
    kept = json.loads((folder / "bundle" / "stacks.json").read_text())
    assert kept["verdict"] == "hang" and kept["findings"] == [STALL]
    ran = [e for e in read_log(folder / "bundle" / "audit.jsonl") if e.step == "stacks"]
    assert [(e.node, e.exit_code) for e in ran] == [("local", 0)]
    assert any(e.step == "stacks" for e in read_log(state_dir() / "audit.jsonl"))  # the user's audit log too
    assert kept["hosts"] == {"local": here}


async def test_a_capture_of_another_machine_is_shown_apart(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The hang's logs as spark-a's and spark-b's, a gloo job hung on this machine: ``W`` on spark-a's stall
    reads this machine, and the finding (and W's own table) says that job apart, as another machine's, instead of
    folding it in."""
    monkeypatch.chdir(tmp_path)
    app = live_hang(("spark-a", "spark-b"), export_dir=tmp_path)
    with job("second-group", tmp_path) as j:
        async with app.run_test(size=SIZE) as pilot:
            await until(lambda: app.diagnosis and any(f.signature == STALL for f in app.diagnosis.findings), 30, STALL)
            await pilot.pause()
            row = next(i for i, f in enumerate(app.findings_table.findings) if f.signature == STALL)
            app.findings_table.move_cursor(row=row)
            await pilot.press("enter")
            finding = await until(lambda: isinstance(app.screen, FindingScreen) and app.screen, 10, "the finding")
            await pilot.press("W")
            screen = await until(lambda: isinstance(app.screen, StacksScreen) and app.screen, 10, "the stacks")
            await until(lambda: screen.phase != "capturing", 30, "the capture")
            assert screen.snapshot is not None and any(g.job == j.job for g in screen.snapshot.groups)
            await pilot.pause()
            assert f"job {j.job} (another machine's or job's; the stall findings are of spark-a, spark-b)" in (
                " ".join(screen_text(app).split())
            )
            await pilot.press("escape")
            await until(lambda: app.screen is finding, 10, "back on the finding")
            await pilot.pause()
            detail = finding._folded().detail
    now = detail[detail.index("Now (every rank's stack") :]
    assert "no rank process of this finding's nodes (spark-a, spark-b) or job was found." in now
    apart = now[now.index(APART) :]
    assert f"- job {j.job} on local ({socket.gethostname()}): HANG: rank 1 on local is idle" in apart


async def test_the_setting_captures_once_by_itself(
    hang: SparkApp, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "config"
    config.mkdir()
    (config / "settings.toml").write_text("[stacks]\ncapture_on_critical_stall = true\n")
    monkeypatch.setenv("SPARKTUI_CONFIG_DIR", str(config))
    app = hang
    with job("second-group", tmp_path) as j:
        async with app.run_test(size=SIZE) as pilot:
            await wait_done(pilot, app)
            assert app.stacks.latest is None  # a replay: its processes are gone, nothing captured by itself
            live = Captures(app.catalogue, None, app.ran, lambda: None)  # a live session's
            assert app.diagnosis is not None
            live.watch(app, app.diagnosis)
            live.watch(app, app.diagnosis)
            taken = await until(lambda: live.latest, 30, "the capture made by itself")
            await pilot.pause()
    assert any(g.job == j.job and g.verdict == "hang" for g in taken.groups)
    assert taken.findings == (STALL,)
    assert [e.step for e in app.ran] == ["stacks"]  # once


async def test_a_replayed_export_shows_its_capture(tmp_path: Path) -> None:
    """The capture exported with the incident comes back in its replay: the hang it saw as the first finding,
    the stall finding's "now" part and the grid's column, with no process to ask."""
    logs = tuple(FileSource(HANG / f"rank{r}.log", f"spark-{'ab'[r]}/nccl.log", f"spark-{'ab'[r]}") for r in (0, 1))
    export(Incident(diagnose_files(logs, cat.load()), logs=logs, stacks=capture()), tmp_path / "export")
    app = SparkApp(Session("replay", bundle.load(tmp_path / "export" / "bundle"), speed=0), cat.load())
    async with app.run_test(size=SIZE) as pilot:
        await wait_done(pilot, app)
        assert app.stacks.latest == capture()
        assert app.findings_table.findings[0].signature == builtin_words().id  # the hang it saw, first (L1)
        row = next(i for i, f in enumerate(app.findings_table.findings) if f.signature == STALL)
        app.findings_table.move_cursor(row=row)
        await pilot.press("enter")
        await until(lambda: isinstance(app.screen, FindingScreen), 10, "the finding")
        await pilot.pause()
        assert "Now (every rank's stack, read by py-spy at 05:00:07 UTC):" in screen_text(app)
        await pilot.press("W")  # the bundle's own capture, read again from no process
        screen = await until(lambda: isinstance(app.screen, StacksScreen) and app.screen, 10, "the stacks")
        assert screen.phase == "done" and screen.snapshot == capture()
        await pilot.pause()
        shown = screen_text(app)
        assert "Where every rank was" in shown and "read at 2026-12-04 05:00:07 UTC" in shown
        assert "verdict: HANG" in shown
        assert app.ran == []  # nothing run
        await pilot.press("escape", "escape", "G")
        grids = await until(lambda: isinstance(app.screen, ProgressScreen) and app.screen.grids, 10, "the grid")
        assert grids[0].columns[-1] == "now"


async def test_w_in_the_demo_reads_nothing(tmp_path: Path) -> None:
    """The demo replays spark-a and spark-b: ``W`` says there are no live ranks, and runs nothing here."""
    app = make_app(demo(demo_bundle(), 0), export_dir=tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await wait_done(pilot, app)
        await pilot.press("W")
        screen = await until(lambda: isinstance(app.screen, StacksScreen) and app.screen, 10, "the stacks")
        await pilot.pause()
        assert screen.phase == "failed" and screen.snapshot is None
        assert f"{NO_LIVE_RANKS}, and this bundle keeps no capture of the stacks" in screen_text(app)
        assert app.ran == [] and app.stacks.latest is None
        assert "bring py-spy" not in screen_text(app)  # the footer offers no b: there is nothing to bring to
        with pytest.raises(Refused, match="a replay has no live ranks to read"):
            await app.stacks.capture()


async def test_a_node_that_cannot_be_reached_is_one_line(tmp_path: Path) -> None:
    cluster = Cluster(tmp_path / "sparktui.toml", (Node("spark-a", "127.0.0.1:1", "head"),), Deployment())
    app = live_hang(("spark-a", "spark-b"), export_dir=tmp_path, cluster=cluster)
    async with app.run_test(size=SIZE) as pilot:
        await until(lambda: app.diagnosis and app.diagnosis.progress, 30, "the start-up grid")
        await pilot.pause()
        await pilot.press("G", "W")  # from the start-up grid
        screen = await until(lambda: isinstance(app.screen, StacksScreen) and app.screen, 10, "the stacks' screen")
        await until(lambda: screen.phase != "capturing", 30, "the capture's end")
        await pilot.pause()
        assert screen.snapshot is not None and screen.snapshot.verdict == "partial"
        said = "spark-a: spark-a: cannot connect to 127.0.0.1: Connection refused"
        assert screen.snapshot.problems == (said,) and said in screen_text(app)
        await pilot.press("escape")
        assert isinstance(app.screen, ProgressScreen)


def node_a_app(folder: Path) -> SparkApp:
    """A cockpit on a log of node-a (``ssh://node-a/...``), no cluster file."""
    log = folder / "rank0.log"
    log.write_text("starting\n")
    return make_app(live_session([f"ssh://node-a{log}"]), export_dir=folder, spool_live=False)


async def captured(app: SparkApp, pilot: Any) -> StacksScreen:
    """``W`` pressed, and its screen once the capture ended."""
    await pilot.press("W")
    screen = await until(lambda: isinstance(app.screen, StacksScreen) and app.screen, 10, "the stacks")
    await until(lambda: screen.phase != "capturing", 60, "the capture")
    await pilot.pause()
    return screen


async def test_w_reads_the_node_of_the_ssh_sources(
    sshd_cluster: SshdCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cockpit on ``ssh://node-a/...`` logs, no cluster file: ``W`` reads node-a (a real sshd on loopback),
    not this machine, and names the ranks as node-a's (trial 2026-12c, W2)."""
    sshd_cluster.home_for(tmp_path / "home", monkeypatch)
    monkeypatch.chdir(tmp_path)
    config = tmp_path / "config"
    config.mkdir()
    (config / "settings.toml").write_text(f'[stacks]\npy_spy = "{PY_SPY}"\n')  # none on the sshd's PATH
    monkeypatch.setenv("SPARKTUI_CONFIG_DIR", str(config))
    app = node_a_app(tmp_path)
    assert app.stacks.targets == {"node-a": "node-a"}
    with job("second-group", tmp_path) as j:
        async with app.run_test(size=SIZE) as pilot:
            screen = await captured(app, pilot)
            shown = screen_text(app)
    assert "py-spy on the nodes of the sources (node-a; no cluster file)" in shown
    assert screen.snapshot is not None and screen.snapshot.problems == ()
    g = next(g for g in screen.snapshot.groups if g.job == j.job)
    assert g.verdict == "hang" and {r.node for r in g.ranks} == {"node-a"}


async def test_b_brings_py_spy_to_a_node_without_one(
    sshd_cluster: SshdCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``W`` on node-a, whose PATH has no py-spy: the ranks are found, not read, and the screen offers ``b``;
    ``b`` shows where this machine's py-spy would go, ``b`` again copies it over the SSH connection, reads the
    ranks with it (the hung rank named) and removes it."""
    sshd_cluster.home_for(tmp_path / "home", monkeypatch)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SPARKTUI_CONFIG_DIR", str(tmp_path))  # no settings: py-spy as the node has it (none)
    app = node_a_app(tmp_path)
    with job("second-group", tmp_path) as j:
        async with app.run_test(size=SIZE) as pilot:
            screen = await captured(app, pilot)
            assert "b brings this machine's py-spy to the 1 place(s) without one" in str(screen.progress.content)
            await pilot.press("b")
            await pilot.pause()
            assert str(screen.progress.content).startswith(f"node-a: copy {PY_SPY} (this machine's,")
            assert screen.phase == "done"  # nothing copied yet
            await pilot.press("b")
            await until(lambda: screen.phase == "done" and screen.snapshot is not None, 60, "the second capture")
            await until(lambda: any(g.job == j.job for g in screen.snapshot.groups), 5, "the job read")
    g = next(g for g in screen.snapshot.groups if g.job == j.job)
    assert g.verdict == "hang" and screen.snapshot.problems == ()
    assert not Path(BROUGHT).exists()
