"""Which of a node's panes a program's lines go to."""

from __future__ import annotations

#: Each pane of a node's column: its layer and its title.
LAYERS = (("nccl", "NCCL / c10d"), ("ray", "Ray"), ("engine", "Engine"), ("other", "Other"))
_LAYER_OF = {
    "nccl": "nccl",
    "torch": "nccl",
    "ray": "ray",
    "vllm": "engine",
    "sglang": "engine",
    "uvicorn": "engine",
    "transformers": "engine",
}


def layer_of(program: str) -> str:
    return _LAYER_OF.get(program, "other")
