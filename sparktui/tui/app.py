"""The cockpit: composes the node columns, the findings panel and the status bar, and shows what the one
pipeline (:mod:`sparktui.core.pipeline`) finds. The analysis runs on the pipeline's own thread; one worker
thread turns its updates into messages (:mod:`sparktui.tui.messages`), and the handlers here own every
widget.

Every node's lines are kept whether its column is on screen or not (:mod:`sparktui.tui.nodes`); columns
exist for the nodes in view only, as many as fit side by side, and ``]`` / ``[`` page through the rest, so
a session on thousands of files costs a few widgets, not a few per file."""

from __future__ import annotations

import asyncio
import signal
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path

from rich.text import Text
from textual import events, work
from textual.app import App, ComposeResult, SystemCommand
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import DataTable, Header, Static
from textual.worker import Worker, WorkerState

from sparktui.core import catalogue as cat
from sparktui.core.analysis.diagnosis import Diagnosis
from sparktui.core.audit import AuditEntry
from sparktui.core.clock import ReplayClock
from sparktui.core.cluster import Cluster
from sparktui.core.events import Finding, StateChange
from sparktui.core.inventory import fabric
from sparktui.core.inventory.preflight import Preflight
from sparktui.core.pipeline import Pipeline, Tally
from sparktui.core.remedy import playbook as pb
from sparktui.core.remedy.plan import audit_log
from sparktui.core.report.export import export
from sparktui.core.report.incident import Incident, Inventory
from sparktui.core.sources import bundle
from sparktui.core.sources.base import LiveSource, SourceGroup
from sparktui.core.sources.bundle import Bundle
from sparktui.core.sources.files import SourceError
from sparktui.core.sources.replay import replay
from sparktui.core.sources.spool import Spool
from sparktui.core.text import display
from sparktui.tui import clipboard, feed, messages
from sparktui.tui.bindings import bindings, playbook_key_problem
from sparktui.tui.collector import FULL_EVERY, Collector
from sparktui.tui.feed import Feed, Warnings, marks, stalled
from sparktui.tui.messages import DiagnosisChanged, LinesArrived, PipelineFailed, SourceEvent, SourcesChanged
from sparktui.tui.nodes import Nodes, View
from sparktui.tui.screens.finding import FindingScreen, evidence_text, finding_markdown
from sparktui.tui.screens.help import HelpScreen
from sparktui.tui.screens.inventory import InventoryScreen
from sparktui.tui.screens.playbook import PlaybookScreen, PlayContext
from sparktui.tui.screens.progress import ProgressScreen
from sparktui.tui.screens.sources import SourceRow, SourcesScreen
from sparktui.tui.screens.welcome import WelcomeScreen
from sparktui.tui.widgets.filter import FilterBar
from sparktui.tui.widgets.findings import FindingsTable
from sparktui.tui.widgets.footer import SteadyFooter
from sparktui.tui.widgets.logpane import FilterTooSlow, LogPane
from sparktui.tui.widgets.node import NodeColumn
from sparktui.tui.widgets.status import StatusBar


@dataclass(frozen=True, slots=True)
class Session:
    """What the app shows: a bundle replayed at its own pace, or live sources (followed files, later SSH,
    Docker and Ray streams)."""

    title: str
    bundle: Bundle | None = None
    live: tuple[LiveSource | SourceGroup, ...] = ()
    speed: float = 0.0


#: The fewest cells a node's column gets: as many columns are side by side as fit at this width.
NARROW_COLUMN = 60


