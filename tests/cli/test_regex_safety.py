"""A pattern that backtracks without bound cannot hang the analysis: the user's patterns search each line
within a time budget, a pattern that runs out of it is disabled for the run and named once in the
diagnosis (and every report of it), with either engine and with a pattern that Hyperscan rejects; a user
signature that fails the checks of ``catalogue test`` is left out on load, with its file, key and reason."""

from __future__ import annotations

import html
import io
import json
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from rich.console import Console

from sparktui.cli import main
from sparktui.core.analysis import matcher, userfiles
from sparktui.core.analysis.diagnosis import Diagnosis
from sparktui.core.analysis.matcher import Matcher
from sparktui.core.events import SourceSummary
from sparktui.core.pipeline import run
from sparktui.core.redact import Redactor
from sparktui.core.report.html import page
from sparktui.core.report.incident import Incident
from sparktui.core.report.markdown import diagnosis_markdown, markdown
from sparktui.core.search import engines
from sparktui.core.search.engines import Engine, HyperscanEngine, LiteralEngine
from sparktui.core.sources.files import FileRead
from sparktui.core.sources.open import file_sources
from sparktui.richtext import print_text

from ..catalogue.test_loader import NESTED_REPEATS

#: Exponential in the length of a run of ``a`` that does not end the line: ``(a+)+`` splits the run every
#: way before ``$`` fails. Hyperscan rejects the conditional, so that engine hands it to the literal one.
BACKTRACKS = "aaaa(a+)+$(?(1)|x)"
#: What the trial ran for over 300 s: 100 kB of ``a`` and a character that stops ``$`` matching.
LONG_RUN = "a" * 100_000 + "!"


def signatures(root: Path, **patterns: str) -> Path:
    """A signature folder with one file per id, each matching its pattern."""
    root.mkdir()
    for sig_id, pattern in patterns.items():
        (root / f"{sig_id}.toml").write_text(NESTED_REPEATS.format(id=sig_id, pattern=pattern))
    return root


@pytest.mark.parametrize("engine", [LiteralEngine, HyperscanEngine])
def test_a_user_pattern_out_of_time_is_disabled_once(engine: Callable[[Sequence[str]], Engine]) -> None:
    pats = [BACKTRACKS, "Init COMPLETE"]
    found = Matcher(pats, engine(pats), untrusted=[0])
    lines = [(line.row, key) for line in found.scan(f"{LONG_RUN}\naaaaa\nx Init COMPLETE") for key, _ in line.matches]
    assert lines == [(2, 1)]  # after line 0, the pattern no longer matches even "aaaaa"
    assert [(o.key, o.index) for o in found.overruns()] == [(0, 0)]
    assert found.overruns() == []  # reported once


def test_a_builtin_pattern_has_the_budget_on_long_lines() -> None:
    found = Matcher([BACKTRACKS], LiteralEngine([BACKTRACKS]))
    assert matcher.LONG_LINE < 5_000  # a length that takes this pattern far longer than the budget
    assert list(found.scan("a" * 5_000 + "!")) == []
    assert [o.key for o in found.overruns()] == [0]


def test_hyperscan_rejections_are_found_once_and_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    pats = ["Init COMPLETE", BACKTRACKS, r"NCCL INFO \w+"]
    HyperscanEngine(pats)
    assert len(list((tmp_path / "sparktui").iterdir())) == 1  # the database and the verdict, in one file

    def no_compile(*_: object) -> None:
        raise AssertionError("compiled again")

    monkeypatch.setattr(engines, "_compile", no_compile)
    found = Matcher(pats, HyperscanEngine(pats))
    text = "aaaaa\nNCCL INFO Bootstrap\nx Init COMPLETE"
    assert [(line.row, key) for line in found.scan(text) for key, _ in line.matches] == [(0, 1), (1, 2), (2, 0)]


@pytest.mark.parametrize("engine", ["pure", ""])
def test_diagnose_finishes_and_names_what_it_left_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], engine: str
) -> None:
    monkeypatch.setenv("SPARKTUI_ENGINE", engine)
    sigs = signatures(tmp_path / "sigs", **{"no-literal": "(a+)+$", "backtracks": BACKTRACKS})
    log = tmp_path / "a.log"
    log.write_text(f"{LONG_RUN}\naaaaa\n")
    assert main(["diagnose", "--json", "-j", "1", "--signatures", str(sigs), str(log)]) == 0
    out, err = capsys.readouterr()
    warnings = json.loads(out)["warnings"]
    left_out, disabled = warnings
    assert left_out.startswith(f"left out {sigs / 'no-literal.toml'}: match.any[0]: no plain literal")
    assert disabled.startswith(f"{sigs / 'backtracks.toml'}: match.any[0]: pattern disabled for this run")
    assert disabled.endswith("on line 1 of a.log")
    assert err.splitlines() == [f"sparktui: {left_out}", f"sparktui: {disabled}"]  # each said once, in one line


def test_workers_that_each_disable_a_pattern_report_it_once(tmp_path: Path) -> None:
    found = userfiles.load([signatures(tmp_path / "sigs", backtracks=BACKTRACKS)])
    for name in ("a.log", "b.log"):
        (tmp_path / name).write_text(LONG_RUN + "\n")
    sources, _ = file_sources([str(tmp_path / "a.log"), str(tmp_path / "b.log")])
    diagnosis = run(found, [FileRead(s) for s in sources], show=False, refresh=False, workers=2).wait()
    (warning,) = diagnosis.warnings
    assert "backtracks.toml: match.any[0]: pattern disabled for this run" in warning


def test_version_names_the_matching_engine(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("SPARKTUI_ENGINE", "pure")
    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    assert capsys.readouterr().out.splitlines()[1] == "matching engine: pure Python (SPARKTUI_ENGINE=pure)"


def test_every_report_says_what_was_not_used(tmp_path: Path) -> None:
    warning = f"{tmp_path / 'sigs' / 'backtracks.toml'}: match.any[0]: pattern disabled for this run"
    diagnosis = Diagnosis((SourceSummary("a.log", "n1", 2),), (), {}, (), (warning,))
    shown = Console(file=io.StringIO(), width=60)
    print_text(diagnosis, shown)
    assert f"  ! {warning}\n" in shown.file.getvalue()  # type: ignore[attr-defined]
    assert f"- **Not used:** {warning}" in diagnosis_markdown(diagnosis).replace("\\", "")
    incident = Incident(diagnosis).redacted(Redactor())
    assert incident.diagnosis.warnings == (warning,)
    assert f"<strong>Not used: </strong>{html.escape(warning)}" in page(incident)
    assert f"- **Not used:** {warning}" in markdown(incident).replace("\\", "")
