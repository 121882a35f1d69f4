"""Shown when sparktui starts with nothing to read (no sources, no cluster file): how to point it at a
cluster or at logs, and the demo."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from sparktui.tui import bindings as registry

WELCOME = """\
sparktui shows the logs of every node of a multi-node LLM deployment side by side (NCCL, Ray, vLLM,
SGLang), matches each line against a catalogue of known failures, tracks how far each node's start-up
got, and ranks what went wrong with the root cause first.

Point it at a cluster:

    sparktui discover nvidia@spark-a nvidia@spark-b    look at the nodes over SSH, write sparktui.toml
    sparktui                                           then open the cockpit on that cluster file
    sparktui ssh://spark-b/docker/vllm_node            or a container, file, unit or Ray logs on a node

Or at logs:

    sparktui node-a.log node-b.log        log files (also .gz), one source each
    sparktui logs/                        a directory of logs, read recursively
    sparktui diagnose logs/ --json        the same analysis without the interface

Or watch a real incident replayed: two GPU ranks where the second NCCL communicator is never joined.
"""


class WelcomeScreen(ModalScreen[bool]):
    """What to do when there is nothing to read: point sparktui at a cluster or at logs, or open the demo."""

    BINDINGS: ClassVar[list[BindingType]] = registry.bindings(registry.WELCOME)

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="welcome"):
            yield Static(Text("Welcome to sparktui", style="bold"))
            yield Static(Text(WELCOME))
            yield Static(
                Text.assemble(("  d ", "reverse bold"), "  run the demo      ", ("  q ", "reverse bold"), "  quit")
            )

    def action_demo(self) -> None:
        self.dismiss(True)

    def action_quit(self) -> None:
        self.dismiss(False)
