"""A node's column: its name, its start-up stage strip and one log pane per layer."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static

from sparktui.core.pipeline import Line
from sparktui.tui.widgets.logpane import LogPane

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


def safe_id(name: str) -> str:
    return "".join(ch if ch.isalnum() else "-" for ch in name)


class StageStrip(Static):
    """One line per track: how far start-up got on this node, with stalls highlighted."""

    shown: tuple[tuple[tuple[str, str], ...], frozenset[str]] | None = None

    def show(self, stages: dict[str, str], stalled: set[str]) -> None:
        looks = (tuple(sorted(stages.items())), frozenset(stalled))
        if looks == self.shown:
            return
        self.shown = looks
        text = Text()
        for track, phrase in sorted(stages.items()):
            if text:
                text.append("  ")
            style = "bold white on red" if track in stalled else "green"
            text.append(f" {track} ", style="reverse " + style)
            text.append(f" {phrase}")
        self.update(text if text else Text("no start-up markers yet", style="dim"))


class NodeColumn(Vertical):
    def __init__(self, node: str) -> None:
        super().__init__(id=f"node-{safe_id(node)}", classes="node")
        self.node = node
        self.border_title = node
        # Built here, not in compose, so lines can be added before the column has finished mounting.
        self.strip = StageStrip(classes="stages")
        self.panes = {layer: LogPane(layer, title, id=f"pane-{safe_id(node)}-{layer}") for layer, title in LAYERS}
        for pane in self.panes.values():
            pane.display = False  # until its first line

    def compose(self) -> ComposeResult:
        yield self.strip
        yield from self.panes.values()

    def pane(self, layer: str) -> LogPane:
        return self.panes[layer]

    def add(self, layer: str, lines: list[Line]) -> None:
        pane = self.pane(layer)
        if not pane.display:
            pane.display = True
        pane.add(lines)
