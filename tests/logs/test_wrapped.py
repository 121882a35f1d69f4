"""The judgement does not depend on how a log reached sparktui: every captured fixture, its lines wrapped the
way collectors and people wrap them (diagnostics/formats/prefixes.toml), gives the same first finding, and a
healthy one stays quiet. The wrappers take the fixtures in turn (each fixture is wrapped once, each wrapper gets
every fourth), which covers both in a quarter of the time of every pair. A wrapper that adds a time is tried only
on fixtures of one log (every one, in turn between the two): across logs, a time made up here would contradict
the programs' own clocks, which a real collector's does not."""

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

pytestmark = pytest.mark.slow  # every fixture diagnosed, wrapped: a minute or two

#: Each wrapper: (the name of the file the line is in, the line's index in it, the line) -> the line as it reached
#: sparktui.
Wrapper = Callable[[str, int, str], str]
WRAPPERS: dict[str, Wrapper] = {
    # docker compose logs of one service per file, pasted into an issue from a Windows terminal
    "compose-pasted-crlf": lambda name, index, line: f"> {name}-1  | {line}\r",
    # kubectl logs --prefix, one pod per file
    "kubectl": lambda name, index, line: f"[pod/{name}/engine] {line}",
    # srun --label: the task's number (every file one task)
    "srun-label": lambda name, index, line: f"0: {line}",
    # pdsh: the host in front of every line
    "pdsh": lambda name, index, line: f"{name}: {line}",
}


def _stamp(index: int) -> str:
    """A collector's RFC 3339 time for a log's line ``index``: a millisecond a line, from 10:00."""
    return f"2026-12-04T10:{index // 60000 % 60:02d}:{index // 1000 % 60:02d}.{index % 1000:03d}000000Z"


#: Wrappers that put a time before every line, each as a collector writes it, tried on fixtures of one log.
TIMED: dict[str, Wrapper] = {
    # kubectl logs --timestamps, docker logs -t, a GitHub Actions log
    "rfc3339": lambda name, index, line: f"{_stamp(index)} {line}",
    # a Buildkite log pasted into an issue
    "buildkite": lambda name, index, line: f"  | [{_stamp(index)[:19]}Z] {line}",
}
#: The fixtures whose lines are one log (besides the capture's notes, meta.txt).
SINGLE = [name for name in DIRS if len([p for p in (FIXTURES / name).rglob("*.log") if p.is_file()]) == 1]


def wrapped(case: Path, into: Path, wrapper: Wrapper) -> Path:
    """A copy of the fixture ``case`` in ``into`` with every non-empty line of its logs wrapped."""
    for path in sorted(p for p in case.rglob("*") if p.is_file()):
        copy = into / path.relative_to(case)
        copy.parent.mkdir(parents=True, exist_ok=True)
        name = path.stem.replace("_", "-").replace(".", "-")
        lines = path.read_text(encoding="utf-8", errors="replace").split("\n")
        copy.write_text("\n".join(wrapper(name, i, line) if line else line for i, line in enumerate(lines)), "utf-8")
    return into


def misjudged(names: list[str], wrapper: Wrapper, catalogue: Catalogue, into: Path) -> list[str]:
    """The fixtures of ``names`` that, wrapped, are not judged as expected: a root not first, or a healthy one loud."""
    wrong = []
    for name in names:
        want = EXPECTED[name]
        sources, problems = file_sources([str(wrapped(FIXTURES / name, into / name, wrapper))])
        assert not problems, problems
        findings = diagnose_files(sources, catalogue).findings
        if want.get("quiet") and any(f.severity >= Severity.ERROR for f in findings):
            wrong.append(f"{name}: loud: {[f.signature for f in findings]}")
        if "root" in want and (not findings or findings[0].signature != want["root"]):
            wrong.append(f"{name}: {[f.signature for f in findings[:2]]}, not {want['root']}")
    return wrong


def in_turn(names: list[str], wrappers: dict[str, Wrapper], wrapper: str) -> list[str]:
    """The names ``wrapper`` takes when ``wrappers`` take ``names`` in turn."""
    turn = list(wrappers).index(wrapper)
    return [name for i, name in enumerate(names) if i % len(wrappers) == turn]


@pytest.mark.parametrize("wrapper", WRAPPERS)
def test_every_fixture_wrapped_is_judged_as_it_is_bare(wrapper: str, catalogue: Catalogue, tmp_path: Path) -> None:
    assert misjudged(in_turn(DIRS, WRAPPERS, wrapper), WRAPPERS[wrapper], catalogue, tmp_path) == []


@pytest.mark.parametrize("wrapper", TIMED)
def test_every_fixture_of_one_log_behind_a_collectors_time_is_judged_as_it_is_bare(
    wrapper: str, catalogue: Catalogue, tmp_path: Path
) -> None:
    """A time before every line starts no new message: the words under an exception are still read."""
    assert len(SINGLE) > 30
    assert misjudged(in_turn(SINGLE, TIMED, wrapper), TIMED[wrapper], catalogue, tmp_path) == []
