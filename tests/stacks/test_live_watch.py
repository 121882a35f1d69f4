"""The live watch's verdicts on real jobs (torch's CPU build, gloo, 2 ranks), as bench/hang_detect.py runs
them: ``sparktui diagnose --follow`` over the ranks' logs, a new process with the default settings and the
real py-spy. Each hang names its odd rank by itself (the logs say nothing after "in place"); a healthy job
that prints nothing, a rank loading weights for 30 s and a rank compiling as long (three quiet spells of the
default 10 s each; the bench's own runs take a minute) give no hang verdict. How long the verdict takes is the
bench's to measure, not these tests'."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pytest

from bench.hang_detect import HANGS, run_one

from .jobs import PYTHON

PY_SPY = str(Path(sys.executable).parent / "py-spy")


def options(phase_s: float = 60.0, healthy_s: float = 35.0) -> argparse.Namespace:
    return argparse.Namespace(phase_s=phase_s, healthy_s=healthy_s, py_spy=PY_SPY, backend="gloo")


@pytest.mark.slow
@pytest.mark.parametrize("scenario", HANGS)
def test_a_hang_names_its_rank_by_itself(scenario: str, tmp_path: Path) -> None:
    run = run_one(scenario, 2, PYTHON, tmp_path, options())
    assert run.seconds is not None, run
    assert run.right, run
    assert run.named.startswith("rank 1 "), run
    assert run.findings[0].startswith("rank 1 ")  # the hang still stands at the end, first among the findings


@pytest.mark.slow
@pytest.mark.parametrize("scenario", ["healthy", "slow-load", "slow-compile"])
def test_a_slow_or_busy_job_is_no_hang(scenario: str, tmp_path: Path) -> None:
    run = run_one(scenario, 2, PYTHON, tmp_path, options(phase_s=30.0))
    assert run.right and run.named == "", run
