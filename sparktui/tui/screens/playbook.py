"""A remediation from preview to run: what it does, its risk, the values used, the exact command for every
node, the verification and the rollback; `r` asks in the screen, then runs it over each node's SSH
connection with what the nodes print streaming in, and offers the rollback when a step or the verification
fails. The flow is the one ``sparktui play`` follows (:class:`~sparktui.core.remedy.plan.Plan`); this screen
only shows it and asks. Its workers post messages; the handlers here own the widgets."""

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
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import RichLog, Static

from sparktui.core.audit import AuditEntry, AuditLog
from sparktui.core.errors import Refused
from sparktui.core.remedy import actions
from sparktui.core.remedy.approvals import Approvals
from sparktui.core.remedy.plan import Plan, ProbeError, audit_log, final
from sparktui.core.remedy.playbook import PlaybookError
from sparktui.core.remedy.render import Rendered
from sparktui.core.remote.command import Command
from sparktui.core.text import display, display_text
from sparktui.richtext import translation_text
from sparktui.tui.bindings import KEYS, PLAYBOOK, bindings
from sparktui.tui.screens.values import ValuesScreen
from sparktui.tui.widgets.footer import SteadyFooter

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

    seen: Callable[[AuditEntry], None] = lambda entry: None

    def add(self, entry: AuditEntry) -> None:
        super().add(entry)
        self.seen(entry)


