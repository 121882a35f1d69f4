"""The cockpit driven through Textual's Pilot, with the same app the CLI builds."""

from __future__ import annotations

import html
from dataclasses import replace
from pathlib import Path

from rich.text import Text
from textual.containers import VerticalScroll
from textual.widgets import DataTable, Static

from sparktui.core import cluster as clusterfile
from sparktui.core.sources import bundle
from sparktui.tui.app import SparkApp
from sparktui.tui.bindings import KEYS
from sparktui.tui.factory import make_app
from sparktui.tui.messages import DiagnosisChanged
from sparktui.tui.screens.finding import FindingScreen
from sparktui.tui.screens.help import HelpScreen
from sparktui.tui.screens.inventory import InventoryScreen
from sparktui.tui.screens.progress import EMPTY, ProgressScreen
from sparktui.tui.session import Session
from sparktui.tui.widgets.findings import STACKS
from sparktui.tui.widgets.logpane import LogPane

from ..conftest import FIXTURES
from ..waiting import until
from .conftest import HANG, LAGGARD, make_bundle, wait_done


async def test_replay_fills_panes_and_names_the_hang(hang_app: SparkApp) -> None:
    async with hang_app.run_test(size=(160, 48)) as pilot:
        await wait_done(pilot, hang_app)
        assert hang_app.diagnosis is not None
        assert hang_app.diagnosis.findings[0].signature == "nccl-second-communicator-not-joined"
        assert set(hang_app.nodes_area.columns) == {"spark-a", "spark-b"}
        nccl = hang_app.nodes_area.columns["spark-a"].pane("nccl")
        assert nccl.display and len(nccl.lines_kept) > 20
        assert "stopped at" in str(hang_app.nodes_area.columns["spark-a"].strip.render())


async def test_help_lists_every_key(hang_app: SparkApp) -> None:
    async with hang_app.run_test(size=(160, 48)) as pilot:
        await wait_done(pilot, hang_app)
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(hang_app.screen, HelpScreen)
        shown = html.unescape(hang_app.export_screenshot()).replace("\xa0", " ")
        for key in KEYS:
            assert key.description in shown
        await pilot.press("escape")
        assert not isinstance(hang_app.screen, HelpScreen)


async def test_enter_opens_the_finding_with_evidence_from_both_nodes(hang_app: SparkApp) -> None:
    async with hang_app.run_test(size=(160, 48)) as pilot:
        await wait_done(pilot, hang_app)
        hang_app.query_one("#findings").focus()
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(hang_app.screen, FindingScreen)
        assert {e.node for e in hang_app.screen.finding.evidence} == {"spark-a", "spark-b"}


async def test_progress_shows_every_rank_and_marks_the_one_behind(tmp_path: Path) -> None:
    logs = {f"node-{'ab'[i // 2]}/rank{i}.log": LAGGARD / f"rank{i}.log" for i in range(4)}
    app = make_app(Session("t", bundle.load(make_bundle(tmp_path / "b", logs=logs)), speed=0))
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_done(pilot, app)
        await pilot.press("G")
        await pilot.pause()
        assert isinstance(app.screen, ProgressScreen)
        (table,) = app.screen.query(DataTable)
        rows = [[str(cell) for cell in table.get_row_at(i)] for i in range(table.row_count)]
        assert [row[:2] for row in rows] == [
            ["node-a", "rank 0"],
            ["node-a", "rank 1"],
            ["node-b", "rank 2"],
            ["node-b", "rank 3 ◀"],
        ]
        behind = table.get_cell_at((3, 3))
        assert isinstance(behind, Text) and "red" in str(behind.style)
        assert "rank 3 on node-b is behind" in str(app.screen.query_one(".grid-heading", Static).render())
        await pilot.press("escape")
        assert not isinstance(app.screen, ProgressScreen)


