"""A remediation from preview to run: what it does, its risk, the values used, the exact command for every
node, the verification and the rollback; `r` asks in the screen, then runs it over each node's SSH
connection with what the nodes print streaming in, and offers the rollback when a step or the verification
fails. Read-only mode runs only read-only playbooks; every command goes to the audit log."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import ClassVar, Literal

from rich.text import Text
from textual import work
from textual.app import ComposeResult, SystemCommand
from textual.binding import BindingType
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Footer, RichLog, Static

from sparktui.core.audit import AuditEntry, AuditLog
from sparktui.core.cluster import Cluster
from sparktui.core.errors import Refused
from sparktui.core.events import Finding
from sparktui.core.remedy import actions
from sparktui.core.remedy import plan as remedy
from sparktui.core.remedy import playbook as pb
from sparktui.core.remedy import render as rd
from sparktui.core.remedy.approvals import Approvals, cluster_id
from sparktui.core.remote.command import Command
from sparktui.core.text import display
from sparktui.richtext import translation_text
from sparktui.tui.bindings import KEYS, PLAYBOOK, bindings
from sparktui.tui.screens.values import ValuesScreen

RISK_STYLE = {"read-only": "green", "restarts": "yellow", "changes-node": "bold red"}

#: ready: shown, nothing running; asking: the confirmation is on screen; running; offering: a failure is on
#: screen and the run waits for b or k; finished: the final status is on screen (r runs it again).
Phase = Literal["ready", "asking", "running", "offering", "finished"]
_ALLOWED: dict[str, tuple[Phase, ...]] = {
    "run": ("ready", "finished"),
    "values": ("ready", "finished"),
    "yes": ("asking",),
    "no": ("asking",),
    "always": ("asking",),
    "rollback": ("offering",),
    "keep": ("offering",),
}


@dataclass
class PlayContext:
    """What a run from the cockpit takes from the app: read-only mode, the incident folder the run is also
    recorded in (a live session's spool; None for a replayed bundle, which is never written to), the
    app's list of every command that ran, for its export, and the values typed in (kept while it runs)."""

    readonly: bool = False
    incident: Path | None = None
    ran: list[AuditEntry] = field(default_factory=list)
    given: dict[str, dict[str, str]] = field(default_factory=dict)  # values typed in, per playbook id


@dataclass
class _Recorded(AuditLog):
    """The audit log, also handing each entry to ``seen`` once it is written."""

    seen: Callable[[AuditEntry], None]

    def add(self, entry: AuditEntry) -> None:
        super().add(entry)
        self.seen(entry)


@dataclass
class _Progress:
    """Which entry of a run is which: the steps in order, then the verification, then the rollback."""

    steps: int
    rollback: int
    done: int = 0
    undone: int = 0
    rolling_back: bool = False

    def label(self) -> str:
        """The label of the entry that just finished."""
        if self.rolling_back:
            self.undone += 1
            return f"rollback {self.undone}/{self.rollback}"
        if self.done < self.steps:
            self.done += 1
            return f"step {self.done}/{self.steps}"
        return "verification"


class PlaybookScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = bindings(PLAYBOOK)

    def __init__(
        self,
        playbook: pb.Playbook,
        finding: Finding,
        nodes: rd.Nodes,
        cluster: Cluster | None = None,
        context: PlayContext | None = None,
    ) -> None:
        super().__init__()
        self.playbook, self.finding, self.nodes, self.cluster = playbook, finding, nodes, cluster
        self.context = context or PlayContext()
        self.given = self.context.given.setdefault(playbook.id, {})
        self.approvals = Approvals.default()
        self.cluster_key = cluster_id(cluster, nodes.all)
        self.phase: Phase = "ready"
        self.status = Static(id="play-status")
        self.output = RichLog(id="play-output", wrap=True, max_lines=10_000)
        self._rendered: rd.Rendered | str | None = None
        self._probed: dict[str, dict[str, str]] | None = None  # values read on the nodes, once read
        self._progress = _Progress(0, 0)
        self._answer: asyncio.Future[bool] | None = None

    def rendered(self) -> rd.Rendered | str:
        """The commands, rendered once (what is shown is what runs), or why they cannot be rendered (a value
        missing or refused)."""
        if self._rendered is None:
            values = self._values()
            try:
                self._rendered = rd.render(
                    self.playbook, values, self.nodes, self.finding.nodes, per_node=self._probed or {}
                )
            except pb.PlaybookError as exc:
                self._rendered = str(exc)
        return self._rendered

    @property
    def refused(self) -> bool:
        """Read-only mode and a playbook that is not read-only."""
        return self.context.readonly and self.playbook.risk != "read-only"

    # -- what it shows ---------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        with Vertical(id="playbook"):
            with VerticalScroll(id="play-details"):
                yield from self._about()
            yield self.status
            yield self.output
        yield Footer()

    def _about(self) -> Iterable[Static]:
        book = self.playbook
        yield Static(
            Text.assemble(
                (f" {book.key} ", "reverse bold"),
                " ",
                (book.title, "bold"),
                "  ",
                (book.risk, RISK_STYLE.get(book.risk, "")),
                (f"  {book.id}", "dim"),
            )
        )
        yield Static(Text(book.description), classes="section")
        result = self.rendered()
        if isinstance(result, str):
            yield Static(Text.assemble(("Cannot render yet: ", "bold yellow"), result), classes="section")
            steps = [Text.assemble((f"{step.on:>8} {step.place:<9} ", "cyan"), step.run.strip()) for step in book.steps]
            yield _section("The steps, with their {parameters} still to fill", Text("\n").join(steps))
        else:
            yield from self._details(result)
        for name, found in remedy.translations(book, self.cluster.values() if self.cluster else None):
            title = f"{name}: translated from the cluster file's SGLang launch"
            body = Text(f"cannot translate: {display(found)}") if isinstance(found, str) else translation_text(found)
            yield _section(title, body)

    def _details(self, rendered: rd.Rendered) -> Iterable[Static]:
        values = [Text.assemble((f"{name:>14} ", "cyan"), value) for name, value in rendered.values.items()]
        yield _section("Values", Text("\n").join(values))
        yield _section("Commands, per node, exactly as they will run", _commands(rendered.commands))
        yield _section("Verification", Text(rendered.check.describe()))
        if rendered.rollback:
            yield _section("Rollback, when a step or the verification fails", _commands(rendered.rollback))
        else:
            yield _section("Rollback", Text("none: a failure leaves things as they are", style="dim"))

    def on_mount(self) -> None:
        self._show_state()
        if self.playbook.reads_nodes and self._probed is None and isinstance(self.rendered(), str):
            self.status.update(Text("Reading the nodes first (docker inspect, read-only)...", style="dim"))
            self._probe()

    @work(exclusive=True, group="probe")
    async def _probe(self) -> None:
        """Read the values the playbook takes from the nodes, then show the commands they make."""
        reach = remedy.targets(self.cluster, self.nodes)
        try:
            self._probed, notes = await remedy.probe_over_ssh(
                self.playbook, self._values(), self.nodes, reach, self.finding.nodes
            )
        except remedy.ProbeError as exc:
            self._probed = {}
            self.status.update(Text(f"Cannot read the nodes: {display(str(exc))}", style="bold yellow"))
            return
        await self._show_again([f"note: {display(n)}" for n in notes])

    def _values(self) -> dict[str, str]:
        """Each parameter's value: typed in, else from the finding, the cluster file or its default."""
        cluster = self.cluster.values() if self.cluster else None
        return rd.resolve(self.playbook, self.finding.facts, cluster, self.given)

    async def _show_again(self, notes: Iterable[str] = ()) -> None:
        """Render again (new values, or values read on the nodes) and show the result."""
        self._rendered = None
        details = self.query_one("#play-details", VerticalScroll)
        await details.remove_children()
        await details.mount_all([*self._about(), *(Static(Text(note, style="yellow")) for note in notes)])
        self._show_state()

    def _show_state(self) -> None:
        result = self.rendered()
        if isinstance(result, str):
            self.status.update(
                Text("Cannot run: a value is missing or refused (above). e gives the values.", style="bold yellow")
            )
        elif self.refused:
            self.status.update(
                Text(
                    f"Read-only mode: this playbook is {self.playbook.risk}, so it cannot run from here "
                    "(only read-only playbooks do).",
                    style="bold yellow",
                )
            )
        else:
            asks = "approved before: it will not ask" if self._approved() else "it asks first"
            self.status.update(Text(f"r runs it ({asks}) · esc closes", style="dim"))

    def commands(self) -> Iterable[SystemCommand]:
        """The keys that act now, for the command palette."""
        for key in KEYS:
            if key.screen == PLAYBOOK and self.check_action(key.action, ()):
                yield SystemCommand(
                    key.description, f"key {key.label or key.key}", partial(self.run_action, key.action)
                )

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        allowed = _ALLOWED.get(action)
        return allowed is None or self.phase in allowed

    def _phase(self, phase: Phase, status: Text) -> None:
        self.phase = phase
        self.status.update(status)
        self.refresh_bindings()

    # -- keys ------------------------------------------------------------------------------------

    def action_run(self) -> None:
        result = self.rendered()
        if isinstance(result, str):
            self.notify(f"cannot run: {result}", severity="error")
        elif self.refused:
            self.notify(
                f"read-only mode: {self.playbook.id} is {self.playbook.risk}; only read-only playbooks run",
                severity="warning",
            )
        elif self._approved():
            self._start(result, f"approved before: always for this playbook on this cluster ({self.approvals.path})")
        else:
            nodes = ", ".join(dict.fromkeys(display(c.node) for c in result.commands))
            self._phase(
                "asking",
                Text.assemble(
                    (f"Run {len(result.commands)} commands on {nodes} (", "bold"),
                    (self.playbook.risk, RISK_STYLE.get(self.playbook.risk, "")),
                    (")?", "bold"),
                    "  y yes · n no · a always for this playbook on this cluster",
                ),
            )

    def action_values(self) -> None:
        self.app.push_screen(ValuesScreen(self.playbook, self._values()), self._take_values)

    async def _take_values(self, changed: dict[str, str] | None) -> None:
        if not changed:
            return
        self.given.update(changed)
        if self.playbook.reads_nodes:
            self._probed = None
            self._rendered = None
            self.status.update(Text("Reading the nodes again (docker inspect, read-only)...", style="dim"))
            self._probe()
        else:
            await self._show_again()

    def action_yes(self) -> None:
        self._start(self._ready())

    def action_no(self) -> None:
        self._phase("ready", Text("Nothing ran.", style="yellow"))

    def action_always(self) -> None:
        note = f"approved: always for this playbook on this cluster ({self.approvals.path})"
        try:
            self.approvals.grant(self.cluster_key, self.playbook)
        except OSError as exc:
            note = f"could not remember the approval ({exc}): running it this once"
        self._start(self._ready(), note)

    def action_rollback(self) -> None:
        if self._answer is not None and not self._answer.done():
            self._answer.set_result(True)

    def action_keep(self) -> None:
        if self._answer is not None and not self._answer.done():
            self._answer.set_result(False)

    def action_close(self) -> None:
        if self.phase in ("running", "offering"):
            wait = "answer b or k, then" if self.phase == "offering" else "wait until it ends, then"
            self.notify(f"the playbook is running: {wait} close", severity="warning")
            return
        self.dismiss()

    def _approved(self) -> bool:
        return self.approvals.granted(self.cluster_key, self.playbook)

    def _ready(self) -> rd.Rendered:
        result = self.rendered()
        assert not isinstance(result, str)  # asking happens only for a rendered playbook
        return result

    # -- running ---------------------------------------------------------------------------------

    def _start(self, rendered: rd.Rendered, note: str = "") -> None:
        self.query_one("#playbook").add_class("-ran")
        self._progress = _Progress(len(rendered.commands), len(rendered.rollback))
        self.output.write(Text(f"── {self.playbook.title}: {len(rendered.commands)} commands", style="bold"))
        if note:
            self.output.write(Text(note, style="yellow"))
        self._phase("running", Text("Running…", style="bold"))
        self._execute(rendered)

    @work(exclusive=True, group="play")
    async def _execute(self, rendered: rd.Rendered) -> None:
        incidents = [self.context.incident] if self.context.incident is not None else []
        audit = _Recorded(remedy.audit_log(incidents).paths, self._entry)
        try:
            outcome = await remedy.execute_over_ssh(
                rendered,
                remedy.targets(self.cluster, self.nodes),
                readonly=self.context.readonly,
                audit=audit,
                output=self._line,
                offer_rollback=self._offer,
            )
        except (actions.ActionError, Refused, OSError) as exc:
            final = Text(f"Failed: {display(str(exc))}", style="bold red")
        else:
            final = _final(rendered, outcome)
        self.output.write(final)
        where = ", ".join(str(p) for p in audit.paths)
        self._phase("finished", Text.assemble(final, "\n", (f"audit log: {where} · r runs it again", "dim")))

    def _line(self, node: str, line: str) -> None:
        """A line a node printed, made inert and prefixed with its node."""
        self.output.write(Text.assemble((f"{display(node):>12} ", "cyan"), display(line)))

    def _entry(self, entry: AuditEntry) -> None:
        """An entry was audited: keep it for the export and show how far the run got."""
        self.context.ran.append(entry)
        label = self._progress.label()
        ok = entry.exit_code == 0
        outcome = ("passed" if ok else "failed") if label == "verification" else entry.outcome
        took = f" ({entry.duration_s:.1f} s)" if entry.duration_s is not None else ""
        line = f"{'✓' if ok else '✗'} {label}  {display(entry.node)}: {display(entry.step)}: {outcome}{took}"
        self.output.write(Text(line, style="green" if ok else "bold red"))
        if self.phase == "running":
            self.status.update(Text(f"Running… {label}: {outcome}", style="bold"))

    async def _offer(self, outcome: actions.Outcome) -> bool:
        """After a failure: show it, and wait for b (run the rollback) or k (keep things as they are)."""
        count = self._progress.rollback
        self._answer = asyncio.get_running_loop().create_future()
        self._phase(
            "offering",
            Text.assemble(
                (outcome.failure, "bold red"),
                "\n",
                (f"b run the rollback ({count} commands) · k keep things as they are", "bold"),
            ),
        )
        try:
            rollback = await self._answer
        finally:
            self._answer = None
        self._progress.rolling_back = rollback
        self._phase("running", Text("Running the rollback…" if rollback else "Keeping things as they are…"))
        return rollback


def _final(rendered: rd.Rendered, outcome: actions.Outcome) -> Text:
    """The last line of a run: succeeded (verified) / failed, rolled back / failed, left as is."""
    if outcome.ok:
        if rendered.check.kind == "none":
            return Text("Succeeded: every command exited 0 (this playbook has no verification).", style="bold green")
        note = outcome.verdict.note if outcome.verdict is not None else ""
        return Text(f"Succeeded, verified: {note}", style="bold green")
    if outcome.rolled_back:
        failed = sum(e.exit_code != 0 for e in outcome.rolled_back)
        back = f"rollback ran, but {failed} of its commands failed" if failed else "rolled back"
        return Text(f"Failed, {back}: {outcome.failure}", style="bold red")
    if not outcome.changed:
        return Text(f"Failed before changing anything (only checks ran): {outcome.failure}", style="bold red")
    why = "the rollback was declined" if rendered.rollback else "this playbook has no rollback"
    return Text(f"Failed, left as is ({why}): {outcome.failure}", style="bold red")


def _commands(commands: Iterable[Command]) -> Text:
    return Text("\n").join(Text.assemble((f"{c.node:>14} ", "cyan"), ("$ ", "dim"), c.command) for c in commands)


def _section(title: str, body: Text) -> Static:
    return Static(Text.assemble((title, "bold underline"), "\n", body), classes="section")
