"""An incident: what the reports are made of (the diagnosis, the logs it came from, the launch command, the
actions taken and the environment), and its redacted copy."""

from __future__ import annotations

import platform
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime

from sparktui import __version__
from sparktui.core.analysis.diagnosis import Diagnosis
from sparktui.core.analysis.progress import Grid
from sparktui.core.audit import AuditEntry
from sparktui.core.events import Evidence, Finding, Position, SourceSummary
from sparktui.core.inventory.builds import BuildRow
from sparktui.core.inventory.drift import Drift, Row
from sparktui.core.inventory.fabric import FabricRow
from sparktui.core.redact import Redactor
from sparktui.core.report.fold import fold
from sparktui.core.sources.bundle import Bundle
from sparktui.core.sources.files import FileSource
from sparktui.core.stacks import snapshot
from sparktui.core.stacks.snapshot import Snapshot, SnapshotError


@dataclass(frozen=True, slots=True)
class Environment:
    """Where sparktui ran, and what the user adds (environment variables, versions, ``nvidia-smi``...)."""

    sparktui: str
    python: str
    platform: str
    notes: str = ""

    @classmethod
    def current(cls, notes: str = "") -> Environment:
        python = f"{platform.python_implementation()} {platform.python_version()}"
        return cls(__version__, python, platform.platform(), notes)


@dataclass(frozen=True, slots=True)
class Inventory:
    """What ``sparktui check`` found on the nodes: the verdict overall and per node, the drift table, the
    fabric table and the build table."""

    verdict: str
    verdicts: tuple[tuple[str, str], ...]  # (node, verdict)
    drift: Drift
    seconds: float = 0.0
    fabric: tuple[FabricRow, ...] = ()  # every node's RDMA ports (see sparktui.core.inventory.fabric)
    builds: tuple[BuildRow, ...] = ()  # what each node loads, read from the files (sparktui.core.inventory.builds)


@dataclass(frozen=True, slots=True)
class Incident:
    """Everything a report shows. ``logs`` are the sources the diagnosis read (copied into the exported
    bundle with their timing); ``command`` is the launch command, if known."""

    diagnosis: Diagnosis
    title: str = "sparktui incident"
    description: str = ""
    logs: tuple[FileSource, ...] = ()
    command: str = ""
    audit: tuple[AuditEntry, ...] = ()
    environment: Environment = field(default_factory=Environment.current)
    created: datetime = field(default_factory=lambda: datetime.now(UTC))
    duration_ms: int = 0
    secrets_redacted: bool = False
    hosts_replaced: bool = False
    inventory: Inventory | None = None
    stacks: Snapshot | None = None  # the last capture of every rank's stack

    @classmethod
    def of_bundle(
        cls,
        bundle: Bundle,
        diagnosis: Diagnosis,
        *,
        command: str = "",
        audit: Sequence[AuditEntry] = (),
        environment: Environment | None = None,
        unread: Callable[[str], None] = lambda _: None,
    ) -> Incident:
        """The incident of a replayed bundle or a live session's spool, with its title, description, logs and
        capture of the stacks (one that cannot be read is left out, and ``unread`` told why: the cockpit said
        it when it opened)."""
        try:
            stacks = snapshot.read(bundle.path)
        except SnapshotError as exc:
            unread(f"the bundle's capture of the stacks is left out: {exc}")
            stacks = None
        return cls(
            diagnosis,
            title=bundle.title,
            description=bundle.description,
            logs=tuple(FileSource(s.path, s.name, s.node) for s in bundle.sources),
            command=command,
            audit=(*bundle.audit(), *audit),
            environment=environment or Environment.current(),
            duration_ms=bundle.duration_ms,
            stacks=stacks,
        )

    def folded(self) -> Incident:
        """With its capture of the stacks folded into the stall findings it was taken for and the grids."""
        return replace(self, diagnosis=fold(self.diagnosis, self.stacks))

    def learn_hosts(self, redactor: Redactor) -> None:
        """Show ``redactor`` every text of the report (not the logs), so it knows every host name before it
        replaces any."""

        def learn(text: str) -> str:
            redactor.learn(text)
            return text

        self._map(learn, str)

    def redacted(self, redactor: Redactor) -> Incident:
        """A copy with every text taken from logs, commands and the user through ``redactor``, and every node
        name through its node mapping. The catalogue's own words (titles, explanations) are kept."""
        copy = self._map(redactor.text, redactor.node)
        return replace(copy, secrets_redacted=redactor.secrets, hosts_replaced=redactor.anonymise_hosts)

    def _map(self, text: Callable[[str], str], node: Callable[[str], str]) -> Incident:
        d = self.diagnosis
        diagnosis = Diagnosis(
            tuple(
                SourceSummary(
                    text(s.name),
                    node(s.node),
                    s.lines,
                    s.error and text(s.error),
                    tuple(map(node, s.hosts)),
                    tuple(map(text, s.notes)),
                )
                for s in d.sources
            ),
            tuple(_finding(f, text, node) for f in d.findings),
            {node(n): {track: text(phrase) for track, phrase in tracks.items()} for n, tracks in d.stages.items()},
            tuple(_grid(g, text, node) for g in d.progress),
            tuple(text(w) for w in d.warnings),
            tuple(replace(p, node=node(p.node), who=text(p.who)) for p in d.pending),
            tuple(replace(s, node=node(s.node), endpoint=text(s.endpoint), model=text(s.model)) for s in d.serving),
        )
        audit = tuple(
            replace(a, command=text(a.command), node=node(a.node), output=text(a.output), step=text(a.step))
            for a in self.audit
        )
        return replace(
            self,
            diagnosis=diagnosis,
            title=text(self.title),
            description=text(self.description),
            command=text(self.command),
            audit=audit,
            environment=replace(self.environment, notes=text(self.environment.notes)),
            inventory=None if self.inventory is None else _inventory(self.inventory, text, node),
            stacks=None if self.stacks is None else self.stacks.redacted(text, node),
        )


