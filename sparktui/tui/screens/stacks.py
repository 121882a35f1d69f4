"""``W``: where every rank is now. The session's nodes are asked (py-spy dumps of every rank process, on the
host and in its containers, with the GPUs' state: :mod:`sparktui.tui.stacks`), each node's progress shown
while it runs; then each group's ranks in a table, the odd ones marked, with the verdict and what it names
("rank 1 on spark-b is idle in application code ... and never entered new_group, which rank 0 waits in").
Closed with escape, q or ``W`` (which, pressed again, reads them again). Where ranks were found with no
py-spy to read them, ``b`` shows where this machine's py-spy would be copied, and ``b`` again copies it, reads
again and removes it. A replay (the demo too) reads nothing: it shows the bundle's own capture, or says that
there are no live ranks to read."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Footer, Static

from sparktui.core.errors import Refused, Unavailable
from sparktui.core.events import Finding
from sparktui.core.report.fold import belongs
from sparktui.core.stacks import bring as bringing
from sparktui.core.stacks.compare import NONE_FOUND, NOT_ALL_CLEAR
from sparktui.core.stacks.snapshot import Snapshot
from sparktui.core.text import display
from sparktui.tui import bindings as registry
from sparktui.tui.bindings import closing
from sparktui.tui.stacks import NO_LIVE_RANKS, Captures

VERDICT_STYLE = {
    "hang": "bold red",
    "progressing": "green",
    "together": "yellow",
    "no-wait": "dim",
    "unread": "red",
    "partial": "yellow",
    "no-hang": "green",
}
ODD = "bold yellow"


def render(snapshot: Snapshot, stalls: Sequence[Finding] = ()) -> RenderableType:
    """Each group's ranks, its verdict and what it names; then what could not be read. A group on no node and
    of no job the stall findings (``stalls``) name is titled as another machine's or job's, as the finding's
    "now" part sets it apart."""
    parts: list[RenderableType] = []
    if not snapshot.groups:
        parts.append(Text(f"{NOT_ALL_CLEAR}:", style="bold yellow") if snapshot.problems else Text(NONE_FOUND))
    named = ", ".join(dict.fromkeys(n for f in stalls for n in f.nodes))
    for g in snapshot.groups:
        title = f"job {display(g.job)}"
        if stalls and not any(belongs(g, f, snapshot) for f in stalls):
            title += (
                f" (another machine's or job's; the stall findings are of {display(named)})"
                if named
                else (" (another machine's or job's; the stall findings name none of its nodes)")
            )
        table = Table(title=title, title_justify="left", expand=True)
        for column in ("rank", "where", "pid", "status", "now", "GPU"):
            table.add_column(column, overflow="fold", ratio=4 if column == "now" else None)
        for r in g.ranks:
            style = ODD if r.odd else ""
            table.add_row(
                Text("" if r.rank is None else str(r.rank), style=style),
                display(r.where),
                str(r.pid),
                r.status + (" moving" if r.moved else ""),
                Text(display(r.now), style=style),
                display(r.gpu),
            )
        parts.append(table)
        verdict = Text("verdict: ")
        verdict.append(g.verdict.upper(), style=VERDICT_STYLE.get(g.verdict, ""))
        parts.append(verdict)
        parts += [Text(f"  {display(f)}") for f in g.findings]
        parts.append(Text(""))
    parts += [Text(display(f"NCCL's RAS on {node}: {said}")) for node, said in snapshot.ras]
    parts += [Text(display(p), style="yellow") for p in snapshot.problems]
    return Group(*parts)


class StacksScreen(ModalScreen[None]):
    """A capture of every rank's stack over the session's nodes, shown as it comes."""

    BINDINGS: ClassVar[list[BindingType]] = closing("stacks") + registry.bindings(registry.STACKS)
    DEFAULT_CSS = """
    StacksScreen { align: center middle; }
    #stacks { width: 90%; max-width: 160; height: 85%; border: thick $accent; background: $surface; padding: 0 1; }
    #stacks-result { height: 1fr; }
    """

    def __init__(self, captures: Captures, findings: Sequence[str] = ()) -> None:
        super().__init__()
        self.captures = captures
        self.findings = tuple(findings)  # the stall findings it is taken for ((): the session's)
        self.phase = "capturing"  # then "done" or "failed"
        self.snapshot: Snapshot | None = None
        self.said: dict[str, str] = {}  # each node's last progress
        self.asked = False  # b was pressed once: where py-spy would go is shown, b again brings it
        self.head = Static(id="stacks-head")
        self.progress = Static(id="stacks-progress")
        self.result = Static(id="stacks-body")

    def compose(self) -> ComposeResult:
        with Vertical(id="stacks"):
            yield self.head
            yield self.progress
            with VerticalScroll(id="stacks-result"):
                yield self.result
        yield Footer()

    def on_mount(self) -> None:
        if self.captures.replay:
            self._replayed()
            return
        self.head.update(
            Text.assemble(
                ("Where every rank is now", "bold"), f"  py-spy on {display(self.captures.where)}, read-only", style=""
            )
        )
        self.progress.update(Text("connecting…", style="dim"))
        self._capture()

    def _replayed(self) -> None:
        """A replay's capture: the one its bundle keeps, read when it was made; none is made now."""
        kept = self.captures.kept()
        self.head.update(Text.assemble(("Where every rank was", "bold"), "  the replayed bundle's capture"))
        if kept is None:
            self.progress.update(Text(f"{NO_LIVE_RANKS}, and this bundle keeps no capture of the stacks", style="bold"))
            self.phase = "failed"
            return
        line = Text(f"read at {kept.taken:%Y-%m-%d %H:%M:%S} UTC on {display(kept.where)}, not now: ", style="dim")
        line.append(kept.verdict, style=VERDICT_STYLE.get(kept.verdict, "bold"))
        self.progress.update(line)
        self.result.update(render(kept, self.captures.stalls))
        self.snapshot, self.phase = kept, "done"

    def _said(self, node: str, what: str) -> None:
        self.said[node] = what
        self.progress.update(Text("\n".join(f"{display(n)}: {display(w)}" for n, w in self.said.items()), style="dim"))

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """A replay has no ranks to bring py-spy to: its ``b`` is not offered."""
        return not (action == "bring" and self.captures.replay)

    def action_bring(self) -> None:
        """b: where this machine's py-spy would go; b again: bring it, read again, remove it."""
        places = self.captures.unspied
        if self.phase != "done" or self.captures.replay or not places.places:
            self.notify("no rank here lacks py-spy: nothing to bring", timeout=4)
            return
        binary = bringing.local_binary()
        if binary is None:
            self.notify("this machine has no py-spy to bring (pip install py-spy)", severity="warning", timeout=6)
            return
        if not self.asked:
            self.asked = True
            lines = [*places.said(binary), *places.refused, "b again: copy it, read again, remove it · escape: do not"]
            self.progress.update(Text("\n".join(display(line) for line in lines), style="bold yellow"))
            return
        self.asked, self.phase = False, "capturing"
        self.progress.update(Text("bringing py-spy…", style="dim"))
        self._capture(bring=True)

    @work(exclusive=True, group="stacks-capture", exit_on_error=False)
    async def _capture(self, bring: bool = False) -> None:
        self.said = {node: "connecting" for node in self.captures.targets}
        try:
            taken = await self.captures.capture(self._said, self.findings, bring=bring)
        except (Refused, Unavailable, OSError) as exc:  # a node that is no SSH target, an audit log not written
            self.progress.update(Text(f"not read: {display(str(exc))}", style="bold red"))
            self.phase = "failed"
            return
        line = Text(f"read at {taken.taken:%H:%M:%S} UTC in {taken.seconds:.1f} s: ", style="dim")
        line.append(taken.verdict, style=VERDICT_STYLE.get(taken.verdict, "bold"))
        line.append("   W again reads them again · x in the cockpit exports them with the report", style="dim")
        if self.captures.unspied.places:
            count = len(self.captures.unspied.places)
            line.append(f" · b brings this machine's py-spy to the {count} place(s) without one", style="bold yellow")
        self.progress.update(line)
        self.result.update(render(taken, self.captures.stalls))
        self.snapshot, self.phase = taken, "done"