class SparkApp(App[None]):
    CSS_PATH = Path(__file__).with_name("sparktui.tcss")  # absolute, so subclasses elsewhere keep it
    TITLE = "sparktui"
    AUTO_FOCUS = "#findings"
    BINDINGS = bindings()

    def __init__(
        self,
        source: Session | None,
        catalogue: cat.Catalogue,
        *,
        export_dir: Path | None = None,
        demo: Session | None = None,
        spool_live: bool = True,
        spool_raw: bool = False,
        cluster: Cluster | None = None,
        readonly: bool = False,
        playbook_dirs: Sequence[Path] = (),
    ) -> None:
        super().__init__()
        self.cluster = cluster
        self.readonly = readonly  # only read-only playbooks run
        self.ran: list[AuditEntry] = []  # every command run from the cockpit, for the export
        self.inventory: Inventory | None = None  # the last check of the nodes (I), for the export
        self.checked: tuple[Finding, ...] = ()  # its findings, shown after the logs' findings
        self.given: dict[str, dict[str, str]] = {}  # playbook values typed in, per playbook id
        self.source = source or Session("welcome")
        self.welcome = source is None
        self.spool_live = spool_live
        self.spool_raw = spool_raw  # the spool keeps secrets (--spool-raw)
        self.demo = demo
        self.catalogue = catalogue
        self.export_dir = export_dir or Path.cwd()
        self.sub_title = self.source.title
        self.diagnosis: Diagnosis | None = None
        self.seen_at: dict[str, float] = {}
        self.warnings = Warnings()  # the diagnosis' warnings already shown as notifications
        self.time = 0.0  # seconds since the start (the incident's time, for a replay)
        self.done = False
        self.clock: ReplayClock | None = None
        self.paused = False
        self.pipeline = self._pipeline(self.source)
        self._evidence_index = -1
        self._last_pane: LogPane | None = None
        self.nodes = Nodes()  # every node's lines, in view or not
        self.view = View(self.nodes)  # the nodes whose columns are on screen
        self.columns: dict[str, NodeColumn] = {}  # the columns of the nodes in view
        self.states: Mapping[str, StateChange] = {}
        self.tallies: Mapping[str, Tally] = {}
        self.errors: Mapping[str, str] = {}  # each source's last error, kept after it recovered
        self._rows: dict[str, tuple[tuple[Tally | None, StateChange | None, str | None], SourceRow]] = {}
        self._marks: frozenset[tuple[str, int]] = frozenset()
        self._stalled: dict[str, set[str]] = {}
        try:
            playbooks = pb.load_all(playbook_dirs)
        except (pb.PlaybookError, FileNotFoundError) as exc:
            playbooks, problems = {}, [str(exc)]
        else:
            problems = [f"{b.path}: key: {why}" for b in playbooks.values() if (why := playbook_key_problem(b.key))]
        self.playbooks = {i: b for i, b in playbooks.items() if not playbook_key_problem(b.key)}
        self._playbook_problem = "; ".join(problems)
        # Held here, not queried: a query looks at the screen on top, which may be a modal.
        self.nodes_box = Horizontal(id="nodes")
        self.node_bar = Static(id="node-bar")
        self._bar_shown = Text()
        self.findings_table = FindingsTable()
        self.filter_field = FilterBar()
        self.status_bar = StatusBar(replay=self.source.bundle is not None, readonly=readonly)
        self.collector = Collector()
        self._signals: tuple[int, ...] = ()  # handled while mounted: see _quit_on_signals

    # -- layout ----------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield Header(show_clock=False)
        with Vertical(id="main"):
            yield self.node_bar
            yield self.nodes_box
            yield self.findings_table
        yield self.filter_field
        yield self.status_bar
        yield SteadyFooter()

    def on_mount(self) -> None:
        self._quit_on_signals()
        self.view.fits(self.size.width // NARROW_COLUMN)
        self.collector.hold()
        self.set_interval(FULL_EVERY, self.collector.full)
        if self._playbook_problem:
            self.notify(f"playbooks not loaded: {self._playbook_problem}", severity="error", timeout=10)
        if self.welcome:
            self.push_screen(WelcomeScreen(), self._welcomed)
        else:
            self._start()

    def on_unmount(self) -> None:
        self.pipeline.stop()  # its sources end, and so does the worker that reads it
        self.collector.release()
        if self._signals:
            loop = asyncio.get_running_loop()
            for number in self._signals:
                loop.remove_signal_handler(number)

    def _quit_on_signals(self) -> None:
        """SIGTERM and SIGHUP (``kill``, a closed terminal window, systemd) end the cockpit as ``q`` does,
        the terminal given back (main screen, no mouse reporting), rather than killing it in the alternate
        screen. Only where the loop runs on the main thread (signals are delivered there)."""
        if threading.current_thread() is not threading.main_thread():
            return
        loop = asyncio.get_running_loop()
        self._signals = (signal.SIGTERM, signal.SIGHUP)
        for number in self._signals:
            loop.add_signal_handler(number, self.action_quit)

    def _welcomed(self, run_demo: bool | None) -> None:
        if not run_demo or self.demo is None:
            self.exit()
            return
        self.source = self.demo
        self.sub_title = self.demo.title
        self.status_bar.replay = self.demo.bundle is not None
        self.pipeline = self._pipeline(self.demo)
        self._start()

    def _pipeline(self, session: Session) -> Pipeline:
        """The one pipeline over the session's sources: live ones (spooled), or a bundle at its pace (none
        yet for the welcome screen)."""
        self.clock = None
        if session.bundle is None:
            spool = Spool.new(session.title, raw=self.spool_raw) if self.spool_live and session.live else None
            return Pipeline(self.catalogue, session.live, spool=spool)
        self.clock = ReplayClock(session.speed)
        return Pipeline(self.catalogue, replay(session.bundle, self.clock), clock=self.clock)

    def _start(self) -> None:
        self._feed()

    def get_system_commands(self, screen: Screen[object]) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        if isinstance(screen, PlaybookScreen):
            yield from screen.commands()
        for node in self.nodes.names:
            yield SystemCommand(f"Go to node {node}", "Show its column and focus it", partial(self._focus_node, node))
        for column in self.columns.values():
            for pane in column.panes.values():
                if pane.display:
                    yield SystemCommand(f"Go to {column.node} / {pane.border_title}", "Focus this pane", pane.focus)
        for rank, finding in enumerate(self.findings_table.findings, 1):
            yield SystemCommand(f"Finding {rank}: {finding.title}", finding.signature, partial(self._open, rank - 1))
        yield SystemCommand("Start-up progress", "The stage each rank reached, per track", self.action_progress)
        yield SystemCommand(
            "Sources and errors", "Every source: node, kind, state, counts, its last error in full", self.action_sources
        )
        yield SystemCommand("Export report", "Write a Markdown report of this incident", self.action_export)
        yield SystemCommand("Help", "Every key", self.action_help)

    # -- the pipeline -------------------------------------------------------------------------------

    @work(thread=True, exclusive=True, group="feed", exit_on_error=False)
    def _feed(self) -> None:
        """The one worker: the pipeline's updates become messages; it touches no widget."""
        translator = Feed()
        for update in self.pipeline.updates():
            for said in translator.read(update):
                self.post_message(messages.of(said))

    def on_lines_arrived(self, message: LinesArrived) -> None:
        nodes = len(self.nodes)
        came = False
        for (node, layer), lines in message.panes.items():
            self.nodes.log(node).add(layer, lines)
            column = self.columns.get(node)
            if column is not None:
                column.add(layer, lines)
            else:
                came = self.view.spoke(node) or came  # its column is made with every line kept, these too
        if came:
            self._sync()
        elif len(self.nodes) != nodes:
            self._show_bar()

    def on_diagnosis_changed(self, message: DiagnosisChanged) -> None:
        self._show(message.diagnosis)

    def on_sources_changed(self, message: SourcesChanged) -> None:
        self.time = message.clock
        if message.done and not self.done:
            for column in self.columns.values():
                column.strip.settle()
        self.done = self.done or message.done
        self.states, self.tallies, self.errors = message.states, message.tallies, message.errors
        self.status_bar.show(
            clock=self.time,
            paused=self.paused,
            done=self.done,
            states=message.states,
            census=message.census,
            dropped=message.dropped,
            serving=self.diagnosis.serving if self.diagnosis is not None else (),
        )
        for column in self.columns.values():
            column.show_sources(message.tallies)

    def on_source_event(self, message: SourceEvent) -> None:
        said = f"{message.change.source}: {message.change.detail}"
        self.notify(display(said), title="source", severity="warning", timeout=30, markup=False)

    def on_pipeline_failed(self, message: PipelineFailed) -> None:
        self.notify(f"the analysis stopped: {message.reason}", severity="error", timeout=30)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.state is WorkerState.ERROR:
            self.notify(f"{event.worker.name} failed: {event.worker.error}", severity="error", timeout=30)

    def on_resize(self, event: events.Resize) -> None:
        # event.size: this runs before Textual's own handler has taken the new size
        if self.view.fits(event.size.width // NARROW_COLUMN):
            self._sync()

    def _sync(self) -> None:
        """Columns for the nodes in view, in name order, and none for the others."""
        if not self.nodes_box.is_attached:  # lines still arriving while the app shuts down
            return
        wanted = self.view.shown
        for node in [n for n in self.columns if n not in wanted]:
            self.columns.pop(node).remove()
        for index, node in enumerate(wanted):
            if node in self.columns:
                continue
            column = self.columns[node] = NodeColumn(self.nodes.log(node))
            later = [self.columns[n] for n in wanted[index + 1 :] if n in self.columns]
            self.nodes_box.mount(column, before=later[0] if later else None)
            for pane in column.panes.values():
                pane.following = not self.paused
                pane.set_marks(self._marks)
            if self.diagnosis is not None and node in self.diagnosis.stages:
                column.strip.show(self.diagnosis.stages[node], self._stalled.get(node, set()))
            column.show_sources(self.tallies)
        self._show_bar()

    def _show_bar(self) -> None:
        """Which nodes are in view among how many, when not all of them are; nothing (no line) when they are."""
        text = Text()
        if not self.view.everything():
            text.append(f" {len(self.view.shown)} of {len(self.nodes):,} nodes in view ", style="reverse")
            text.append("  ] next  [ previous  : go to a node", style="dim")
            away = feed.away(self.diagnosis, self.view.shown)
            if away:
                more = f" and {len(away) - 3:,} more" if len(away) > 3 else ""
                text.append(f"   findings on {', '.join(away[:3])}{more} (e shows the evidence)", style="yellow")
        if text != self._bar_shown:
            if bool(text) != bool(self._bar_shown):
                self.node_bar.display = bool(text)  # a layout, only when it appears or goes
            self._bar_shown = text
            self.node_bar.update(text, layout=False)

    def _bring(self, node: str) -> tuple[NodeColumn | None, bool]:
        """The node's column, its page brought into view if it was not; and whether it was just made."""
        if node not in self.nodes:
            return None, False
        moved = self.view.show(node)
        if moved:
            self._sync()
        return self.columns.get(node), moved

    def action_next_nodes(self) -> None:
        if self.view.page(1):
            self._sync()

    def action_previous_nodes(self) -> None:
        if self.view.page(-1):
            self._sync()

    def _show(self, diagnosis: Diagnosis) -> None:
        self.diagnosis = diagnosis
        for title, warning in self.warnings.new(diagnosis.warnings):  # said once, and kept a while
            self.notify(display(warning), title=title, severity="warning", timeout=30, markup=False)
        for f in diagnosis.findings:
            self.seen_at.setdefault(f.signature, self.time)
        self._show_findings()
        self._marks = marks(diagnosis)
        for pane in self._panes():
            pane.set_marks(self._marks)
        self._stalled = stalled(diagnosis, self._signature)
        for node, column in self.columns.items():
            if node in diagnosis.stages:
                column.strip.show(diagnosis.stages[node], self._stalled.get(node, set()))
        self._show_bar()
        for screen in self.screen_stack:
            if isinstance(screen, ProgressScreen):
                screen.show(diagnosis.progress)

    def _panes(self) -> list[LogPane]:
        return [pane for column in self.columns.values() for pane in column.panes.values()]

    def _show_findings(self) -> None:
        """The logs' findings, then the last check's (a check whose id a log finding has is shown once)."""
        logged = self.diagnosis.findings if self.diagnosis is not None else ()
        ids = {f.signature for f in logged}
        self.findings_table.show(
            (*logged, *(f for f in self.checked if f.signature not in ids)), self.time, self.seen_at
        )

    def _signature(self, signature_id: str) -> cat.Signature | None:
        try:
            return self.catalogue.get(signature_id)
        except KeyError:
            return None

    # -- actions ---------------------------------------------------------------------------------

    def action_help(self) -> None:
        # Made once and kept: its key table takes longer to lay out and draw than the rest of the screen.
        if not self.is_screen_installed("help"):
            self.install_screen(HelpScreen(), "help")
        self.push_screen("help")

    def action_progress(self) -> None:
        self.push_screen(ProgressScreen(self.diagnosis.progress if self.diagnosis else ()))

    def action_sources(self) -> None:
        self.push_screen(SourcesScreen(self.source_rows))

    def source_rows(self) -> list[SourceRow]:
        """Every source the pipeline knows of, as the sources screen lists it (the screen asks twice a
        second: a source whose tally, state and error are the objects they were keeps its row)."""
        rows = []
        for name in {*self.tallies, *self.states}:
            looks = (self.tallies.get(name), self.states.get(name), self.errors.get(name))
            kept = self._rows.get(name)
            if kept is None or any(a is not b for a, b in zip(kept[0], looks, strict=True)):
                kept = self._rows[name] = (looks, SourceRow.of(name, *looks))
            rows.append(kept[1])
        return rows

    def action_copy(self) -> None:
        """y: the selected line of the focused pane; on the findings table, the selected finding's evidence."""
        pane = self._focused_pane()
        if pane is not None:
            line = pane.selected()
            if line is None:
                self.notify("nothing to copy: the pane is empty", severity="warning")
                return
            clipboard.copy(self, line.text, f"{line.source}:{line.number}")
            return
        finding = self.findings_table.selected()
        if finding is None:
            self.notify("focus a log pane or a finding first", severity="warning")
            return
        clipboard.copy(self, evidence_text(finding), f"the evidence of {finding.signature}")

    def action_copy_finding(self) -> None:
        """Y: the selected finding as Markdown, secrets redacted."""
        finding = self.findings_table.selected()
        if finding is None:
            self.notify("no finding selected", severity="warning")
            return
        clipboard.copy(self, finding_markdown(finding), f"{finding.signature} as Markdown (secrets redacted)")

    def action_inventory(self) -> None:
        self.push_screen(InventoryScreen(self.cluster, audit_log(), self._inventoried))

    def _inventoried(self, result: Preflight) -> None:
        """Keep the last check's verdicts, drift and fabric tables for the report, and show its findings among the
        logs' (each replacing the one of the check before)."""
        table = fabric.rows(result.inventories)
        self.inventory = Inventory(result.verdict, tuple(result.verdicts.items()), result.drift, result.seconds, table)
        self.checked = result.findings
        for f in result.findings:
            self.seen_at[f.signature] = self.time
        self._show_findings()

    def action_quit(self) -> None:  # type: ignore[override]
        self.pipeline.stop()
        self.exit()

    def action_pause(self) -> None:
        """Stop following (the sources keep streaming; a replay's clock stops), or follow again."""
        self.paused = not self.paused
        if self.clock is not None:
            (self.clock.pause if self.paused else self.clock.resume)()
        for pane in self._panes():
            pane.following, pane.paused = not self.paused, self.paused
            if not self.paused:
                try:
                    pane.redraw()  # with the lines that came while it was held
                except FilterTooSlow:
                    pane.set_filter("")
                pane.scroll_end(animate=False)
        self.notify("paused" if self.paused else "following resumed", timeout=2)

    def action_filter(self) -> None:
        """Filter the focused log pane; with none focused (as at start), the last one focused, else the first."""
        last = self._last_pane if self._last_pane is not None and self._last_pane.is_attached else None
        pane = self._focused_pane() or last or next(iter(self._panes()), None)
        if pane is None:
            self.notify("no log pane to filter yet", severity="warning")
            return
        self._last_pane = pane
        self.filter_field.open(pane)

    def on_descendant_focus(self) -> None:
        focused = self.focused
        if isinstance(focused, LogPane):
            self._last_pane = focused

    def _focused_pane(self) -> LogPane | None:
        return self.focused if isinstance(self.focused, LogPane) else None

    def action_next_match(self) -> None:
        self.filter_field.jump(self._focused_pane(), 1)

    def action_previous_match(self) -> None:
        self.filter_field.jump(self._focused_pane(), -1)

    def action_maximise(self) -> None:
        pane = self._focused_pane()
        if pane is None:
            return
        if self.screen.maximized is pane:
            self.screen.minimize()
        else:
            self.screen.maximize(pane)

    def action_next_evidence(self) -> None:
        self._evidence(1)

    def action_previous_evidence(self) -> None:
        self._evidence(-1)

    def _evidence(self, step: int) -> None:
        finding = self.findings_table.selected()
        if finding is None or not finding.evidence:
            self.notify("no finding selected", severity="warning")
            return
        self._evidence_index = (self._evidence_index + step) % len(finding.evidence)
        e = finding.evidence[self._evidence_index]
        column, made = self._bring(e.node)
        for pane in column.panes.values() if column is not None else ():
            if pane.reveal(e.source, e.line):
                if made:  # laid out on the next refresh: scrolled to the line once it has a height
                    self.call_after_refresh(lambda pane=pane: pane.reveal(e.source, e.line) and pane.focus())
                else:
                    pane.focus()
                self.notify(
                    f"evidence {self._evidence_index + 1} of {len(finding.evidence)}: {e.source}:{e.line}", timeout=2
                )
                return
        self.notify(f"{e.source}:{e.line} is no longer in its pane (open the finding with enter)", timeout=3)

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        self._open(event.cursor_row)

    def action_open_finding(self) -> None:
        self._open(self.findings_table.cursor_row)

    def _open(self, row: int) -> None:
        findings = self.findings_table.findings
        if not 0 <= row < len(findings):
            return
        finding = findings[row]
        spool = self._spool()
        context = PlayContext(self.readonly, spool.path if spool is not None else None, self.ran, self.given)
        self.push_screen(
            FindingScreen(
                finding,
                self._signature(finding.signature),
                self.diagnosis.stages if self.diagnosis is not None else {},
                self.playbooks,
                self.cluster,
                context,
            )
        )

    def _focus_node(self, node: str) -> None:
        column, made = self._bring(node)
        for pane in column.panes.values() if column is not None else ():
            if pane.display:
                if made:
                    self.call_after_refresh(pane.focus)
                else:
                    pane.focus()
                return

    def action_export(self) -> None:
        if self.diagnosis is None:
            self.notify("nothing to export yet", severity="warning")
            return
        target = self.export_dir / time.strftime("sparktui-report-%Y%m%d-%H%M%S")
        self.notify(f"exporting to {target}…", timeout=2)
        self._export(self.diagnosis, target)

    def _spool(self) -> Spool | None:
        """Where a live session keeps what it received (its incident folder); None for a replay."""
        return self.pipeline.spool

    @work(thread=True, group="export")
    def _export(self, diagnosis: Diagnosis, target: Path) -> None:
        """Markdown, HTML, JSON and a redacted bundle of the logs seen (the replayed bundle, or the spool),
        with the commands run from the cockpit (a spool's own audit.jsonl holds them already)."""
        logs: Bundle | None = self.source.bundle
        ran = tuple(self.ran)
        spool = self._spool()
        if spool is not None:
            spool.flush()
            logs = bundle.load(spool.path) if bundle.is_bundle(spool.path) else None
            if logs is not None:
                ran = ()  # the spool's audit.jsonl holds them, and of_bundle reads it
        incident = (
            Incident.of_bundle(logs, diagnosis, audit=ran) if logs is not None else Incident(diagnosis, audit=ran)
        )
        incident = replace(incident, inventory=self.inventory)
        try:
            export(incident, target)
        except (OSError, SourceError) as exc:
            self.call_from_thread(self.notify, f"export failed: {exc}", severity="error")
            return
        self.call_from_thread(self.notify, f"report written to {target} (report.md, report.html, bundle/)")
