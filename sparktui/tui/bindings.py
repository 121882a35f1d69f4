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
    screen: str = "app"  # where it acts: "app" (the cockpit), or the screen or widget of that name below
    palette: str = ""  # the command palette's name for it, when it is offered there (the cockpit's keys)


#: The keys of a finding's screen (:class:`sparktui.tui.screens.finding.FindingScreen`).
FINDING = "finding"
#: The keys of a remediation's screen (:class:`sparktui.tui.screens.playbook.PlaybookScreen`).
PLAYBOOK = "playbook"
#: The keys of the filter field (:class:`sparktui.tui.widgets.filter.FilterBar`).
FILTER = "filter"
#: The keys of the sources screen's list (:class:`sparktui.tui.screens.sources.SourceList`).
SOURCES = "sources"
#: The keys of a remediation's values (:class:`sparktui.tui.screens.values.ValuesScreen`).
VALUES = "values"
#: The keys of the welcome screen (:class:`sparktui.tui.screens.welcome.WelcomeScreen`).
WELCOME = "welcome"
#: The keys of the stacks screen (:class:`sparktui.tui.screens.stacks.StacksScreen`).
STACKS = "stacks"

KEYS: tuple[Key, ...] = (
    Key("question_mark", "help", "Help: every key", "General", True, "?", "help", palette="Help"),
    Key("colon", "command_palette", "Command palette (nodes, panes, findings)", "General", False, ":"),
    Key("ctrl+p", "command_palette", "Command palette", "General"),
    Key("x", "export", "Export a report of this incident", "General", True, short="export", palette="Export report"),
    Key(
        "S",
        "sources",
        "Sources and their errors in full",
        "General",
        True,
        short="sources",
        palette="Sources and errors",
    ),
    Key("q", "quit", "Quit", "General", True, short="quit"),
    Key("slash", "filter", "Filter the focused pane (none: all) by regex", "Logs", True, "/", "filter"),
    Key("escape", "cancel", "Close the filter field (enter applies it)", "Logs", True, "esc", "Cancel", FILTER),
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
        palette="Start-up progress",
    ),
    Key(
        "I",
        "inventory",
        "Inventory: check the nodes before launch",
        "Findings",
    ),
    Key("W", "stacks", "Where every rank is now (py-spy stacks)", "Findings"),
    Key(
        "b",
        "bring",
        "In W: copy py-spy where ranks lack it",
        "Findings",
        True,
        short="bring py-spy",
        screen=STACKS,
    ),
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
    Key("escape", "cancel", "Values: cancel, nothing changed", "Playbook", True, "esc", "cancel", VALUES),
    Key("ctrl+s", "apply", "Values: apply them (enter too)", "Playbook", True, "ctrl+s", "apply", VALUES),
    Key("up,k", "move(-1)", "Previous source", "Sources", True, "k / ↑", "Previous", SOURCES),
    Key("down,j", "move(1)", "Next source", "Sources", True, "j / ↓", "Next", SOURCES),
    Key("pageup", "page(-1)", "Page up", "Sources", True, "pgup", "Page up", SOURCES),
    Key("pagedown,space", "page(1)", "Page down", "Sources", True, "pgdn / space", "Page down", SOURCES),
    Key("home", "jump(0)", "First source", "Sources", True, short="First", screen=SOURCES),
    Key("end", "jump(-1)", "Last source", "Sources", True, short="Last", screen=SOURCES),
    Key("d", "demo", "Run the demo", "Welcome", True, short="Run the demo", screen=WELCOME),
    Key("q,escape", "quit", "Quit", "Welcome", True, "q / esc", "Quit", WELCOME),
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


def palette() -> list[Key]:
    """The cockpit's keys offered in the command palette too."""
    return [k for k in KEYS if k.screen == "app" and k.palette]


def cockpit_key(action: str) -> Key:
    """The cockpit's key for ``action``."""
    return next(k for k in KEYS if k.action == action and k.screen == "app")


def key_label(action: str) -> str:
    """How the cockpit's key for ``action`` is written (the help screen's way)."""
    k = cockpit_key(action)
    return k.label or k.key


def forwarded(action: str) -> list[BindingType]:
    """The cockpit's key for ``action`` on a modal screen (which the cockpit's own keys do not reach), acting
    as in the cockpit."""
    k = cockpit_key(action)
    return [Binding(k.key, f"app.{action}", k.short or k.description, show=False)]


def closing(action: str) -> list[BindingType]:
    """A modal screen's way out: escape, q, and the cockpit's key for ``action``, which opened it (so the key
    toggles the screen)."""
    opening = cockpit_key(action).key
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