async def test_progress_follows_new_diagnoses(hang_app: SparkApp) -> None:
    async with hang_app.run_test(size=(160, 48)) as pilot:
        await wait_done(pilot, hang_app)
        diagnosis = hang_app.diagnosis
        assert diagnosis is not None and diagnosis.progress
        await pilot.press("G")
        await pilot.pause()
        screen = hang_app.screen
        assert isinstance(screen, ProgressScreen) and len(screen.query(DataTable)) == 1
        hang_app.post_message(DiagnosisChanged(replace(diagnosis, progress=())))
        await pilot.pause()
        assert not screen.query(DataTable)
        assert EMPTY in str(screen.query_one("#grids Static", Static).render())
        hang_app.post_message(DiagnosisChanged(diagnosis))
        await pilot.pause()
        (table,) = screen.query(DataTable)
        assert not screen.query("#grids > Static") and str(table.get_cell_at((1, 3))) == "absent"
        grid = diagnosis.progress[0]
        joined = replace(grid.rows[1], cells=(grid.rows[1].cells[0], grid.rows[0].cells[1]))
        moved = replace(diagnosis, progress=(replace(grid, rows=(grid.rows[0], joined)),))
        hang_app.post_message(DiagnosisChanged(moved))
        await pilot.pause()
        assert screen.query_one(DataTable) is table and str(table.get_cell_at((1, 3))) == "init"
        await pilot.press("G")
        assert hang_app.screen is not screen


async def test_filter_invert_and_matches(hang_app: SparkApp) -> None:
    async with hang_app.run_test(size=(160, 48)) as pilot:
        await wait_done(pilot, hang_app)
        pane = hang_app.nodes_area.columns["spark-a"].pane("nccl")
        pane.focus()
        await pilot.press("slash", *"Init START", "enter")
        await pilot.pause()
        assert pane.shown and all("Init START" in line.text for line in pane.shown)
        await pilot.press("n")
        assert pane.cursor == 0
        await pilot.press("slash", *"!NCCL INFO", "enter")
        await pilot.pause()
        assert all("NCCL INFO" not in line.text for line in pane.shown)
        await pilot.press("slash", "enter")
        await pilot.pause()
        assert len(pane.shown) == len(pane.lines_kept)


async def test_a_filter_that_backtracks_for_ever_is_dropped_with_the_reason(tmp_path: Path) -> None:
    """The filter is the user's regex, held to a user signature's per-line budget: this one backtracks
    exponentially on a real traceback's run of carets."""
    carets = FIXTURES / "nccl4" / "four-hosts-rank-oom" / "rank2.log"
    app = make_app(Session("t", bundle.load(make_bundle(tmp_path / "b", logs={"node-a/rank2.log": carets})), speed=0))
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_done(pilot, app)
        pane = next(
            p
            for p in app.nodes_area.columns["node-a"].panes.values()
            if any("^^^^^^^^^^" in ln.text for ln in p.lines_kept)
        )
        pane.focus()
        await pilot.press("slash", *r"(\^|\^)+[#@]", "enter")
        await pilot.pause()
        assert pane.pattern is None and len(pane.shown) == len(pane.lines_kept)
        said = [n.message for n in app._notifications]
        assert any(m.startswith("filter not applied: it took more than") and "rank2.log:" in m for m in said), said
        await pilot.press("slash", *"File", "enter")  # a filter that reads each line once is kept
        await pilot.pause()
        assert pane.pattern is not None and pane.shown and all("File" in line.text for line in pane.shown)


async def test_evidence_jump_focuses_the_pane_holding_the_line(hang_app: SparkApp) -> None:
    async with hang_app.run_test(size=(160, 48)) as pilot:
        await wait_done(pilot, hang_app)
        hang_app.query_one("#findings").focus()
        await pilot.press("e")
        await pilot.pause()
        focused = hang_app.focused
        assert isinstance(focused, LogPane)
        assert focused is hang_app.nodes_area.columns["spark-a"].pane("nccl")
        await pilot.press("f")
        assert hang_app.screen.maximized is focused


async def test_pause_and_export(hang_app: SparkApp, tmp_path: Path) -> None:
    async with hang_app.run_test(size=(160, 48)) as pilot:
        await wait_done(pilot, hang_app)
        await pilot.press("space")
        assert hang_app.paused and hang_app.clock is not None and hang_app.clock.paused
        await pilot.press("space")
        assert not hang_app.paused and hang_app.clock is not None and not hang_app.clock.paused
        await pilot.press("x")
        # a loaded machine takes seconds to write the bundle
        (report,) = await until(lambda: list(tmp_path.glob("sparktui-report-*/report.md")), 30, "the report")
        assert "A later NCCL communicator never completed on the ranks that began it" in report.read_text()
        assert (report.parent / "report.html").exists() and (report.parent / "bundle" / "bundle.toml").exists()


