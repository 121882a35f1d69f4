"""The cockpit says what the analysis could not use (a pattern disabled, a signature file left out) in a
notification, once each."""

from __future__ import annotations

from pathlib import Path

from sparktui.core.analysis import userfiles
from sparktui.core.remedy import playbook as pb
from sparktui.core.sources import bundle
from sparktui.tui.bindings import playbook_key_problem
from sparktui.tui.factory import make_app
from sparktui.tui.session import Session

from ..cli.test_regex_safety import BACKTRACKS, signatures
from .conftest import make_bundle, wait_done


async def test_a_pattern_disabled_and_a_file_left_out_are_each_said_once(tmp_path: Path) -> None:
    found = userfiles.load([signatures(tmp_path / "sigs", backtracks=BACKTRACKS, **{"no-literal": "(a+)+$"})])
    runs = "".join("a" * 5_000 + "!\n" for _ in range(3))  # each far beyond the budget for that pattern
    loaded = bundle.load(make_bundle(tmp_path / "bundle", extra={"runs.log": runs}))
    app = make_app(Session("test", loaded, speed=0), catalogue=found, export_dir=tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_done(pilot, app)
        said = [n.message for n in app._notifications if n.title == "not used"]
    assert len(said) == 2
    assert said[0].startswith("left out ") and "no-literal.toml: match.any[0]: no plain literal" in said[0]
    assert "backtracks.toml: match.any[0]: pattern disabled for this run" in said[1]


def test_every_built_in_playbook_key_is_free_in_the_cockpit() -> None:
    """A playbook whose key the cockpit or the finding screen already uses is not loaded (and said so): none of
    the built-in ones may be."""
    taken = {book.id: why for book in pb.load_all().values() if (why := playbook_key_problem(book.key))}
    assert not taken
