"""The cockpit: composes the node area, the findings panel, the filter field and the status bar, and shows
what the one pipeline (:mod:`sparktui.core.pipeline`) finds. The analysis runs on the pipeline's own thread;
one worker thread turns its updates into messages (:mod:`sparktui.tui.feed`, :mod:`sparktui.tui.messages`),
and the handlers here hand each to the widget that owns what it changes. Actions delegate to those widgets
and to the screens."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from functools import partial
from pathlib import Path

from textual import events, work
from textual.app import App, ComposeResult, SystemCommand
from textual.containers import Vertical
from textual.screen import Screen
from textual.widgets import DataTable, Header
from textual.worker import Worker, WorkerState

from sparktui.core import catalogue as cat
from sparktui.core.analysis.diagnosis import Diagnosis
from sparktui.core.audit import AuditEntry
from sparktui.core.cluster import Cluster
from sparktui.core.events import Finding, StateChange
from sparktui.core.inventory import fabric
from sparktui.core.inventory.preflight import Preflight
from sparktui.core.liveness.verdict import kept, merged
from sparktui.core.liveness.watch import Live, Watcher, for_session
from sparktui.core.pipeline import Tally
from sparktui.core.remedy import playbook as pb
from sparktui.core.remedy.plan import audit_log
from sparktui.core.report.export import export, new_folder
from sparktui.core.report.incident import Incident, Inventory
from sparktui.core.sources import bundle
from sparktui.core.sources.bundle import Bundle
from sparktui.core.sources.files import SourceError
from sparktui.core.sources.spool import Spool
from sparktui.core.text import display
from sparktui.tui import clipboard, messages
from sparktui.tui.bindings import bindings, palette, playbook_key_problem
from sparktui.tui.collector import FULL_EVERY, Collector
from sparktui.tui.feed import Feed, Warnings, stalled
from sparktui.tui.messages import DiagnosisChanged, LinesArrived, PipelineFailed, SourceNoted, SourcesChanged
from sparktui.tui.screens.finding import FindingScreen, evidence_text, finding_markdown
from sparktui.tui.screens.help import HelpScreen
from sparktui.tui.screens.inventory import InventoryScreen, known_bad
from sparktui.tui.screens.playbook import PlaybookScreen, PlayContext
from sparktui.tui.screens.progress import ProgressScreen
from sparktui.tui.screens.sources import Rows, SourcesScreen
from sparktui.tui.screens.stacks import StacksScreen
from sparktui.tui.screens.welcome import WelcomeScreen
from sparktui.tui.session import Session
from sparktui.tui.stacks import Captures
from sparktui.tui.widgets.filter import FilterBar
from sparktui.tui.widgets.findings import FindingsTable
from sparktui.tui.widgets.footer import SteadyFooter
from sparktui.tui.widgets.logpane import LogPane
from sparktui.tui.widgets.nodes_area import NodesArea
from sparktui.tui.widgets.status import StatusBar


class SparkApp(App[None]):
    """The cockpit (built by :func:`sparktui.tui.factory.make_app`): composes the node area, the findings,
    the filter field and the status bar; routes the feed's messages to them; its actions delegate."""

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
        demo: Callable[[], Session] | None = None,
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
        self.demo = demo  # the welcome screen's demo, loaded when chosen
        self.catalogue = catalogue
        self.export_dir = export_dir or Path.cwd()
        self.sub_title = self.source.title
        self.diagnosis: Diagnosis | None = None
        self.seen_at: dict[str, float] = {}
        self.warnings = Warnings()  # the diagnosis' warnings already shown as notifications
        self.time = 0.0  # seconds since the start (the incident's time, for a replay)
        self.done = False
        self.paused = False
        self.pipeline, self.clock = self.source.pipeline(catalogue, spool=spool_live, raw=spool_raw)
        self.states: Mapping[str, StateChange] = {}
        self.tallies: Mapping[str, Tally] = {}
        self.errors: Mapping[str, str] = {}  # each source's last error, kept after it recovered
        self.rows = Rows()  # the sources screen's rows, kept from one showing to the next
        self.stacks = Captures(  # W: stacks
            catalogue, cluster, self.ran, self._spool, lambda: self.source.bundle, dict(self.source.nodes)
        )
        self.logged: Diagnosis | None = None  # the logs' own diagnosis, before the live watch's finding joins it
        self.live = Live()
        self.liveness: Watcher | None = None  # the live watch of a live session: a hung rank named by itself
        try:
            playbooks = pb.load_all(playbook_dirs)
        except (pb.PlaybookError, FileNotFoundError) as exc:
            playbooks, problems = {}, [str(exc)]
        else:
            problems = [f"{b.path}: key: {why}" for b in playbooks.values() if (why := playbook_key_problem(b.key))]
        self.playbooks = {i: b for i, b in playbooks.items() if not playbook_key_problem(b.key)}
        self._playbook_problem = "; ".join(problems)
        # Held here, not queried: a query looks at the screen on top, which may be a modal.
        self.nodes_area = NodesArea()
        self.findings_table = FindingsTable(self.stacks.is_stall)
        self.filter_field = FilterBar()
        self.status_bar = StatusBar(replay=self.source.bundle is not None, readonly=readonly)
        self.collector = Collector()
        self._signals: tuple[int, ...] = ()  # handled while mounted: see _quit_on_signals

    # -- layout ----------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield Header(show_clock=False)
        with Vertical(id="main"):
            yield self.nodes_area
            yield self.findings_table
        yield self.filter_field
        yield self.status_bar
        yield SteadyFooter()

    def on_mount(self) -> None:
        self._quit_on_signals()
        self.nodes_area.fit(self.size.width)
        self.collector.hold()
        self.set_interval(FULL_EVERY, self.collector.full)
        if self._playbook_problem:
            self.notify(f"playbooks not loaded: {self._playbook_problem}", severity="error", timeout=10)
        if self.welcome:
            self.push_screen(WelcomeScreen(), self._welcomed)
        else:
            self._start_liveness()
            self._feed()
        if not self.welcome and not self.source.live and self.source.bundle is None:
            self.notify(self._nothing_to_follow(), severity="warning", timeout=60)

    def _nothing_to_follow(self) -> str:
        """What to do about a session with no source at all (a cluster file that names none): not a blank screen."""
        where = f"the cluster file {self.cluster.path}" if self.cluster is not None else "this session"
        return (
            f"nothing to follow: {where} names no log source. Add the engine's containers ([deployment] "
            "containers = [...]) or a node's sources = [...] there, or name sources on the command line "
            "(sparktui SOURCE...); I checks the nodes meanwhile."
        )

    def _start_liveness(self) -> None:
        """A live session's watch starts with its feed (a replay's ranks are not this machine's)."""
        if self.source.bundle is not None or not self.source.live or self.liveness is not None:
            return
        self.liveness, problem = for_session(self.cluster, dict(self.source.nodes), self._live_from_thread)
        if problem:
            self.notify(f"live watch: {problem}", severity="warning", timeout=10, markup=False)
        self.liveness.start()

    def _live_from_thread(self, live: Live) -> None:
        with contextlib.suppress(RuntimeError):  # the app already ended
            self.call_from_thread(self._live_changed, live)

    def _live_changed(self, live: Live) -> None:
        before, self.live = self.live, live
        if live.finding is not None and live.reading is not None:
            self.stacks.latest = live.reading.snapshot  # W, the grids and the export show what named it
            if before.finding is None or before.finding.facts.get("hung") != live.finding.facts.get("hung"):
                self.notify(live.finding.title, title="hang", severity="error", timeout=30, markup=False)
        elif before.finding is not None:
            self.notify("the hang cleared: the ranks move again", title="hang", timeout=10, markup=False)
        for problem in (p for p in live.problems if p not in before.problems):
            self.notify(f"live watch: {problem}", severity="warning", timeout=10, markup=False)
        if self.logged is not None and (live.finding is not None or before.finding is not None):
            self._show(self.logged)

    def on_unmount(self) -> None:
        self.pipeline.stop()  # its sources end, and so does the worker that reads it
        if self.liveness is not None:
            self.liveness.stop()
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
        self.source = self.demo()
        self.sub_title = self.source.title
        self.status_bar.replay = self.source.bundle is not None
        self.pipeline, self.clock = self.source.pipeline(self.catalogue, spool=self.spool_live, raw=self.spool_raw)
        self._start_liveness()
        self._feed()

    def get_system_commands(self, screen: Screen[object]) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        if isinstance(screen, PlaybookScreen):
            yield from screen.commands()
        area = self.nodes_area
        for node in area.nodes.names:
            yield SystemCommand(f"Go to node {node}", "Show its column and focus it", partial(area.focus_node, node))
        for column in area.columns.values():
            for pane in column.panes.values():
                if pane.display:
                    yield SystemCommand(f"Go to {column.node} / {pane.border_title}", "Focus this pane", pane.focus)
        for rank, finding in enumerate(self.findings_table.findings, 1):
            yield SystemCommand(f"Finding {rank}: {finding.title}", finding.signature, partial(self._open, rank - 1))
        for key in palette():
            yield SystemCommand(
                key.palette, f"{key.description} (key {key.label or key.key})", partial(self.run_action, key.action)
            )

    # -- the pipeline -------------------------------------------------------------------------------

    @work(thread=True, exclusive=True, group="feed", exit_on_error=False)
    def _feed(self) -> None:
        """The one worker: the pipeline's updates become messages; it touches no widget."""
        translator = Feed()
        watch = self.liveness
        for update in self.pipeline.updates():
            if watch is not None:
                watch.feed(update)
            for said in translator.read(update):
                self.post_message(messages.of(said))

    def on_lines_arrived(self, message: LinesArrived) -> None:
        self.nodes_area.add(message.panes)

    def on_diagnosis_changed(self, message: DiagnosisChanged) -> None:
        self._show(message.diagnosis)
        self.stacks.watch(self, self.diagnosis or message.diagnosis)

    def on_sources_changed(self, message: SourcesChanged) -> None:
        self.time = message.clock
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
        self.nodes_area.show_sources(message.tallies, message.done)

    def on_source_noted(self, message: SourceNoted) -> None:
        said = f"{message.note.source}: {message.note.text}"
        self.notify(display(said), title="source", severity="warning", timeout=30, markup=False)

    def on_pipeline_failed(self, message: PipelineFailed) -> None:
        self.notify(f"the analysis stopped: {message.reason}", severity="error", timeout=30)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.state is WorkerState.ERROR:
            self.notify(f"{event.worker.name} failed: {event.worker.error}", severity="error", timeout=30)

    def on_resize(self, event: events.Resize) -> None:
        # event.size: this runs before Textual's own handler has taken the new size
        self.nodes_area.fit(event.size.width)

    def action_next_nodes(self) -> None:
        self.nodes_area.page(1)

    def action_previous_nodes(self) -> None:
        self.nodes_area.page(-1)

    def _show(self, logged: Diagnosis) -> None:
        """The logs' diagnosis shown, with the live watch's hang finding first while one stands."""
        self.logged = logged
        live = self.live
        hung = live.reading.snapshot if live.finding is not None and live.reading is not None else None
        diagnosis = merged(logged, live.finding, hung, live.jobs.values())
        if live.finding is None:  # a replay: the hang its bundle's capture saw, as the session that made it had it
            diagnosis = kept(diagnosis, self.stacks.kept())
        self.diagnosis = diagnosis
        for title, warning in self.warnings.new(diagnosis.warnings):  # said once, and kept a while
            self.notify(display(warning), title=title, severity="warning", timeout=30, markup=False)
        for f in diagnosis.findings:
            self.seen_at.setdefault(f.signature, self.time)
        self._show_findings()
        self.nodes_area.show(diagnosis, stalled(diagnosis, self._signature))
        for screen in self.screen_stack:
            if isinstance(screen, ProgressScreen):
                screen.show(diagnosis.progress)

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
        self.push_screen(ProgressScreen(self.diagnosis.progress if self.diagnosis else (), self.stacks))

    def action_stacks(self) -> None:
        """W: where every rank is now, read from its stack on the session's nodes (py-spy)."""
        self.push_screen(StacksScreen(self.stacks))

    def action_sources(self) -> None:
        self.push_screen(SourcesScreen(lambda: self.rows.of(self.tallies, self.states, self.errors)))

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
        clipboard.copy(self, finding_markdown(finding), f"{finding.signature} as Markdown")

    def action_inventory(self) -> None:
        self.push_screen(InventoryScreen(self.cluster, audit_log(), self._inventoried))

    def _inventoried(self, result: Preflight) -> None:
        """Keep the last check's verdicts, drift, fabric and build tables for the report, mark in the node bar the
        nodes that load a known-bad build, and show its findings among the logs' (each replacing the one of the
        check before)."""
        table = fabric.rows(result.inventories)
        built = tuple(row for inv in result.inventories for row in inv.build_rows())
        self.inventory = Inventory(
            result.verdict, tuple(result.verdicts.items()), result.drift, result.seconds, table, built
        )
        self.nodes_area.show_builds(known_bad(result.findings))
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
        self.nodes_area.pause(self.paused)
        self.notify("paused" if self.paused else "following resumed", timeout=2)

    def action_filter(self) -> None:
        panes = self.nodes_area.to_filter(self._focused_pane())
        if not panes:
            self.notify("no log pane to filter yet", severity="warning")
            return
        self.filter_field.open(panes)

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
        self.nodes_area.evidence(finding, step)

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
                self.stacks,
            )
        )

    def action_export(self) -> None:
        if self.diagnosis is None:
            self.notify("nothing to export yet", severity="warning")
            return
        stem = time.strftime("sparktui-report-%Y%m%d-%H%M%S")
        self.notify(f"exporting to {self.export_dir / stem}…", timeout=2)
        self._export(self.diagnosis, stem)

    def _spool(self) -> Spool | None:
        """Where a live session keeps what it received (its incident folder); None for a replay."""
        return self.pipeline.spool

    @work(thread=True, group="export")
    def _export(self, diagnosis: Diagnosis, stem: str) -> None:
        """Markdown, HTML, JSON and a redacted bundle of the logs seen (the replayed bundle, or the spool),
        with the commands run from the cockpit (a spool's own audit.jsonl holds them already), in a new folder
        named ``stem`` (with a suffix where another export, of this cockpit or another, took the name)."""
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
        incident = replace(incident, inventory=self.inventory, stacks=self.stacks.latest or incident.stacks)
        try:
            target = new_folder(self.export_dir, stem)
            export(incident, target)
        except (OSError, SourceError) as exc:
            self.call_from_thread(self.notify, f"export failed: {exc}", severity="error")
            return
        self.call_from_thread(self.notify, f"report written to {target} (report.md, report.html, bundle/)")
