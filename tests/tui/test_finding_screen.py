"""A finding's detail by keyboard (trial #5): it scrolls with the usual keys without Tab, its remediations
are on screen at 160x45 without scrolling, its footer has its own keys; and copying (trial #15): `y` and
`Y` put the safe text on the clipboard and in a private file, whatever the terminal does with OSC 52."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
from textual.containers import VerticalScroll

from sparktui.core.sources import bundle
from sparktui.tui.app import SparkApp
from sparktui.tui.clipboard import copy_file
from sparktui.tui.factory import make_app
from sparktui.tui.screens.finding import FindingScreen, evidence_text
from sparktui.tui.session import Session
from sparktui.tui.widgets.logpane import LogPane

from ..cli.test_secret_kinds import CAPTURED as SECRET_LOG
from ..cli.test_secret_kinds import SECRETS
from ..conftest import FIXTURES
from .conftest import make_bundle, wait_done

SIZE = (160, 45)
#: Ray's output to a terminal: colours and carriage returns in real captured lines.
COLOURED = FIXTURES / "ray" / "head-start" / "head-tty.log"


@pytest.fixture(autouse=True)
def state_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Copies go to this test's own state folder."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    return tmp_path / "state"


def screen_text(app: SparkApp) -> list[str]:
    return [strip.text for strip in app.screen._compositor.render_strips()]


async def open_finding(app: SparkApp, pilot: object) -> FindingScreen:
    await wait_done(pilot, app)
    app.findings_table.focus()
    await pilot.press("enter")  # type: ignore[attr-defined]
    await pilot.pause()  # type: ignore[attr-defined]
    assert isinstance(app.screen, FindingScreen)
    return app.screen


async def test_the_detail_scrolls_by_keyboard_under_its_remediations(hang_app: SparkApp) -> None:
    async with hang_app.run_test(size=SIZE) as pilot:
        screen = await open_finding(hang_app, pilot)
        body = screen.query_one("#finding-body", VerticalScroll)
        assert body.max_scroll_y > 0  # the evidence does not fit: there is something to scroll
        remedies = screen.query_one("#finding-remedies")
        assert remedies.region.bottom <= SIZE[1] and remedies.region.height > 1
        shown = "\n".join(screen_text(hang_app))
        for book in screen.playbooks.values():
            assert book.title in shown  # on screen at once, not below the fold
        moves = [
            ("j", lambda y: y == 1),
            ("down", lambda y: y == 2),
            ("k", lambda y: y == 1),
            ("end", lambda y: y == body.max_scroll_y),
            ("home", lambda y: y == 0),
            ("space", lambda y: y > 2),
            ("pageup", lambda y: y == 0),
            ("pagedown", lambda y: y > 2),
            ("up", lambda y: y > 1),
        ]
        for key, where in moves:
            await pilot.press(key)
            await pilot.pause()
            assert where(body.scroll_y), (key, body.scroll_y)
        footer = screen_text(hang_app)[-1]
        assert "copy evidence" in footer and "close" in footer
        assert "export" not in footer and "maximise" not in footer  # the cockpit's keys are not this screen's
        await pilot.press("escape")
        assert not isinstance(hang_app.screen, FindingScreen)


async def test_y_and_Y_copy_the_evidence_and_the_finding(hang_app: SparkApp, state_home: Path) -> None:
    async with hang_app.run_test(size=SIZE) as pilot:
        screen = await open_finding(hang_app, pilot)
        await pilot.press("y")
        await pilot.pause()
        path = copy_file()
        assert path.parent == state_home / "sparktui"
        assert path.read_text() == evidence_text(screen.finding) + "\n" == hang_app.clipboard + "\n"
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert f"{screen.finding.evidence[0].source}:{screen.finding.evidence[0].line}" in path.read_text()
        await pilot.press("Y")
        await pilot.pause()
        markdown = path.read_text()
        assert markdown.startswith(f"### {screen.finding.title}\n") and "```" in markdown
        assert "Evidence from `spark-a`" in markdown


async def test_y_copies_a_pane_line_made_safe(tmp_path: Path, state_home: Path) -> None:
    logs = {"spark-a/nccl.log": FIXTURES / "nccl" / "two-hosts-second-group-not-joined" / "rank0.log"}
    logs["spark-a/ray.log"] = COLOURED
    app = make_app(Session("t", bundle.load(make_bundle(tmp_path / "b", logs=logs)), speed=0))
    raw = [line for line in COLOURED.read_text().splitlines() if "\x1b" in line]
    assert raw  # the capture has escape sequences of its own
    async with app.run_test(size=SIZE) as pilot:
        await wait_done(pilot, app)
        pane = next(
            p
            for p in app.nodes_area.columns["spark-a"].panes.values()
            if any("Local node IP" in line.text for line in p.lines_kept)
        )
        pane.focus()
        pane.cursor = next(i for i, line in enumerate(pane.shown) if "Local node IP" in line.text)
        await pilot.press("y")
        await pilot.pause()
        copied = copy_file().read_text()
        assert copied == pane.shown[pane.cursor].text + "\n" and "Local node IP: 127.0.0.1" in copied
        assert not any(ch in copied for ch in "\x1b\r\x07") and "\x1b" not in app.clipboard
        pane.cursor = -1  # no line chosen: the newest in view
        await pilot.press("y")
        await pilot.pause()
        assert copy_file().read_text() == pane.shown[-1].text + "\n"
        assert isinstance(app.focused, LogPane)


async def test_y_copies_the_evidence_and_a_line_with_their_secrets_redacted(tmp_path: Path) -> None:
    """The trial's repro (2026-12c X8): `y` on a finding copied its evidence raw, private keys and tokens
    included, to the clipboard and copied.txt; every copy now has its secrets redacted, as `Y` has."""
    lines = SECRET_LOG.read_text().splitlines()
    error = next(i for i, line in enumerate(lines) if "Invalid repository ID" in line)
    lines[error:error] = [template.format(secret) for secret, template in SECRETS.items()]
    log = tmp_path / "server.log"
    log.write_text("\n".join(lines) + "\n")
    app = make_app(Session("t", bundle.load(make_bundle(tmp_path / "b", logs={"spark-a/server.log": log}))))
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_finding(app, pilot)
        assert any(secret in "\n".join(e.before) for e in screen.finding.evidence for secret in SECRETS)
        await pilot.press("y")
        await pilot.pause()
        copied = copy_file().read_text()
        assert "Invalid repository ID" in copied and "[REDACTED]" in copied
        assert not any(secret in copied or secret in app.clipboard for secret in SECRETS)
        await pilot.press("escape")
        await pilot.pause()
        panes = [p for column in app.nodes_area.columns.values() for p in column.panes.values()]
        pane = next(p for p in panes if any("xoxb-" in line.text for line in p.shown))
        pane.focus()
        pane.cursor = next(i for i, line in enumerate(pane.shown) if "xoxb-" in line.text)
        await pilot.press("y")
        await pilot.pause()
        assert copy_file().read_text() == "bot xoxb-[REDACTED] connected\n"
