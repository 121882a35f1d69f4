"""The values that flow through the pipeline: severities, evidence, findings and sources."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum, IntEnum
from typing import Any, NamedTuple

from sparktui.core.text import display


class Severity(IntEnum):
    """How bad a finding is; ``ERROR`` and ``CRITICAL`` mean the deployment is not working."""

    INFO = 0
    WARNING = 1
    ERROR = 2
    CRITICAL = 3

    @classmethod
    def parse(cls, name: str) -> Severity:
        try:
            return cls[name.upper()]
        except KeyError:
            choices = ", ".join(s.name.lower() for s in cls)
            raise ValueError(f"unknown severity {name!r} (expected one of {choices})") from None

    @property
    def label(self) -> str:
        return self.name.lower()


class ByFields:
    """Pickled as its fields and made again by its constructor, for the slotted dataclasses a scan in
    another process hands over by the thousand: a slotted dataclass's own way looks its fields up for every
    object, which takes about as long as the rest of unpickling it."""

    __slots__ = ()

    def __reduce__(self) -> tuple[type, tuple[object, ...]]:
        names: tuple[str, ...] = type(self).__slots__  # a slotted dataclass's: its fields, in order
        return type(self), tuple(getattr(self, name) for name in names)


class Position(NamedTuple):
    """A line in a source: the source's display name and a 1-based line number. A named tuple: there is
    one in every stage marker and hit, made by the hundred thousand in a big log and, where the scan ran
    elsewhere, unpickled as many times."""

    source: str
    line: int


@dataclass(frozen=True, slots=True)
class Evidence(ByFields):
    """One line that supports a finding, with a few lines around it (all made safe to display)."""

    source: str
    line: int
    node: str
    text: str
    before: tuple[str, ...] = ()
    after: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Because:
    """Why a finding is kept or placed where it is: the rule that did it (its id in
    :data:`sparktui.core.analysis.explain.RULES`, or a filing step's), in words, and the findings it names (their
    signatures)."""

    rule: str
    text: str
    names: tuple[str, ...] = ()

    def said(self) -> str:
        """One line: ``O3 error, more severe than #2 (warning)``."""
        return f"{self.rule} {self.text}"


@dataclass(frozen=True, slots=True)
class Finding:
    """A diagnosis: one signature seen (or one stall detected), correlated across nodes and ranks."""

    signature: str
    category: str
    severity: Severity
    title: str
    explanation: str
    remediations: tuple[str, ...]
    first_seen: Position
    nodes: tuple[str, ...] = ()
    count: int = 0
    evidence: tuple[Evidence, ...] = ()
    facts: dict[str, str] = field(default_factory=dict)
    detail: str = ""
    time: float | None = None  # when it was first seen, in seconds within the year, where its lines say it
    waits_for_peers: bool = False  # what a rank prints when another one failed or stopped (a consequence)
    lost_peer: bool = False  # ... and says that it lost that one (its socket closed), rather than waited for it
    verdict: str = ""  # a pre-launch check's: block, slow or advice (empty for a finding from logs)
    because: tuple[Because, ...] = ()  # why it is kept and ranked where it is, first what placed it most
    detected_at: str = ""  # a live session's: when it was first made, on the wall clock (ISO 8601, UTC)
    filed: str = ""  # a fallback finding's: how it was filed ("filed as model files: raised in vllm/...")

    @property
    def shown_facts(self) -> dict[str, str]:
        """The facts as every front end shows them: each value inert as a log line is (:func:`display`: a
        bidirectional override or an escape in a path a log printed is shown as ``\\u202e``, ``\\x1b``). The
        facts themselves stay as the log wrote them, for the playbooks (which refuse such characters)."""
        return {k: display(v) for k, v in self.facts.items()}

    def seen_after(self, other: Finding) -> bool:
        """Whether this finding was first seen after ``other``: by the logs' clocks where both say a time and
        the times differ, else further down the same source (unknown: no)."""
        if self.time is not None and other.time is not None and self.time != other.time:
            return self.time > other.time
        return self.first_seen.source == other.first_seen.source and self.first_seen.line > other.first_seen.line


def finding_dict(rank: int, f: Finding) -> dict[str, Any]:
    """A finding as the JSON outputs write it (``diagnose --json``, ``check --json``, the reports), ``rank``
    being its place in the ranking, 1 first."""
    given = {k: v for k, v in (("verdict", f.verdict), ("detected_at", f.detected_at)) if v}
    return {
        "rank": rank,
        "signature": f.signature,
        "category": f.category,
        "severity": f.severity.label,
        "title": f.title,
        "detail": f.detail,
        "nodes": list(f.nodes),
        "count": f.count,
        "first_seen": {"source": f.first_seen.source, "line": f.first_seen.line},
        "evidence": [
            {
                "source": e.source,
                "line": e.line,
                "node": e.node,
                "text": e.text,
                "before": list(e.before),
                "after": list(e.after),
            }
            for e in f.evidence
        ],
        "facts": dict(f.facts),
        "explanation": f.explanation,
        "remediations": list(f.remediations),
        "because": [{"rule": b.rule, "text": b.text, "names": list(b.names)} for b in f.because],
    } | given


@dataclass(frozen=True, slots=True)
class SourceSummary:
    """What was read from one source; ``hosts`` are the other names its lines gave its node (an SSH alias
    is ``node``, the host name NCCL printed is among ``hosts``)."""

    name: str
    node: str
    lines: int
    error: str | None = None
    hosts: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()  # what happened to it that a reader must know (lines lost to a rotation)


class State(Enum):
    """Where a source is: connecting, streaming, waiting to retry, ended for good or failed for good."""

    CONNECTING = "connecting"
    STREAMING = "streaming"
    RETRYING = "retrying"
    ENDED = "ended"
    FAILED = "failed"


@dataclass(frozen=True, slots=True)
class StateChange:
    """A source moved to ``state``, with the reason (or "in 4.2 s" for a retry) in ``detail``."""

    source: str
    state: State
    detail: str = ""  # the reason, or "in 4.2 s" for a retry


@dataclass(frozen=True, slots=True)
class SourceNote:
    """News of a source that does not change its state, which a reader must know (lines lost to a rotation, a
    container that exited); it reaches the diagnosis, the cockpit's notifications and diagnose's stderr."""

    source: str
    text: str
