"""`S`: every source with its node, kind, state and counts, and its last error in full (the status bar has
one line for all of them). A real failing source: ssh:// to a loopback port nothing listens on."""

from __future__ import annotations

import socket
from pathlib import Path

from sparktui.commands.common import open_sources
from sparktui.core.events import State
from sparktui.tui.factory import make_app
from sparktui.tui.screens.sources import SourcesScreen
from sparktui.tui.session import Session

from ..waiting import until
from .conftest import HANG


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_the_sources_screen_has_each_source_and_its_error_in_full(tmp_path: Path) -> None:
    log = tmp_path / "rank0.log"
    log.write_bytes((HANG / "rank0.log").read_bytes())
    port = closed_port()
    arguments = [str(log), f"ssh://127.0.0.1:{port}/var/log/vllm.log"]
    app = make_app(Session("s", live=tuple(open_sources(arguments, trust_new_host_key=False))))
    async with app.run_test(size=(160, 45)) as pilot:
        await until(
            lambda: app.errors and app.tallies.get("rank0.log", None) and app.tallies["rank0.log"].lines,
            10,
            "the refused connection and rank0.log's lines",
        )
        (error,) = app.errors.values()
        assert "Connection refused" in error
        assert "S: every source, its error in full" in str(app.status_bar.render())
        await pilot.press("S")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, SourcesScreen)
        first, second = screen.rows
        assert first.state is State.RETRYING and first.kind == "file over ssh" and first.node == "127.0.0.1"
        assert second.name == "rank0.log" and second.kind == "file, followed" and second.node == "spark-a"
        assert second.lines == len(log.read_text().splitlines())
        assert second.extent is not None and second.extent.read == second.extent.size == log.stat().st_size
        detail = str(screen.detail.render())
        assert f"last error: {first.error}" in detail.replace("\n", " ") and "Connection refused" in first.error
        await pilot.press("down")
        await pilot.pause()
        assert "rank0.log" in str(screen.detail.render()) and "last error" not in str(screen.detail.render())
        await pilot.press("escape")
        assert not isinstance(app.screen, SourcesScreen)
