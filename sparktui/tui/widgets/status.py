"""The status bar: replay or live, the incident's clock, paused or ended, what is still being read, every
source's state (by name while a few fit, else counted by state) and how each server serves."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rich.text import Text
from textual.widgets import Static

from sparktui.core.analysis.serving import Serving
from sparktui.core.events import State, StateChange
from sparktui.core.text import display
from sparktui.tui.tallies import BEHIND, Census, reading
from sparktui.tui.widgets.node import NO_NODE

#: Sources beyond which the status bar counts them by state instead of naming each.
NAMED_SOURCES = 6
STATE_STYLE = {State.STREAMING: "green", State.FAILED: "red", State.RETRYING: "red"}


def named(states: Mapping[str, StateChange], *, details: bool, room: int) -> Text:
    """Each source by name with its state (and the state's detail), when there are few and they fit in
    ``room`` cells; else nothing."""
    text = Text()
    if len(states) > NAMED_SOURCES:
        return text
    for name, change in sorted(states.items()):
        state = f"{change.state.value} {display(change.detail)}".strip() if details else change.state.value
        text.append(f"   {name} ", style="bold")
        text.append(state, style=STATE_STYLE.get(change.state, "dim"))
    return text if text.cell_len <= room else Text()


class StatusBar(Static):
    """One line at the foot of the cockpit; drawn again only when its words changed (it is told ten times a
    second, mostly the same)."""

    def __init__(self, *, replay: bool, readonly: bool) -> None:
        super().__init__(id="status")
        self.replay, self.readonly = replay, readonly
        self.shown = Text()

    def show(
        self,
        *,
        clock: float,
        paused: bool,
        done: bool,
        states: Mapping[str, StateChange],
        census: Census,
        dropped: int,
        serving: Sequence[Serving],
    ) -> None:
        text = Text()
        text.append(f" {'replay' if self.replay else 'live'} ", style="reverse")
        if self.readonly:
            text.append(" read-only ", style="bold black on green")
        text.append(f" t+{clock:,.0f}s ")
        if paused:
            text.append(" PAUSED ", style="bold black on yellow")
        elif done:
            text.append(" ended ", style="dim")
        if dropped:
            text.append(f" {dropped:,} lines not shown (the analysis saw them) ", style="yellow")
        if census.size - census.read >= BEHIND:  # a big file, or thousands of small ones
            text.append(f"  {reading(census.read, census.size)} ", style="bold yellow")
        troubled = census.count(State.FAILED, State.RETRYING)
        hint = Text("   S: every source, its error in full" if troubled else "", style="bold")
        room = self.app.size.width - text.cell_len - hint.cell_len
        by_name = named(states, details=True, room=room) or named(states, details=False, room=room)
        if by_name or not states:
            text.append_text(by_name)
        else:  # too many to name, or too long: counted by state
            text.append(f"   {len(states):,} source{'s' if len(states) != 1 else ''}: ")
            text.append_text(
                Text(", ").join(
                    Text(f"{n:,} {state.value}", style=STATE_STYLE.get(state, "dim")) for state, n in census.states
                )
            )
        for server in serving:
            # how each node serves, from its /metrics: generating (green) or running requests that get no token
            stuck = server.running > 0 and not server.tokens_per_s
            text.append(f"   {server.node or NO_NODE} ", style="bold")
            text.append(server.short, style="yellow" if stuck else "green")
        text.append_text(hint)
        if text != self.shown:
            self.shown = text
            self.update(text, layout=False)  # one line, whatever it says: no layout
