"""The ranking of findings (``findings.rank``), rule by rule, as a table: which findings, in what order out.

Read from the code: problems before context (info); a finding below what caused it (a cause it declares, or
another error a rank that waited saw no later); more severe first; at one severity, what a signature names
before what a family of the fallback files by its words, before what nothing files; then earlier first (by
the logs' clocks where they say, else by source and line); then wider, then more often. The signatures are
the built-in catalogue's: the declared causes and the tiers are its data.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from sparktui.core.analysis.findings import rank
from sparktui.core.catalogue import Catalogue
from sparktui.core.events import Finding, Position, Severity

ERROR, WARNING, INFO, CRITICAL = Severity.ERROR, Severity.WARNING, Severity.INFO, Severity.CRITICAL
#: Named by a signature of their own, declaring no cause.
NAMED, OTHER = "cuda-driver-too-old", "nccl-socket-ifname-no-interface"
#: Filed by a family of the fallback (by its words), and by the fallback itself (by nothing).
FAMILY, UNFILED = "unrecognised-failure-port-in-use", "unrecognised-failure"
#: A consequence and the signature it declares its cause.
CONSEQUENCE, CAUSE = "model-arch-not-supported", "model-code-import-error"
#: What a rank prints once its peer is gone (it waits for peers); it declares driver mismatches its causes.
WAITED = "nccl-peer-connection-lost"
#: The order of the sources, as the pipeline gives it.
SOURCES = {"a.log": 0, "b.log": 1}


@dataclass(frozen=True)
class F:
    """A finding in a case: its label, and what the ranking looks at."""

    label: str
    signature: str = NAMED
    severity: Severity = ERROR
    time: float | None = None
    source: str = "a.log"
    line: int = 1
    nodes: int = 1
    count: int = 1
    waits: bool = False

    def finding(self, catalogue: Catalogue) -> Finding:
        (signature,) = [s for s in catalogue.signatures if s.id == self.signature]
        return Finding(
            signature=self.signature,
            category=signature.category,
            severity=self.severity,
            title=self.label,
            explanation="",
            remediations=(),
            first_seen=Position(self.source, self.line),
            nodes=tuple(f"node-{k}" for k in range(self.nodes)),
            count=self.count,
            time=self.time,
            waits_for_peers=self.waits,
        )


CASES = {
    "more severe first": (
        [F("warning", severity=WARNING, line=1), F("error", line=9), F("critical", severity=CRITICAL, line=5)],
        ["critical", "error", "warning"],
    ),
    "problems before context": (
        [F("info", severity=INFO, time=1.0), F("warning", severity=WARNING, time=9.0)],
        ["warning", "info"],
    ),
    "named, then a family's, then unfiled, at one severity": (
        [F("unfiled", UNFILED, line=1), F("family", FAMILY, line=2), F("named", NAMED, line=3)],
        ["named", "family", "unfiled"],
    ),
    "severity before the tier": (
        [F("named error", NAMED), F("unfiled critical", UNFILED, severity=CRITICAL, line=2)],
        ["unfiled critical", "named error"],
    ),
    "a declared consequence below its cause, more severe as it is": (
        [F("consequence", CONSEQUENCE, severity=CRITICAL, time=1.0), F("cause", CAUSE, time=5.0)],
        ["cause", "consequence"],
    ),
    "no cause that is neither an error nor as severe": (
        [F("consequence", CONSEQUENCE, severity=CRITICAL, time=5.0), F("cause", CAUSE, severity=WARNING, time=1.0)],
        ["consequence", "cause"],
    ),
    "a wait below another error seen no later": (
        [F("waited", WAITED, severity=CRITICAL, time=5.0, waits=True), F("error", OTHER, time=5.0)],
        ["error", "waited"],
    ),
    "a wait above an error seen after it, by severity": (
        [F("error", OTHER, time=9.0), F("waited", WAITED, severity=CRITICAL, time=5.0, waits=True)],
        ["waited", "error"],
    ),
    "without clocks, an error further down the same log is seen after the wait": (
        [F("error", OTHER, line=9), F("waited", WAITED, severity=CRITICAL, line=2, waits=True)],
        ["waited", "error"],
    ),
    "clocks that say the same second: an error further down the same log is seen after the wait": (
        [F("error", OTHER, time=5.0, line=9), F("waited", WAITED, severity=CRITICAL, time=5.0, line=2, waits=True)],
        ["waited", "error"],
    ),
    "a wait below the cause it declares, seen after it": (
        [F("waited", WAITED, time=1.0, waits=True), F("driver", NAMED, time=9.0)],
        ["driver", "waited"],
    ),
    "the logs' clocks: earlier first, then what says no time": (
        [F("none", line=1), F("later", time=20.0, line=2), F("earlier", time=10.0, line=3)],
        ["earlier", "later", "none"],
    ),
    "no clock: by source, then line": (
        [F("b 1", source="b.log", line=1), F("a 5", line=5), F("a 2", line=2)],
        ["a 2", "a 5", "b 1"],
    ),
    "a source the pipeline did not list comes last": (
        [F("unlisted", source="c.log", line=1), F("b 9", source="b.log", line=9)],
        ["b 9", "unlisted"],
    ),
    "then wider, then more often": (
        [F("one node", nodes=1, count=9), F("few", nodes=2, count=1), F("many", nodes=2, count=5)],
        ["many", "few", "one node"],
    ),
}


@pytest.mark.parametrize(("given", "expected"), list(CASES.values()), ids=list(CASES))
def test_rank(catalogue: Catalogue, given: list[F], expected: list[str]) -> None:
    found = [f.finding(catalogue) for f in given]
    assert [f.title for f in rank(found, catalogue, SOURCES)] == expected
    assert [f.title for f in rank(found[::-1], catalogue, SOURCES)] == expected  # whatever order they came in