@dataclass
class _RunEntries:
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
    """One remediation: its commands per node, asked for, run, verified and rolled back where it fails."""

    BINDINGS: ClassVar[list[BindingType]] = bindings(PLAYBOOK)

    class Probed(Message):
        """The nodes were read (``error`` says why not), with notes on what did not carry over."""

        def __init__(self, error: str, notes: list[str]) -> None:
            super().__init__()
            self.error, self.notes = error, notes

    class Printed(Message):
        """A line a node printed while the playbook runs."""

        def __init__(self, node: str, line: str) -> None:
            super().__init__()
            self.node, self.line = node, line

    class Audited(Message):
        """A command (or the verification) finished and went to the audit log."""

        def __init__(self, entry: AuditEntry) -> None:
            super().__init__()
            self.entry = entry

    class Offered(Message):
        """A step or the verification failed: the rollback waits for b or k."""

        def __init__(self, failure: str) -> None:
            super().__init__()
            self.failure = failure

    class Answered(Message):
        """The user chose: run the rollback (``rollback``), or keep things as they are."""

        def __init__(self, rollback: bool) -> None:
            super().__init__()
            self.rollback = rollback

    class Finished(Message):
        """The run ended: its last line, and where it was audited."""

        def __init__(self, text: Text, audited: str) -> None:
            super().__init__()
            self.text, self.audited = text, audited

    def __init__(self, plan: Plan, context: PlayContext | None = None) -> None:
        super().__init__()
        self.plan = plan
        self.playbook = plan.playbook
        self.context = context or PlayContext()
        self.approvals = Approvals.default()
        self.phase: Phase = "ready"
        self.status = Static(id="play-status")
        self.output = RichLog(id="play-output", wrap=True, max_lines=10_000)
        self._rendered: Rendered | str | None = None
        self._progress = _RunEntries(0, 0)
        self._answer: asyncio.Future[bool] | None = None

    def rendered(self) -> Rendered | str:
        """The commands, rendered once (what is shown is what runs), or why they cannot be rendered (values
        missing, all of them named, or refused)."""
        if self._rendered is None:
            missing = self.plan.missing()
            if missing:
                needed = ", ".join(f"{p.name} ({p.description or p.kind})" for p in missing)
                self._rendered = f"{self.playbook.id}: no value for {needed}"
            else:
                try:
                    self._rendered = self.plan.render()
                except PlaybookError as exc:
                    self._rendered = str(exc)
        return self._rendered

    @property
    def refused(self) -> bool:
        """Read-only mode and a playbook that is not read-only."""
        return bool(self.plan.refused(self.context.readonly))

    # -- what it shows ---------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        with Vertical(id="playbook"):
            with VerticalScroll(id="play-details"):
                yield from self._about()
            yield self.status
            yield self.output
        yield SteadyFooter()

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
            yield Static(Text.assemble(("Cannot run yet: ", "bold yellow"), result), classes="section")
            yield from self._preview()
        else:
            yield from self._details(result)
        for name, found in self.plan.translations():
            title = f"{name}: translated from the cluster file's SGLang launch"
            body = Text(f"cannot translate: {display(found)}") if isinstance(found, str) else translation_text(found)
            yield _section(title, body)

    def _preview(self) -> Iterable[Static]:
        """The commands with each value still needed shown as <name>, or the steps as written."""
        try:
            preview = self.plan.render(preview=True)
        except PlaybookError:
            steps = [Text.assemble((f"{s.on:>8} {s.place:<9} ", "cyan"), s.run.strip()) for s in self.playbook.steps]
            yield _section("The steps, with their {parameters} still to fill", Text("\n").join(steps))
            return
        yield _section("Commands, with <the values still needed>", _commands(preview.commands))

    def _details(self, rendered: Rendered) -> Iterable[Static]:
        values = [Text.assemble((f"{name:>14} ", "cyan"), value) for name, value in rendered.shown.items()]
        yield _section("Values", Text("\n").join(values))
        yield _section("Commands, per node, exactly as they will run", _commands(rendered.commands))
        yield _section("Verification", Text(rendered.check.describe()))
        if rendered.rollback:
            yield _section("Rollback, when a step or the verification fails", _commands(rendered.rollback))
        else:
            yield _section("Rollback", Text("none: a failure leaves things as they are", style="dim"))

    def on_mount(self) -> None:
        self._show_state()
        if self.plan.needs_probe:
            self.status.update(Text("Reading the nodes first (docker inspect, read-only)...", style="dim"))
            self._probe()

    @work(exclusive=True, group="probe", exit_on_error=False)
    async def _probe(self) -> None:
        """Read the values the playbook takes from the nodes; the handler shows what they make."""
        try:
            await self.plan.probe()
        except ProbeError as exc:
            self.post_message(self.Probed(str(exc), []))
            return
        self.post_message(self.Probed("", self.plan.notes))

    async def on_playbook_screen_probed(self, message: Probed) -> None:
        if message.error:
            self.plan.probed = {}  # nothing more to read: render with what there is
            self.status.update(Text(f"Cannot read the nodes: {display(message.error)}", style="bold yellow"))
            return
        await self._show_again([f"note: {display(n)}" for n in message.notes])

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
                    f"Read-only mode: this playbook {self.playbook.does}, so it cannot run from here "
                    "(only read-only playbooks do).",
                    style="bold yellow",
                )
            )
        else:
            asks = "approved before: it will not ask" if self.plan.approved(self.approvals) else "it asks first"
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
            self.notify(self.plan.refused(True), severity="warning")
        elif self.plan.approved(self.approvals):
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
        self.app.push_screen(ValuesScreen(self.playbook, self.plan.values()), self._take_values)

    async def _take_values(self, changed: dict[str, str] | None) -> None:
        if not changed:
            return
        self.plan.given.update(changed)
        if self.playbook.reads_nodes:
            self.plan.probed = None
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
            self.plan.approve(self.approvals)
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

    def _ready(self) -> Rendered:
        result = self.rendered()
        assert not isinstance(result, str)  # asking happens only for a rendered playbook
        return result

    # -- running ---------------------------------------------------------------------------------

    def _start(self, rendered: Rendered, note: str = "") -> None:
        self.query_one("#playbook").add_class("-ran")
        self._progress = _RunEntries(len(rendered.commands), len(rendered.rollback))
        self.output.write(Text(f"── {self.playbook.title}: {len(rendered.commands)} commands", style="bold"))
        if note:
            self.output.write(Text(note, style="yellow"))
        self._phase("running", Text("Running…", style="bold"))
        self._execute(rendered)

    @work(exclusive=True, group="play", exit_on_error=False)
    async def _execute(self, rendered: Rendered) -> None:
        incidents = [self.context.incident] if self.context.incident is not None else []

        def audited(entry: AuditEntry) -> None:
            self.post_message(self.Audited(entry))

        def printed(node: str, line: str) -> None:
            self.post_message(self.Printed(node, line))

        audit = _Recorded(audit_log(incidents).paths, audited)
        try:
            outcome = await self.plan.execute(
                rendered, readonly=self.context.readonly, audit=audit, output=printed, offer_rollback=self._offer
            )
        except (actions.ActionError, Refused, OSError) as exc:
            last = Text(f"Failed: {display(str(exc))}", style="bold red")
        else:
            last = Text(final(rendered, outcome), style="bold green" if outcome.ok else "bold red")
        self.post_message(self.Finished(last, ", ".join(str(p) for p in audit.paths)))

    def on_playbook_screen_printed(self, message: Printed) -> None:
        """A line a node printed, made inert and prefixed with its node."""
        self.output.write(Text.assemble((f"{display(message.node):>12} ", "cyan"), display(message.line)))

    def on_playbook_screen_audited(self, message: Audited) -> None:
        """An entry was audited: keep it for the export and show how far the run got."""
        entry = message.entry
        self.context.ran.append(entry)
        label = self._progress.label()
        ok = entry.exit_code == 0
        outcome = ("passed" if ok else "failed") if label == "verification" else entry.outcome
        took = f" ({entry.duration_s:.1f} s)" if entry.duration_s is not None else ""
        line = f"{'✓' if ok else '✗'} {label}  {display(entry.node)}: {display(entry.step)}: {outcome}{took}"
        self.output.write(Text(line, style="green" if ok else "bold red"))
        if self.phase == "running":
            self.status.update(Text(f"Running… {label}: {outcome}", style="bold"))

    def on_playbook_screen_offered(self, message: Offered) -> None:
        count = self._progress.rollback
        self._phase(
            "offering",
            Text.assemble(
                (message.failure, "bold red"),
                "\n",
                (f"b run the rollback ({count} commands) · k keep things as they are", "bold"),
            ),
        )

    def on_playbook_screen_answered(self, message: Answered) -> None:
        self._phase("running", Text("Running the rollback…" if message.rollback else "Keeping things as they are…"))

    def on_playbook_screen_finished(self, message: Finished) -> None:
        self.output.write(message.text)
        self._phase(
            "finished", Text.assemble(message.text, "\n", (f"audit log: {message.audited} · r runs it again", "dim"))
        )

    async def _offer(self, outcome: actions.Outcome) -> bool:
        """After a failure: show it, and wait for b (run the rollback) or k (keep things as they are)."""
        self._answer = asyncio.get_running_loop().create_future()
        self.post_message(self.Offered(outcome.failure))
        try:
            rollback = await self._answer
        finally:
            self._answer = None
        self._progress.rolling_back = rollback
        self.post_message(self.Answered(rollback))
        return rollback


def _commands(commands: Iterable[Command]) -> Text:
    """The commands as approved: every character of them seen (see :func:`display_text`)."""
    return Text("\n").join(
        Text.assemble((f"{display(c.node):>14} ", "cyan"), ("$ ", "dim"), display_text(c.command)) for c in commands
    )


def _section(title: str, body: Text) -> Static:
    return Static(Text.assemble((title, "bold underline"), "\n", body), classes="section")
