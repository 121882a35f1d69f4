"""The analyser: lines in, findings out, in one process.

It joins the two halves of the analysis: a :class:`~sparktui.core.analysis.scan.Scan` per source (matching,
evidence, stage markers) and one :class:`~sparktui.core.analysis.correlate.Correlation` that merges what every
scan hands over and ranks the findings. The same object serves a file read after the fact and a live stream
(pass ``now`` to get "no progress for N seconds" instead of "stopped at"); where the scans run elsewhere
(other processes, the nodes themselves), their results go straight into a correlation instead.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from sparktui.core.analysis.correlate import Correlation
from sparktui.core.analysis.diagnosis import Diagnosis
from sparktui.core.analysis.scan import Rules, Scan, Scanned
from sparktui.core.analysis.stages import Outage
from sparktui.core.catalogue import Catalogue
from sparktui.core.classify import Classification
from sparktui.core.search.engines import Engine, best_engine


class Analyzer:
    """Scans and correlates the lines of any number of sources."""

    def __init__(self, catalogue: Catalogue, engine: Callable[[Sequence[str]], Engine] = best_engine) -> None:
        self.catalogue = catalogue
        self.rules = Rules(catalogue, engine)
        self.correlation = Correlation(catalogue)
        self._scans: dict[str, Scan] = {}

    def add_source(self, name: str, node: str) -> None:
        if name not in self._scans:
            self._scans[name] = Scan(self.rules, name, node)
            self.correlation.add_source(name, node)

    def node_of(self, name: str) -> str:
        return self._scans[name].node

    def set_node(self, name: str, node: str) -> None:
        """Name the node of a source's further lines (a live source that learnt it from its content)."""
        self._scans[name].node = node
        self.correlation.set_node(name, node)

    def know_hosts(self, name: str, hosts: frozenset[str]) -> None:
        """Tell a source's scan the names its machine goes by (a source that asked the machine)."""
        self._scans[name].known = hosts

    def home(self, name: str, line: Classification) -> str:
        """The node a line of a source belongs to (:meth:`Scan.home`)."""
        return self._scans[name].home(line)

    def source_failed(self, name: str, reason: str) -> None:
        """Record that a source could not be read (what was read from it stays)."""
        self.correlation.source_failed(name, reason)

    def source_noted(self, name: str, note: str) -> None:
        """Record what happened to a source that a reader must know (lines lost to a rotation)."""
        self.correlation.source_noted(name, note)

    def feed(self, name: str, text: str, now: float = 0.0) -> None:
        """Analyse a block of complete lines (``\\n``-separated, without the final newline)."""
        self.correlation.add(self.scan(name, text, now))

    def scan(self, name: str, text: str, now: float = 0.0) -> Scanned:
        """Scan a block of a source's lines and hand over what it found, without merging it yet (a caller
        that merges sources in an order of its own passes it to :meth:`merge` when its turn comes)."""
        scan = self._scans[name]
        scan.feed(text, now)
        return scan.take()

    def end(self, name: str) -> None:
        """The source ended (a file read to its end): merge what its end leaves open."""
        self.correlation.add(self.scan_end(name))

    def scan_end(self, name: str) -> Scanned:
        """What the end of a source that ended leaves open (:meth:`Scan.end`), without merging it yet (as
        :meth:`scan`)."""
        return self._scans[name].end()

    def continue_from(self, scanned: Scanned) -> None:
        """Go on here with a source that was scanned elsewhere up to ``scanned`` (its last hand-over, from a
        node whose scan stopped): its further lines are numbered after those, on the same node, which keeps
        the names its lines gave it."""
        scan = self._scans[scanned.source]
        scan.lines, scan.node, scan.hosts = scanned.lines, scanned.node, list(scanned.hosts)
        scan.last_time = scanned.last_time

    def merge(self, scanned: Scanned) -> None:
        """Take what a scan elsewhere (a worker process) handed over for one of the sources."""
        if scanned.node != self.correlation.node_of(scanned.source):
            self.set_node(scanned.source, scanned.node)
        self.correlation.add(scanned)

    def finish(self, now: float | None = None, down: Mapping[str, Sequence[Outage]] | None = None) -> Diagnosis:
        """The diagnosis so far (see :meth:`Correlation.diagnosis`)."""
        return self.correlation.diagnosis(now, down)
