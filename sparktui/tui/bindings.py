"""Every key of the app in one registry, so the footer, the help screen and the command palette agree."""

from __future__ import annotations

from dataclasses import dataclass

from textual.binding import Binding, BindingType


@dataclass(frozen=True, slots=True)
class Key:
    key: str
    action: str
    description: str
    group: str
    show: bool = False  # in the footer
    label: str = ""  # how the help screen writes the key, when not the key name itself
    short: str = ""  # the footer's word for it


KEYS: tuple[Key, ...] = (
    Key("question_mark", "help", "Help: every key", "General", True, "?", "help"),
    Key("colon", "command_palette", "Command palette (nodes, layers, findings, export)", "General", False, ":"),
    Key("ctrl+p", "command_palette", "Command palette", "General"),
    Key("x", "export", "Export a report of this incident", "General", True, short="export"),
    Key("q", "quit", "Quit", "General", True, short="quit"),
    Key("slash", "filter", "Filter the focused pane by regex (/!pattern hides matches)", "Logs", True, "/", "filter"),
    Key("n", "next_match", "Next filter match in the focused pane", "Logs"),
    Key("N", "previous_match", "Previous filter match", "Logs"),
    Key("f", "maximise", "Maximise / restore the focused pane", "Logs", True, short="maximise"),
    Key("space", "pause", "Pause / resume following", "Logs", True, short="pause"),
    Key(
        "e",
        "next_evidence",
        "Jump to the next evidence line of the selected finding",
        "Findings",
        True,
        short="evidence",
    ),
    Key("E", "previous_evidence", "Jump to the previous evidence line", "Findings"),
    Key("enter", "open_finding", "Open the selected finding: what, why, evidence, remediations", "Findings"),
    Key("tab", "app.focus_next", "Next pane", "Navigation"),
    Key("shift+tab", "app.focus_previous", "Previous pane", "Navigation"),
)


def bindings() -> list[BindingType]:
    return [
        Binding(
            k.key, k.action, k.short or k.description, show=k.show, key_display=k.label or None, tooltip=k.description
        )
        for k in KEYS
        if k.key not in ("enter", "tab", "shift+tab", "ctrl+p")
    ]
