"""The cockpit's captures of every rank's stack (``W``): how the session reaches its nodes (the cluster file's
SSH nodes, else the nodes of its ``ssh://`` sources, else this machine), the last capture (a replayed
bundle's own: a replay, the demo's included, has no live ranks, and captures nothing), which findings are
stalls, and the capture made once by itself when a critical stall is named (``[stacks]
capture_on_critical_stall`` in the settings). Read-only on the nodes; the node script and its output go into
the audit log as a playbook's commands do, and the capture into the incident folder (``stacks.json``).

The screen that shows a capture is :mod:`sparktui.tui.screens.stacks`; the folding into the findings and the
grids is :mod:`sparktui.core.report.fold`."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from sparktui.core import catalogue as cat
from sparktui.core import settings
from sparktui.core.analysis.diagnosis import Diagnosis
from sparktui.core.audit import AuditEntry, AuditLog
from sparktui.core.cluster import Cluster
from sparktui.core.errors import Refused, Unavailable
from sparktui.core.events import Finding
from sparktui.core.remedy.plan import audit_log
from sparktui.core.report import fold
from sparktui.core.sources.bundle import Bundle
from sparktui.core.sources.spool import Spool
from sparktui.core.stacks import bring as bringing
from sparktui.core.stacks import snapshot as snapshots
from sparktui.core.stacks.compare import compare
from sparktui.core.stacks.gather import Progress
from sparktui.core.stacks.kinds import builtin_kinds
from sparktui.core.stacks.script import Request
from sparktui.core.stacks.session import Bring, targets_of
from sparktui.core.stacks.snapshot import Snapshot, SnapshotError

if TYPE_CHECKING:
    from textual.app import App

#: Why a replay captures nothing.
NO_LIVE_RANKS = "a replay has no live ranks to read: its processes ran elsewhere, at another time"
#: Seconds each node has to answer: the capture shows within ten.
NODE_TIMEOUT = 8.0
#: Two dumps of each rank a second apart tell a rank that moves from one that waits; each dump bounded.
SAMPLES, INTERVAL, PER_DUMP = 2, 1.0, 4


@dataclass
class _Recorded(AuditLog):
    """The audit log, each entry also kept in the cockpit's list for its export."""

    ran: list[AuditEntry] = field(default_factory=list)

    def add(self, entry: AuditEntry) -> None:
        super().add(entry)
        self.ran.append(entry)