async def test_two_exports_in_one_second_get_two_folders(hang_app: SparkApp, tmp_path: Path) -> None:
    """The trial's R7: two exports in one second wrote one `sparktui-report-...` folder and both said it was
    theirs. Each now makes its own folder (a suffix where the second's name is taken) and names it."""
    async with hang_app.run_test(size=(160, 48)) as pilot:
        await wait_done(pilot, hang_app)
        said: list[str] = []
        hang_app.notify = lambda message, *args, **kwargs: said.append(message)  # type: ignore[method-assign]
        await pilot.press("x", "x")
        await until(lambda: sum("report written to" in m for m in said) == 2, 30, "both exports")
    folders = sorted(p.parent for p in tmp_path.glob("sparktui-report-*/report.md"))
    assert len(folders) == 2
    assert sorted(m.split(" (")[0].removeprefix("report written to ") for m in said if "written" in m) == [
        str(f) for f in folders
    ]
    for folder in folders:
        assert (folder / "report.html").exists() and (folder / "bundle" / "bundle.toml").exists()


async def test_escape_sequences_and_long_lines_are_inert(tmp_path: Path) -> None:
    nasty = "\x1b]0;pwned\x07\x1b[2Jclear screen\x00 and bell\x07 " + "z" * 50_000 + "\n"
    loaded = bundle.load(make_bundle(tmp_path / "b", {"nasty.log": nasty}))
    app = make_app(Session("t", loaded, speed=0))
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_done(pilot, app)
        lines = [line.text for line in app.nodes_area.columns["spark-a"].pane("other").lines_kept]
        assert any("clear screen" in line for line in lines)
        assert not any("\x1b" in line or "\x00" in line or "\x07" in line for line in lines)
        assert max(len(line) for line in lines) < 2100


async def test_a_file_of_notes_gets_a_column_that_says_it_has_no_node(tmp_path: Path) -> None:
    meta = HANG / "meta.txt"
    made = make_bundle(tmp_path / "b", logs={"spark-a/nccl.log": HANG / "rank0.log", "notes/meta.txt": meta})
    manifest = made / "bundle.toml"
    manifest.write_text(manifest.read_text().replace('node = "notes"', 'node = ""'))  # as an export writes it
    app = make_app(Session("t", bundle.load(made), speed=0))
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_done(pilot, app)
        assert sorted(app.nodes_area.columns) == ["", "spark-a"]
        assert app.nodes_area.columns[""].border_title == "no node"


async def test_welcome_offers_the_demo(tmp_path: Path) -> None:
    app = make_app(None, demo_at=make_bundle(tmp_path / "d"), demo_speed=0)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        assert type(app.screen).__name__ == "WelcomeScreen"
        shown = html.unescape(app.export_screenshot()).replace("\xa0", " ")
        assert "sparktui discover nvidia@spark-a" in shown and "sparktui.toml" in shown  # how to reach a cluster
        await pilot.press("d")
        await wait_done(pilot, app)
        assert app.diagnosis is not None and app.diagnosis.findings


async def test_live_files_are_followed(tmp_path: Path) -> None:
    from sparktui.core.sources.follow import FollowedFile

    path = tmp_path / "rank0.log"
    real = (HANG / "rank0.log").read_text().splitlines(True)
    path.write_text("".join(real[:20]))
    app = make_app(Session("live", live=(FollowedFile(path, "rank0.log", poll=0.02),)))
    async with app.run_test(size=(160, 48)):
        await until(
            lambda: (
                "spark-a" in app.nodes_area.columns
                and len(app.nodes_area.columns["spark-a"].pane("nccl").lines_kept) >= 10
            ),
            20,
            "spark-a's first lines",
        )
        with path.open("a") as fh:
            fh.writelines(real[20:])
        kept = app.nodes_area.columns["spark-a"].pane("nccl").lines_kept
        await until(lambda: kept[-1].text.endswith("Init START"), 20, "the second communicator, just written")
        assert "streaming" in str(app.query_one("#status").render())


async def test_a_remediation_key_shows_the_exact_commands(tmp_path: Path) -> None:
    from sparktui.tui.screens.finding import FindingScreen
    from sparktui.tui.screens.playbook import PlaybookScreen

    line = "ERROR:    [Errno 98] error while attempting to bind on address ('0.0.0.0', 8000): address already in use\n"
    loaded = bundle.load(make_bundle(tmp_path / "b", {"server.log": line}))
    app = make_app(Session("t", loaded, speed=0))
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_done(pilot, app)
        assert app.diagnosis is not None
        row = [f.signature for f in app.diagnosis.findings].index("server-port-in-use")
        app.findings_table.focus()
        app.findings_table.move_cursor(row=row)
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, FindingScreen)
        await pilot.press("p")
        await pilot.pause()
        assert isinstance(app.screen, PlaybookScreen)
        rendered = app.screen.rendered()
        assert not isinstance(rendered, str)
        assert rendered.commands[0].command == 'ss -Hltnp "sport = :"8000'


