"""Which of a node's panes a program's lines go to (each program's pane is in
``diagnostics/formats/programs.toml``)."""

from __future__ import annotations

from sparktui.core.classify import PANES

#: Each pane of a node's column: its layer and its title.
LAYERS = (("nccl", "NCCL / c10d"), ("ray", "Ray"), ("engine", "Engine"), ("other", "Other"))


def layer_of(program: str) -> str:
    """The pane that shows a program's lines."""
    return PANES.get(program, "other")
