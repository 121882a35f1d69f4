"""A remediation before it runs: what it does, its risk, and the exact command for every node."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from sparktui.core import playbooks as pb
from sparktui.core.events import Finding

RISK_STYLE = {"read-only": "green", "restarts": "yellow", "changes-node": "bold red"}


class PlaybookScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [("escape", "dismiss", "Close"), ("q", "dismiss", "Close")]

    def __init__(
        self, playbook: pb.Playbook, finding: Finding, nodes: pb.Nodes, cluster: Mapping[str, str] | None = None
    ) -> None:
        super().__init__()
        self.playbook, self.finding, self.nodes, self.cluster = playbook, finding, nodes, cluster

    def rendered(self) -> pb.Rendered | str:
        """The commands, or why they cannot be rendered yet (a value missing or refused)."""
        values = pb.resolve(self.playbook, self.finding.facts, self.cluster)
        try:
            return pb.render(self.playbook, values, self.nodes, self.finding.nodes)
        except pb.PlaybookError as exc:
            return str(exc)

    def compose(self) -> ComposeResult:
        book = self.playbook
        with VerticalScroll(id="playbook"):
            yield Static(
                Text.assemble(
                    (f" {book.key} ", "reverse bold"),
                    " ",
                    (book.title, "bold"),
                    "  ",
                    (book.risk, RISK_STYLE.get(book.risk, "")),
                )
            )
            yield Static(Text(book.description), classes="section")
            result = self.rendered()
            if isinstance(result, str):
                yield Static(Text.assemble(("Cannot render yet: ", "bold yellow"), result), classes="section")
                steps = Text()
                for step in book.steps:
                    steps.append(f"{step.on:>8} {step.place:<9} ", style="cyan")
                    steps.append(step.run.strip() + "\n")
                yield Static(
                    Text.assemble(("The steps, with their {parameters} still to fill\n", "bold underline"), steps),
                    classes="section",
                )
            else:
                lines = Text()
                for command in result.commands:
                    lines.append(f"{command.node:>14} ", style="cyan")
                    lines.append("$ ", style="dim")
                    lines.append(command.command + "\n")
                yield Static(
                    Text.assemble(("Commands, per node, exactly as they would run\n", "bold underline"), lines),
                    classes="section",
                )
                if result.rollback:
                    back = Text()
                    for command in result.rollback:
                        back.append(f"{command.node:>14} $ {command.command}\n")
                    yield Static(Text.assemble(("Rollback\n", "bold underline"), back), classes="section")
            yield Static(
                Text(
                    f"Run it with `sparktui play {book.id}` (it shows these commands and asks first; "
                    "--readonly refuses anything that changes a node). Running from the cockpit comes next. "
                    "esc closes.",
                    style="dim",
                ),
                classes="section",
            )