class Captures:
    """What the cockpit knows of the ranks' stacks, and how it captures them."""

    def __init__(
        self,
        catalogue: cat.Catalogue,
        cluster: Cluster | None,
        ran: list[AuditEntry],
        spool: Callable[[], Spool | None],
        replayed: Callable[[], Bundle | None] = lambda: None,
        sources: Mapping[str, str] | None = None,
    ) -> None:
        """``sources``: the SSH nodes the session's sources are read from (name -> ``[user@]host[:port]``),
        captured on when there is no cluster file."""
        self.catalogue = catalogue
        self.targets, self.where = targets_of(cluster, sources)
        self.ran = ran  # the cockpit's list of every command run, for its export
        self.spool = spool  # the live session's incident folder, if any
        self.replayed = replayed  # the bundle a replay shows (the welcome screen's demo is chosen later)
        self.shown: Bundle | None = None  # the bundle whose own capture was read
        self.latest: Snapshot | None = None
        self.unspied = bringing.Plan((), ())  # where the last capture found ranks and no py-spy to bring
        self.stalls: tuple[Finding, ...] = ()  # the stall findings of the last diagnosis
        self.auto_done = False
        self.problems: list[str] = []  # said once, on the first diagnosis
        try:
            self.settings = settings.load().stacks
        except settings.SettingsError as exc:
            self.settings = settings.StacksSettings()
            self.problems.append(f"stacks settings not used: {exc}")

    def is_stall(self, finding: Finding) -> bool:
        return fold.is_stall(finding, self._signature(finding))

    def _signature(self, finding: Finding) -> cat.Signature | None:
        try:
            return self.catalogue.get(finding.signature)
        except KeyError:
            return None

    @property
    def replay(self) -> bool:
        """Whether the session replays a bundle: its ranks are no processes here to read."""
        return self.replayed() is not None

    def kept(self) -> Snapshot | None:
        """A replay's capture: its bundle's own, read once (None: a live session, or a bundle without one)."""
        replayed = self.replayed()
        if replayed is not None and replayed is not self.shown:
            self.shown = replayed
            try:
                self.latest = snapshots.read(replayed.path)
            except SnapshotError as exc:
                self.problems.append(f"the bundle's capture of the stacks is not shown: {exc}")
        return self.latest if replayed is not None else None

    def request(self) -> Request:
        s = self.settings
        return Request(SAMPLES, INTERVAL, per_dump=PER_DUMP, py_spy=s.py_spy, ras_port=s.ras_port)

    async def capture(
        self, progress: Progress | None = None, findings: Sequence[str] = (), *, bring: bool = False
    ) -> Snapshot:
        """Every rank's stack on the session's nodes now, compared; kept as the latest capture, written into
        the incident folder; with ``bring`` (the user said yes to :attr:`unspied`), this machine's py-spy is
        brought where the ranks have none, and taken away after. Raises :class:`~sparktui.core.errors.Refused`
        for a node that is no SSH target, and in a replay, whose ranks are not this machine's (nor any node's)
        processes."""
        from sparktui.core.stacks.session import capture  # asyncssh: only when a capture runs

        if self.replay:
            raise Refused(NO_LIVE_RANKS)
        spool = self.spool()
        folder = spool.path if spool is not None else None
        audit = _Recorded(audit_log([folder] if folder is not None else []).paths, self.ran)
        started = time.monotonic()
        brought = None
        binary = bringing.local_binary()
        if bring and binary is not None:

            async def yes(_plan: bringing.Plan) -> bool:  # asked on the screen before
                return True

            def said(node: str, line: str) -> None:
                if progress is not None:
                    progress(node, line)

            brought = Bring(binary, yes, said)
        found = await capture(
            self.targets, self.request(), timeout=NODE_TIMEOUT, progress=progress, audit=audit, bring=brought
        )
        self.unspied = bringing.plan(found) if binary is not None else bringing.Plan((), ())
        groups = compare([r for node in found for r in node.ranks], builtin_kinds())
        problems = [p for node in found for p in node.problems]
        taken = snapshots.of(
            groups,
            problems,
            self.where,
            findings=findings or tuple(f.signature for f in self.stalls),
            seconds=time.monotonic() - started,
            hosts={node.node: node.hostname for node in found if node.hostname},
            ras=[(node.node, said) for node in found for said in node.ras],
        )
        self.latest = taken
        if folder is not None:
            try:
                taken.write(folder)
            except OSError as exc:
                self.problems.append(f"the capture of the stacks was not kept in {folder}: {exc.strerror or exc}")
        return taken

    def watch(self, app: App[None], diagnosis: Diagnosis) -> None:
        """A new diagnosis: a replayed bundle's own capture read (once), its stall findings noted; the first
        critical stall of a live session captured once by itself when the settings ask for it."""
        replayed = self.replayed()
        self.kept()
        for problem in self.problems:
            app.notify(problem, severity="warning", timeout=10, markup=False)
        self.problems.clear()
        self.stalls = tuple(f for f in diagnosis.findings if self.is_stall(f))
        if self.auto_done or replayed is not None or not self.settings.capture_on_critical_stall:
            return
        critical = [f for f in diagnosis.findings if fold.is_critical_stall(f, self._signature(f))]
        if critical:
            self.auto_done = True
            app.notify(f"{critical[0].title}: reading every rank's stack on {self.where}…", timeout=4, markup=False)
            app.run_worker(self._auto(app), group="stacks", exit_on_error=False)

    async def _auto(self, app: App[None]) -> None:
        try:
            taken = await self.capture()
        except (Refused, Unavailable, OSError) as exc:
            app.notify(f"stacks not read: {exc}", severity="error", markup=False)
            return
        app.notify(f"stacks read: {taken.headline()} (W shows every rank)", timeout=15, markup=False)
