"""Real captured logs: each fixture's root cause ranks first, and healthy runs stay quiet."""

from __future__ import annotations

import tomllib

import pytest

from sparktui.core.analysis.explain import RULES
from sparktui.core.catalogue import Catalogue
from sparktui.core.events import Severity
from sparktui.core.pipeline import diagnose_files
from sparktui.core.sources.open import file_sources

from ..conftest import FIXTURES

EXPECTED: dict[str, dict[str, object]] = tomllib.loads((FIXTURES / "expected.toml").read_text())
#: Fixture folders of what is not a log: py-spy dumps and node-script output, read by ``sparktui stacks``.
NOT_LOGS = {"stacks"}
DIRS = sorted(
    str(p.relative_to(FIXTURES)) for p in FIXTURES.glob("*/*") if p.is_dir() and p.parent.name not in NOT_LOGS
)


def test_every_fixture_has_expectations() -> None:
    assert DIRS
    assert sorted(EXPECTED) == DIRS


@pytest.mark.parametrize("name", DIRS)
def test_fixture(name: str, catalogue: Catalogue) -> None:
    want = EXPECTED.get(name, {})
    sources, problems = file_sources([str(FIXTURES / name)])
    assert not problems
    diagnosis = diagnose_files(sources, catalogue)
    found = [f.signature for f in diagnosis.findings]
    assert all(f.because and {b.rule for b in f.because} <= set(RULES) for f in diagnosis.findings), found
    for f in diagnosis.findings:  # a line is evidence once, however many patterns of the signature it matched
        quoted = [(e.source, e.line) for e in f.evidence]
        assert len(quoted) == len(set(quoted)), (f.signature, quoted)
    if want.get("quiet"):
        loud = [f.signature for f in diagnosis.findings if f.severity >= Severity.ERROR]
        assert loud == [], found
    if "root" in want:
        assert found and found[0] == want["root"], found
    if "root_nodes" in want:
        root = diagnosis.findings[0]
        assert list(root.nodes) == want["root_nodes"]
        assert sorted({e.node for e in root.evidence}) == sorted(root.nodes)
    if "root_says" in want:
        root = diagnosis.findings[0]
        assert any(str(want["root_says"]) in said for said in (root.detail, *(b.text for b in root.because)))
    for sig in want.get("present", []):  # type: ignore[attr-defined]
        assert sig in found, found
