"""The judgement does not depend on how a log reached sparktui: every captured fixture, its lines wrapped the
way collectors and people wrap them (diagnostics/formats/prefixes.toml), gives the same first finding, and a
healthy one stays quiet. Wrappers that add a time are left out: a time made up here would contradict the
program's own clock, which a real collector's does not."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from sparktui.core.catalogue import Catalogue
from sparktui.core.events import Severity
from sparktui.core.pipeline import diagnose_files
from sparktui.core.sources.open import file_sources

from ..conftest import FIXTURES
from .test_fixtures import DIRS, EXPECTED

#: Each wrapper: (the name of the file the line is in, the line) -> the line as it reached sparktui.
WRAPPERS: dict[str, Callable[[str, str], str]] = {
    # docker compose logs of one service per file, pasted into an issue from a Windows terminal
    "compose-pasted-crlf": lambda name, line: f"> {name}-1  | {line}\r",
    # kubectl logs --prefix, one pod per file
    "kubectl": lambda name, line: f"[pod/{name}/engine] {line}",
    # srun --label: the task's number (every file one task)
    "srun-label": lambda name, line: f"0: {line}",
    # pdsh: the host in front of every line
    "pdsh": lambda name, line: f"{name}: {line}",
}


def wrapped(case: Path, into: Path, wrapper: Callable[[str, str], str]) -> Path:
    """A copy of the fixture ``case`` in ``into`` with every non-empty line of its logs wrapped."""
    for path in sorted(p for p in case.rglob("*") if p.is_file()):
        copy = into / path.relative_to(case)
        copy.parent.mkdir(parents=True, exist_ok=True)
        name = path.stem.replace("_", "-").replace(".", "-")
        lines = path.read_text(encoding="utf-8", errors="replace").split("\n")
        copy.write_text("\n".join(wrapper(name, line) if line else line for line in lines), encoding="utf-8")
    return into


@pytest.mark.parametrize("wrapper", WRAPPERS)
def test_every_fixture_wrapped_is_judged_as_it_is_bare(wrapper: str, catalogue: Catalogue, tmp_path: Path) -> None:
    wrong = []
    for name in DIRS:
        want = EXPECTED[name]
        sources, problems = file_sources([str(wrapped(FIXTURES / name, tmp_path / name, WRAPPERS[wrapper]))])
        assert not problems, problems
        findings = diagnose_files(sources, catalogue).findings
        if want.get("quiet") and any(f.severity >= Severity.ERROR for f in findings):
            wrong.append(f"{name}: loud: {[f.signature for f in findings]}")
        if "root" in want and (not findings or findings[0].signature != want["root"]):
            wrong.append(f"{name}: {[f.signature for f in findings[:2]]}, not {want['root']}")
    assert wrong == []
