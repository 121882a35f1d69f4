"""The cockpit on a directory of hundreds of logs, each its own node: a few columns, the rest a page away,
every node's lines kept whether its column is shown or not (bench/tui_scale.py times 5,000)."""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import sys
from pathlib import Path

from sparktui.commands.common import open_sources
from sparktui.core.sources.follow import FollowedFile
from sparktui.core.sources.open import POLLS_PER_SECOND
from sparktui.tui.factory import make_app
from sparktui.tui.screens.help import HelpScreen
from sparktui.tui.screens.sources import SourcesScreen
from sparktui.tui.session import Session
from sparktui.tui.widgets.node import NodeColumn

from ..conftest import FIXTURES, ROOT
from ..waiting import until

FILES = 300


def many_logs(root: Path, count: int) -> Path:
    """``count`` copies of the small real captures that hold lines, each under a name of its own (its own node,
    unless its lines name their host)."""
    small = sorted(p for p in FIXTURES.rglob("*.log") if 0 < p.stat().st_size < 3000)  # (a capture may be empty)
    root.mkdir()
    for i in range(count):
        shutil.copy(small[i % len(small)], root / f"node-{i:04d}.log")
    return root


async def test_hundreds_of_files_make_a_few_columns_and_a_page_of_the_rest(tmp_path: Path) -> None:
    logs = many_logs(tmp_path / "logs", FILES)
    sources = tuple(open_sources([str(logs)], trust_new_host_key=False))
    # a directory of many logs is looked at less often per file: POLLS_PER_SECOND in all
    assert {s.poll for s in sources if isinstance(s, FollowedFile)} == {FILES / POLLS_PER_SECOND}
    app = make_app(Session("many", live=sources), spool_live=False)
    async with app.run_test(size=(160, 45)) as pilot:
        await until(
            lambda: app.pipeline.lines and len(app.tallies) == FILES and all(t.lines for t in app.tallies.values()),
            30,
            "every file's first lines",
        )
        nodes = len(app.nodes_area.nodes)
        assert nodes > 100
        assert len(app.nodes_area.columns) == 2 and len(app.query(NodeColumn)) == 2  # 160 cells: two columns, no more
        assert f"2 of {nodes:,} nodes in view" in str(app.nodes_area.bar.render())
        assert sum(sum(log.sources.values()) for log in app.nodes_area.nodes.logs.values()) == app.pipeline.lines
        names = app.nodes_area.nodes.names
        app.nodes_area.focus_node(names[5])  # what the palette's "Go to node" runs
        await pilot.pause()
        assert list(app.nodes_area.columns) == names[5:7]
        await pilot.press("right_square_bracket")
        await pilot.pause()
        assert list(app.nodes_area.columns) == names[7:9]  # the next ones by name
        await pilot.press("left_square_bracket")
        await pilot.pause()
        assert list(app.nodes_area.columns) == names[5:7]
        app.nodes_area.focus_node(names[-1])
        await pilot.pause()
        assert list(app.nodes_area.columns) == names[-2:]
        column = app.nodes_area.columns[names[-1]]
        assert sum(len(p.shown) for p in column.panes.values()) == sum(
            app.nodes_area.nodes.logs[names[-1]].sources.values()
        )
        await pilot.press("right_square_bracket")
        await pilot.pause()
        assert list(app.nodes_area.columns) == names[:2]  # round from the last page to the first
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        await pilot.press("S")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, SourcesScreen) and len(screen.listing.rows) == FILES
        await pilot.press("end")
        await pilot.pause()
        assert screen.listing.cursor == FILES - 1 and screen.listing.scroll_offset.y > 0
        assert screen.rows[-1].name in str(screen.detail.render())
        await pilot.press("escape")
        assert "sources" in str(app.status_bar.render())  # counted by state, not named one by one
        await pilot.press("q")
    assert not app.is_running


def test_every_followed_file_gets_a_descriptor_under_the_usual_soft_limit(tmp_path: Path) -> None:
    """A followed file stays open; under a soft limit lower than the files (1,024 is usual), the ones past it
    would retry "Too many open files" for ever: the soft limit is raised within the hard one."""
    logs = many_logs(tmp_path / "logs", FILES)
    code = (
        "import resource, sys\n"
        "from sparktui.commands.common import OTHER_FILES, open_sources\n"
        "open_sources([sys.argv[1]], trust_new_host_key=False)\n"
        "print(resource.getrlimit(resource.RLIMIT_NOFILE)[0] - OTHER_FILES)\n"
    )

    def low() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (FILES // 2, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))

    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", code, str(logs)], preexec_fn=low, env=env, capture_output=True, text=True, check=True
    )
    assert int(done.stdout) == FILES
