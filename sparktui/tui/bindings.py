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
    screen: str = "app"  # where it acts: "app" (the cockpit) or "playbook" (a remediation's screen)


#: The keys of a remediation's screen (:class:`sparktui.tui.screens.playbook.PlaybookScreen`).
PLAYBOOK = "playbook"

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
    Key(
        "G",
        "progress",
        "Start-up progress: the stage each rank reached, per communicator and track",
        "Findings",
        True,
        short="progress",
    ),
    Key(
        "I",
        "inventory",
        "Inventory: check the nodes before launch (verdicts, remedies, what differs between them)",
        "Findings",
    ),
    Key("tab", "app.focus_next", "Next pane", "Navigation"),
    Key("shift+tab", "app.focus_previous", "Previous pane", "Navigation"),
    Key(
        "r",
        "run",
        "Run the playbook (asks first, unless approved before)",
        "Playbook",
        True,
        short="run",
        screen=PLAYBOOK,
    ),
    Key("e", "values", "Edit the values it runs with (as --set)", "Playbook", True, short="values", screen=PLAYBOOK),
    Key("y", "yes", "Yes: run it now", "Playbook", True, short="yes", screen=PLAYBOOK),
    Key("n", "no", "No: run nothing", "Playbook", True, short="no", screen=PLAYBOOK),
    Key(
        "a",
        "always",
        "Always for this playbook on this cluster: remember, then run",
        "Playbook",
        True,
        short="always",
        screen=PLAYBOOK,
    ),
    Key("b", "rollback", "After a failure: run the rollback", "Playbook", True, short="rollback", screen=PLAYBOOK),
    Key("k", "keep", "After a failure: keep things as they are", "Playbook", True, short="keep", screen=PLAYBOOK),
    Key("escape,q", "close", "Close the playbook (not while it runs)", "Playbook", True, "esc / q", "close", PLAYBOOK),
)


def bindings(screen: str = "app") -> list[BindingType]:
    """The Textual bindings of ``screen``'s keys (those Textual or a widget handles itself left out)."""
    return [
        Binding(
            k.key, k.action, k.short or k.description, show=k.show, key_display=k.label or None, tooltip=k.description
        )
        for k in KEYS
        if k.screen == screen and k.key not in ("enter", "tab", "shift+tab", "ctrl+p")
    ]


#: Keys a remediation may not take: those of the cockpit and of the finding screen, where its key is pressed.
FINDING_KEYS = ("escape", "q")


def playbook_key_problem(key: str) -> str:
    """Why a remediation's key cannot be used in the cockpit, or ""."""
    taken = {k.label or k.key for k in KEYS if k.screen == "app"} | {k.key for k in KEYS if k.screen == "app"}
    names = {"space": " ", "question_mark": "?", "slash": "/", "colon": ":"}
    taken |= {names.get(k, k) for k in taken} | set(FINDING_KEYS)
    return f"{key!r} is one of the cockpit's own keys" if key in taken else ""
