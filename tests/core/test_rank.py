"""The ranking of findings (``explain.order``), rule by rule, as a table: which findings go in, in what order
they come out, and the rule (its id in ``explain.RULES``) that each one's ``because`` says put it below the one
above it.

O1 problems before context (info); O2 a finding below what caused it (a cause it declares, or another error a
rank that waited saw no later); O3 more severe first; O4 at one severity, what a signature names before what a
family of the fallback files by its words, before what nothing files; O5 earlier first by the logs' clocks
where they say, O6 else by source and line; O7 then wider, then more often. The signatures are the built-in
catalogue's: the declared causes and the tiers are its data.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import pytest

from sparktui.core.analysis.clocks import Clocks
from sparktui.core.analysis.explain import RULES, order
from sparktui.core.catalogue import Catalogue
from sparktui.core.events import Because, Finding, Position, Severity

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
        ["O3", "O3"],
    ),
    "problems before context": (
        [F("info", severity=INFO, time=1.0), F("warning", severity=WARNING, time=9.0)],
        ["warning", "info"],
        ["O1"],
    ),
    "named, then a family's, then unfiled, at one severity": (
        [F("unfiled", UNFILED, line=1), F("family", FAMILY, line=2), F("named", NAMED, line=3)],
        ["named", "family", "unfiled"],
        ["O4", "O4"],
    ),
    "severity before the tier": (
        [F("named error", NAMED), F("unfiled critical", UNFILED, severity=CRITICAL, line=2)],
        ["unfiled critical", "named error"],
        ["O3"],
    ),
    "a declared consequence below its cause, more severe as it is": (
        [F("consequence", CONSEQUENCE, severity=CRITICAL, time=1.0), F("cause", CAUSE, time=5.0)],
        ["cause", "consequence"],
        ["O2"],
    ),
    "no cause that is neither an error nor as severe": (
        [F("consequence", CONSEQUENCE, severity=CRITICAL, time=5.0), F("cause", CAUSE, severity=WARNING, time=1.0)],
        ["consequence", "cause"],
        ["O3"],
    ),
    "a wait below another error seen no later": (
        [F("waited", WAITED, severity=CRITICAL, time=5.0, waits=True), F("error", OTHER, time=5.0)],
        ["error", "waited"],
        ["O2"],
    ),
    "a wait above an error seen after it, by severity": (
        [F("error", OTHER, time=9.0), F("waited", WAITED, severity=CRITICAL, time=5.0, waits=True)],
        ["waited", "error"],
        ["O3"],
    ),
    "without clocks, an error further down the same log is seen after the wait": (
        [F("error", OTHER, line=9), F("waited", WAITED, severity=CRITICAL, line=2, waits=True)],
        ["waited", "error"],
        ["O3"],
    ),
    "clocks that say the same second: an error further down the same log is seen after the wait": (
        [F("error", OTHER, time=5.0, line=9), F("waited", WAITED, severity=CRITICAL, time=5.0, line=2, waits=True)],
        ["waited", "error"],
        ["O3"],
    ),
    "a wait below the cause it declares, seen after it": (
        [F("waited", WAITED, time=1.0, waits=True), F("driver", NAMED, time=9.0)],
        ["driver", "waited"],
        ["O2"],
    ),
    "the logs' clocks: earlier first, then what says no time": (
        [F("none", line=1), F("later", time=20.0, line=2), F("earlier", time=10.0, line=3)],
        ["earlier", "later", "none"],
        ["O5", "O5"],
    ),
    "no clock: by source, then line": (
        [F("b 1", source="b.log", line=1), F("a 5", line=5), F("a 2", line=2)],
        ["a 2", "a 5", "b 1"],
        ["O6", "O6"],
    ),
    "a source the pipeline did not list comes last": (
        [F("unlisted", source="c.log", line=1), F("b 9", source="b.log", line=9)],
        ["b 9", "unlisted"],
        ["O6"],
    ),
    "then wider, then more often": (
        [F("one node", nodes=1, count=9), F("few", nodes=2, count=1), F("many", nodes=2, count=5)],
        ["many", "few", "one node"],
        ["O7", "O7"],
    ),
}


@pytest.mark.parametrize(("given", "expected", "rules"), list(CASES.values()), ids=list(CASES))
def test_rank(catalogue: Catalogue, given: list[F], expected: list[str], rules: list[str]) -> None:
    found = [f.finding(catalogue) for f in given]
    for came in (found, found[::-1]):  # whatever order they came in
        ranked = order(came, catalogue, SOURCES, Clocks())
        assert [f.title for f in ranked] == expected
        # each below the one above it by the rule the case is about, and the first above the second by it
        assert [_deciding(f) for f in ranked[1:]] == rules
        assert rules[0] in {b.rule for b in ranked[0].because}
        assert all(f.because and {b.rule for b in f.because} <= set(RULES) for f in ranked)


def _deciding(f: Finding) -> str:
    """The rule that put ``f`` below the one above it: the Because that names a finding by its place, or O2."""
    placed = [b for b in f.because if b.rule != "O2" or b.text.startswith("below what it")]
    return placed[-1].rule


def test_o2_names_the_causes_and_what_they_caused(catalogue: Catalogue) -> None:
    wait, error = F("waited", WAITED, time=5.0, waits=True), F("error", OTHER, time=1.0)
    first, second = order([wait.finding(catalogue), error.finding(catalogue)], catalogue, SOURCES, Clocks())
    assert first.because[:2] == (
        Because("O2", "no cause of it found above it"),
        Because("O2", "1 finding below points to it as its cause (#2)", (WAITED,)),
    )
    assert second.because == (Because("O2", "below what it waited for (#1)", (OTHER,)),)


def test_a_clock_that_is_off_is_not_compared(catalogue: Catalogue) -> None:
    """A wait on node-0 seen hours before the error on a node whose clock is off (O5 not applied across
    them): the wait ranks below the error it waited for, and says why its clock was not read."""
    wait = F("waited", WAITED, severity=CRITICAL, time=5.0, waits=True).finding(catalogue)
    error = replace(F("error", OTHER, time=5.0 + 3 * 3600, source="b.log").finding(catalogue), nodes=("node-c",))
    skewed = Clocks({"node-c": 3 * 3600.0}, {"node-0": 0, "node-c": 1})
    assert [f.title for f in order([wait, error], catalogue, SOURCES, Clocks())] == ["waited", "error"]
    ranked = order([wait, error], catalogue, SOURCES, skewed)
    assert [f.title for f in ranked] == ["error", "waited"]
    assert Because("O5", "not compared by the clock: node-c's clock is 3.0 h ahead of the others'") in ranked[0].because
