"""Two keys the trial found wanting (trial 2026-12b §4 item 20, N69): `/` right after start answered 'focus a
log pane first (tab)' although the cockpit opens with no pane focused, and a filtered pane ignored `space`:
a new matching line appeared while PAUSED, where unfiltered panes held. Then (trial 2026-12c, N69) `/` with
no pane focused filtered one pane the user had not picked: it filters every pane now, and says so."""

from __future__ import annotations

from pathlib import Path

from sparktui.commands.cockpit import demo_bundle
from sparktui.core.sources.follow import FollowedFile
from sparktui.tui.factory import demo, make_app
from sparktui.tui.session import Session

from ..waiting import settle, until

HANG = Path(__file__).resolve().parents[1] / "fixtures" / "nccl" / "two-hosts-second-group-not-joined"


async def test_slash_at_start_filters_and_a_paused_filtered_pane_holds(tmp_path: Path) -> None:
    path = tmp_path / "rank0.log"
    real = (HANG / "rank0.log").read_text().splitlines(True)
    path.write_text("".join(real[:20]))
    app = make_app(Session("live", live=(FollowedFile(path, "rank0.log", poll=0.02),)))
    async with app.run_test(size=(160, 48)) as pilot:
        await until(lambda: "spark-a" in app.nodes_area.columns, 20, "spark-a's column")
        pane = app.nodes_area.columns["spark-a"].pane("nccl")
        await until(lambda: len(pane.lines_kept) >= 10, 20, "spark-a's first lines")
        app.set_focus(None)  # as the cockpit opens: no pane focused
        await pilot.press("slash")
        await until(lambda: app.filter_field.display and app.filter_field.has_focus, 10, "the filter field")
        for key in "Init":
            await pilot.press(key)
        await pilot.press("enter")
        await until(lambda: pane.pattern is not None, 10, "the filter applied")
        assert pane.shown and all("Init" in line.text for line in pane.shown)
        assert all(p.pattern is not None for p in app.nodes_area.panes())  # every pane, none picked for the user
        shown = list(pane.shown)

        await pilot.press("space")
        await until(lambda: app.paused, 10, "paused")
        with path.open("a") as fh:
            fh.writelines(real[20:])
        await until(lambda: pane.lines_kept[-1].text.endswith("Init START"), 20, "a matching line, kept")
        await settle(pilot)
        assert pane.shown == shown  # held while paused

        await pilot.press("space")
        await until(lambda: not app.paused, 10, "following again")
        assert pane.shown[-1].text.endswith("Init START") and all("Init" in line.text for line in pane.shown)


async def test_slash_filters_the_focused_pane_or_else_every_pane(tmp_path: Path) -> None:
    app = make_app(demo(demo_bundle(), 0), export_dir=tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        await until(lambda: len(app.nodes_area.panes()) >= 2, 20, "the demo's panes")
        await settle(pilot)
        picked, *others = app.nodes_area.panes()
        app.set_focus(picked)
        await pilot.press("slash", *"NCCL", "enter")
        await until(lambda: picked.pattern is not None, 10, "the focused pane filtered")
        assert all(p.pattern is None for p in others) and app.focused is picked

        app.set_focus(None)
        await pilot.press("slash")
        await until(lambda: app.filter_field.display, 10, "the filter field")
        assert str(app.filter_field.placeholder).startswith(f"every pane ({len(others) + 1}): ")
        await pilot.press(*"INFO", "enter")
        await until(lambda: all(p.pattern is not None for p in app.nodes_area.panes()), 10, "every pane filtered")
        assert {p.pattern.pattern for p in app.nodes_area.panes() if p.pattern is not None} == {"INFO"}
