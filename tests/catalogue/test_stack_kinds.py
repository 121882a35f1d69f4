"""One test per wait kind of diagnostics/stacks/: its examples (stacks from real py-spy dumps) are placed in
it, naming the frame they declare, and its counter-examples are not; and the kinds together name every
place a rank must be told to wait in (issue 27)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparktui.core.stacks import kinds

KINDS = kinds.builtin_kinds()
NAMED = {
    "process-group",
    "collective",
    "store-wait",
    "gpu-wait",
    "weights",
    "compile",
    "ray-get",
    "idle",
    "busy-python",
}


@pytest.mark.parametrize("kind", KINDS, ids=[k.id for k in KINDS])
def test_kind_examples(kind: kinds.WaitKind) -> None:
    assert kind.examples, "a kind needs an example"
    assert kinds.check_examples(kind, KINDS) == []


def test_the_kinds_name_every_wait() -> None:
    assert {k.id for k in KINDS} >= NAMED
    assert len({k.order for k in KINDS}) == len(KINDS), "two kinds of one order: which comes first is unsaid"


def test_a_bad_file_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "idle.toml"
    path.write_text('id = "idle"\ntitle = "x"\norder = 1\n[match]\nstatus = ["asleep"]\n[[examples.match]]\n')
    with pytest.raises(kinds.KindError, match=r"idle.toml: match.status: one of idle, active, gil"):
        kinds.load_file(path)
