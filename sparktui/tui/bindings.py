"""Every key of the app in one registry, so the footer, the help screen and the command palette agree."""

from __future__ import annotations

from dataclasses import dataclass

from textual.binding import Binding, BindingType


@dataclass(frozen=True, slots=True)
class Key:
    """One key of the registry: what it does, where (the cockpit or a screen), and how the footer and help show it."""

    key: str
    action: str
    description: str
    group: str
    show: bool = False  # in the footer
    label: str = ""  # how the help screen writes the key, when not the key name itself
    short: str = ""  # the footer's word for it
    screen: str = "app"  # where it acts: "app" (the cockpit), "finding" or "playbook" (their screens)


#: The keys of a finding's screen (:class:`sparktui.tui.screens.finding.FindingScreen`).
FINDING = "finding"
#: The keys of a remediation's screen (:class:`sparktui.tui.screens.playbook.PlaybookScreen`).
PLAYBOOK = "playbook"
#: The keys of the stacks' screen (:class:`sparktui.tui.screens.stacks.StacksScreen`).
STACKS = "stacks"

KEYS: tuple[Key, ...] = (
    Key("question_mark", "help", "Help: every key", "General", True, "?", "help"),
    Key("colon", "command_palette", "Command palette (nodes, panes, findings)", "General", False, ":"),
    Key("ctrl+p", "command_palette", "Command palette", "General"),
    Key("x", "export", "Export a report of this incident", "General", True, short="export"),
    Key(
        "S",
        "sources",
        "Sources and their errors in full",
        "General",
        True,
        short="sources",
    ),
    Key("q", "quit", "Quit", "General", True, short="quit"),
    Key("slash", "filter", "Filter the pane by regex (!regex hides)", "Logs", True, "/", "filter"),
    Key("n", "next_match", "Next filter match in the focused pane", "Logs"),
    Key("N", "previous_match", "Previous filter match", "Logs"),
    Key("f", "maximise", "Maximise / restore the focused pane", "Logs", True, short="maximise"),
    Key("space", "pause", "Pause / resume following", "Logs", True, short="pause"),
    Key(
        "y",
        "copy",
        "Copy the selected line (or the newest shown)",
        "Logs",
        True,
        short="copy",
    ),
    Key("right_square_bracket", "next_nodes", "Next nodes (when not all fit)", "Logs", label="]"),
    Key("left_square_bracket", "previous_nodes", "Previous nodes", "Logs", label="["),
    Key(
        "e",
        "next_evidence",
        "Next evidence line of the selected finding",
        "Findings",
        True,
        short="evidence",
    ),
    Key("E", "previous_evidence", "Previous evidence line", "Findings"),
    Key("enter", "open_finding", "Open the finding: what, why, evidence, fixes", "Findings"),
    Key("Y", "copy_finding", "Copy the finding as Markdown (redacted)", "Findings"),
    Key(
        "G",
        "progress",
        "Start-up progress: each rank's stage",
        "Findings",
        True,
        short="progress",
    ),
    Key(
        "I",
        "inventory",
        "Inventory: check the nodes before launch",
        "Findings",
    ),
    Key("W", "stacks", "Where every rank is now (py-spy stacks)", "Findings"),
    Key("tab", "app.focus_next", "Next pane", "Navigation"),
    Key("shift+tab", "app.focus_previous", "Previous pane", "Navigation"),
    Key("j,down", "down", "Scroll down", "Finding", True, "j / ↓", "scroll", FINDING),
    Key("k,up", "up", "Scroll up", "Finding", screen=FINDING, label="k / ↑"),
    Key("space,pagedown", "page_down", "Page down", "Finding", True, "space / pgdn", "page", FINDING),
    Key("pageup", "page_up", "Page up", "Finding", screen=FINDING, label="pgup"),
    Key("home", "top", "To the top", "Finding", screen=FINDING),
    Key("end", "bottom", "To the end", "Finding", screen=FINDING),
    Key("y", "copy_evidence", "Copy the evidence", "Finding", True, short="copy evidence", screen=FINDING),
    Key("Y", "copy_finding", "Copy the finding as Markdown", "Finding", True, short="copy all", screen=FINDING),
    Key("escape,q", "dismiss", "Close the finding", "Finding", True, "esc / q", "close", FINDING),
    Key("W", "stacks", "Where every rank is now", "Finding", True, short="stacks", screen=FINDING),
    Key("r", "again", "Read the stacks again", "Stacks", True, short="again", screen=STACKS),
    Key("escape,q,W", "dismiss", "Close the stacks", "Stacks", True, "esc / q / W", "close", STACKS),
    Key(
        "r",
        "run",
        "Run the playbook (asks first, unless approved)",
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
        "Always on this cluster: remember, then run",
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


def closing(action: str) -> list[BindingType]:
    """A modal screen's way out: escape, q, and the cockpit's key for ``action``, which opened it (so the key
    toggles the screen)."""
    opening = next(k.key for k in KEYS if k.action == action and k.screen == "app")
    return [Binding(key, "dismiss", "Close") for key in ("escape", "q", opening)]


_CHARACTERS = {
    "space": " ",
    "question_mark": "?",
    "slash": "/",
    "colon": ":",
    "right_square_bracket": "]",
    "left_square_bracket": "[",
}


def playbook_key_problem(key: str) -> str:
    """Why a remediation's key cannot be used in the cockpit, or "": it may not be one of the cockpit's keys,
    nor of the finding screen's, where it is pressed."""
    taken = {name for k in KEYS if k.screen in ("app", FINDING) for name in k.key.split(",")}
    taken |= {_CHARACTERS.get(k, k) for k in taken}
    return f"{key!r} is one of the cockpit's own keys" if key in taken else ""