def redacted_finding(f: Finding, redactor: Redactor) -> Finding:
    """One finding with every text taken from logs through ``redactor``, as :meth:`Incident.redacted` has
    them (for a finding shared on its own)."""
    return _finding(f, redactor.text, redactor.node)


def _inventory(inv: Inventory, text: Callable[[str], str], node: Callable[[str], str]) -> Inventory:
    """Node names through the node mapping, values (addresses, paths, environment) through the text one."""
    rows = tuple(
        Row(r.label, r.fact, tuple((text(value), tuple(map(node, nodes))) for value, nodes in r.groups))
        for r in inv.drift.rows
    )
    return replace(
        inv,
        verdicts=tuple((node(n), v) for n, v in inv.verdicts),
        drift=Drift(tuple(map(node, inv.drift.nodes)), rows),
        fabric=tuple(_fabric_row(r, text, node) for r in inv.fabric),
        builds=tuple(replace(r, node=node(r.node), path=text(r.path), note=text(r.note)) for r in inv.builds),
    )


def _fabric_row(r: FabricRow, text: Callable[[str], str], node: Callable[[str], str]) -> FabricRow:
    """A fabric row's node through the node mapping, its addresses and names through the text one."""
    return replace(r, node=node(r.node), port=text(r.port), netdev=text(r.netdev), ipv4=text(r.ipv4), note=text(r.note))


def _finding(f: Finding, text: Callable[[str], str], node: Callable[[str], str]) -> Finding:
    return replace(
        f,
        first_seen=Position(text(f.first_seen.source), f.first_seen.line),
        nodes=tuple(node(n) for n in f.nodes),
        evidence=tuple(
            Evidence(
                text(e.source),
                e.line,
                node(e.node),
                text(e.text),
                _around(e.before, text),
                _around(e.after, text),
            )
            for e in f.evidence
        ),
        facts={k: text(v) for k, v in f.facts.items()},
        detail=text(f.detail),
        because=tuple(replace(b, text=text(b.text)) for b in f.because),
    )


def _around(lines: tuple[str, ...], text: Callable[[str], str]) -> tuple[str, ...]:
    """The lines before (or after) an evidence line through ``text`` as the one text they are, so that a
    private key among them goes whole, even where its BEGIN or END line is outside them (see
    :func:`sparktui.core.redact.redact`); the evidence line itself, which a signature matched, is no key's."""
    if not lines:
        return lines
    out = text("\n".join(lines)).split("\n")
    return tuple(out) if len(out) == len(lines) else tuple(text(line) for line in lines)


def _grid(g: Grid, text: Callable[[str], str], node: Callable[[str], str]) -> Grid:
    rows = tuple(replace(r, node=node(r.node), who=text(r.who)) for r in g.rows)
    return replace(g, columns=tuple(text(c) for c in g.columns), rows=rows, verdict=text(g.verdict))
