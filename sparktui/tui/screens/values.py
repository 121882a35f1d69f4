"""The values of a playbook's parameters, typed in the cockpit (``sparktui play --set`` does the same on the
command line): one field per parameter that is not read on the nodes, filled with the value in use, each
checked against its kind before the playbook renders again."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Input, Static

from sparktui.core import kinds
from sparktui.core.remedy import playbook as pb
from sparktui.core.text import display
from sparktui.tui.bindings import VALUES, bindings

#: Kinds whose empty value means something (an option left unset): an empty field gives "" rather than nothing.
_MAY_BE_EMPTY = ("text", "argv")


def editable(playbook: pb.Playbook) -> tuple[pb.Param, ...]:
    """The parameters a user may give: all but those only read on the nodes."""
    return tuple(p for p in playbook.params if not all(src in pb.PROBES for src in p.sources))


class ValuesScreen(ModalScreen[dict[str, str] | None]):
    """Edits the values; dismissed with the ones the user changed (None when cancelled)."""

    BINDINGS: ClassVar[list[BindingType]] = bindings(VALUES)

    def __init__(self, playbook: pb.Playbook, current: Mapping[str, str]) -> None:
        super().__init__()
        self.playbook, self.current = playbook, dict(current)

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="values"):
            yield Static(Text.assemble(("Values for ", "bold"), (self.playbook.title, "bold")))
            for param in editable(self.playbook):
                about = Text.assemble(("\n" + param.name, "bold cyan"), (f"  {param.kind}", "dim"))
                if param.description:
                    about.append(f"  {param.description}")
                yield Static(about)
                yield Input(self.current.get(param.name, ""), id=f"value-{param.name}", select_on_focus=False)
                yield Static("", id=f"why-{param.name}", classes="refused")
            yield Static(Text("\nenter or ctrl+s applies · tab next field · esc cancels", style="dim"))

    def on_mount(self) -> None:
        """The first field without a value has the focus (else the first field)."""
        fields = self.query(Input)
        empty = [f for f in fields if not f.value]
        if fields:
            (empty or list(fields))[0].focus()

    def on_input_submitted(self) -> None:
        self.action_apply()

    def action_apply(self) -> None:
        changed: dict[str, str] = {}
        refused = False
        for param in editable(self.playbook):
            value = self.query_one(f"#value-{param.name}", Input).value.strip()
            why = self.query_one(f"#why-{param.name}", Static)
            if value == "" and param.kind not in _MAY_BE_EMPTY:
                if param.name not in self.current:  # nothing else gives it either
                    why.update(Text(f"needed: {kinds.NOUNS[param.kind]}", style="bold red"))
                    refused = True
                else:
                    why.update("")
                continue
            if not kinds.fits(param.kind, value):
                why.update(Text(f"refused: not {kinds.NOUNS[param.kind]}: {display(value[:200])}", style="bold red"))
                refused = True
                continue
            why.update("")
            if value != self.current.get(param.name):  # an empty text given for one that had none counts
                changed[param.name] = value
        if not refused:
            self.dismiss(changed)

    def action_cancel(self) -> None:
        self.dismiss(None)
