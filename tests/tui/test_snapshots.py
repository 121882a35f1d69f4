"""Snapshots of the main screen, a finding's detail, the help screen and the start-up progress grid (the
incident's own clock is shown, so the pictures do not depend on when the test runs)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sparktui.core.sources import bundle
from sparktui.tui.app import SparkApp
from sparktui.tui.factory import make_app
from sparktui.tui.session import Session

from ..waiting import settle
from .conftest import make_bundle, wait_done

SIZE = (160, 48)


def app(tmp_path: Path) -> SparkApp:
    return make_app(Session("second communicator", bundle.load(make_bundle(tmp_path / "b")), speed=0))


async def settled(pilot: Any, subject: SparkApp) -> None:
    """The replay ended, its last lines are in their panes, and the screen is painted again whole, so a
    modal opened now is drawn over a background that no longer moves."""
    await wait_done(pilot, subject)
    subject.screen.refresh(repaint=True, layout=True)
    await settle(pilot)


def test_main_screen(snap_compare: Any, tmp_path: Path) -> None:
    subject = app(tmp_path)

    async def ready(pilot: Any) -> None:
        await settled(pilot, subject)

    assert snap_compare(subject, terminal_size=SIZE, run_before=ready)


def test_finding_detail(snap_compare: Any, tmp_path: Path) -> None:
    subject = app(tmp_path)

    async def open_finding(pilot: Any) -> None:
        await settled(pilot, subject)
        subject.query_one("#findings").focus()
        await pilot.press("enter")
        await settle(pilot)

    assert snap_compare(subject, terminal_size=SIZE, run_before=open_finding)


def test_help(snap_compare: Any, tmp_path: Path) -> None:
    subject = app(tmp_path)

    async def open_help(pilot: Any) -> None:
        await settled(pilot, subject)
        await pilot.press("question_mark")
        await settle(pilot)

    assert snap_compare(subject, terminal_size=SIZE, run_before=open_help)


def test_progress_screen(snap_compare: Any, tmp_path: Path) -> None:
    subject = app(tmp_path)

    async def open_progress(pilot: Any) -> None:
        await settled(pilot, subject)
        await pilot.press("G")
        await settle(pilot)

    assert snap_compare(subject, terminal_size=SIZE, run_before=open_progress)