async def test_the_findings_table_marks_the_stalls_a_capture_of_the_stacks_is_for(tmp_path: Path) -> None:
    """The stall finding has the cockpit's key for the stacks (W) in its row; the port in use has nothing."""
    line = "ERROR:    [Errno 98] error while attempting to bind on address ('0.0.0.0', 8000): address already in use\n"
    app = make_app(Session("t", bundle.load(make_bundle(tmp_path / "b", {"server.log": line})), speed=0))
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_done(pilot, app)
        table = app.findings_table
        marks = {f.signature: table.get_cell(f.signature, STACKS).plain for f in table.findings}
        assert marks == {"nccl-second-communicator-not-joined": "W", "server-port-in-use": ""}
        assert str(table.columns[STACKS].label) == "W"


async def test_narrow_terminals_show_one_node_at_a_time(hang_app: SparkApp) -> None:
    async with hang_app.run_test(size=(90, 40)) as pilot:
        await wait_done(pilot, hang_app)
        assert list(hang_app.nodes_area.columns) == ["spark-a"]
        assert "1 of 2 nodes in view" in str(hang_app.nodes_area.bar.render())
        await pilot.press("right_square_bracket")
        await pilot.pause()
        assert list(hang_app.nodes_area.columns) == ["spark-b"]
        assert len(hang_app.nodes_area.columns["spark-b"].pane("nccl").shown) > 20  # kept while it was out of view
        await pilot.press("left_square_bracket")
        await pilot.pause()
        assert list(hang_app.nodes_area.columns) == ["spark-a"]
        await pilot.resize_terminal(160, 40)
        await pilot.pause()
        assert list(hang_app.nodes_area.columns) == ["spark-a", "spark-b"] and not hang_app.nodes_area.bar.display


async def test_the_status_bar_says_how_each_node_serves(tmp_path: Path) -> None:
    """A replay of a real vLLM CPU server's readings (tests/fixtures/vllm/serving-stalled): its node's tokens
    per second, running requests and KV cache in the status bar, and the stall among the findings."""
    readings = FIXTURES / "vllm" / "serving-stalled" / "metrics.log"
    loaded = bundle.load(make_bundle(tmp_path / "b", logs={"cpu-node/metrics.log": readings}))
    app = make_app(Session("t", loaded, speed=0))
    async with app.run_test(size=(200, 48)) as pilot:
        await wait_done(pilot, app)
        assert app.diagnosis is not None
        assert [f.signature for f in app.diagnosis.findings] == ["vllm-serving-stalled"]
        assert app.findings_table.get_cell("vllm-serving-stalled", STACKS).plain == "W"
        status = str(app.query_one("#status").render())
        assert "cpu-node 0.0 tok/s · 1 running · KV 0%" in status, status


async def test_the_inventory_takes_the_keys_once_it_has_checked(hang_app: SparkApp) -> None:
    """The trial's C11: `I` opened unfocused, and PageDown, End, the arrows and `j` did nothing until `tab`."""
    async with hang_app.run_test(size=(100, 20)) as pilot:
        await wait_done(pilot, hang_app)
        screen = InventoryScreen(None)  # this machine's check: no cluster file
        hang_app.push_screen(screen)
        await until(lambda: "verdict:" in str(screen.body.render()), 60, "the check of this machine")
        scroll = screen.query_one("#inventory", VerticalScroll)
        await until(lambda: hang_app.focused is scroll, 10, "the inventory focused")
        await pilot.press("end")
        await until(lambda: scroll.scroll_y > 0, 10, "End scrolled the inventory")


async def test_a_cluster_file_without_sources_says_what_to_do(tmp_path: Path) -> None:
    """The trial's C12: a cockpit on a cluster file with `containers = []` and no node sources was an empty
    screen (`live t+0s ended`) with nothing saying why."""
    (tmp_path / "sparktui.toml").write_text(
        '[[nodes]]\nname = "spark-a"\nrole = "head"\n\n[[nodes]]\nname = "spark-b"\n\n[deployment]\ncontainers = []\n'
    )
    cluster = clusterfile.load(tmp_path / "sparktui.toml")
    assert cluster.source_uris() == []
    app = make_app(Session(f"cluster {cluster.path}", live=()), cluster=cluster, export_dir=tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        said = [n.message for n in app._notifications]
        assert any(
            m.startswith(f"nothing to follow: the cluster file {cluster.path} names no log source") for m in said
        ), said
