"""Copies of built-in playbooks changed for a test: a verification that gives up sooner, or a last step that
fails after the real ones have changed the nodes (so that their rollback runs)."""

from __future__ import annotations

import re
from pathlib import Path

from sparktui.core.dirs import builtin

FAILING_STEP = """
[[steps]]
title = "A later step that fails"
on = "head"
run = "echo 'failing on purpose' >&2; exit 1"
"""


def changed(tmp_path: Path, playbook: str, *, within: int | None = None, then_fail: bool = False) -> Path:
    """The folder holding a copy of ``playbook`` whose verification gives up after ``within`` seconds, or
    whose steps end with one that fails; give it to ``--playbooks``."""
    folder = tmp_path / "books"
    folder.mkdir(exist_ok=True)
    text = (builtin("playbooks") / f"{playbook}.toml").read_text()
    if within is not None:
        text = re.sub(r"(?m)^within = \d+$", f"within = {within}", text)
    if then_fail:
        # steps are an array of tables: one more may follow anywhere; before [example] keeps it readable
        head, sep, tail = text.partition("\n[example]")
        text = head + FAILING_STEP + sep + tail
    (folder / f"{playbook}.toml").write_text(text)
    return folder
