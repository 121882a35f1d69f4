"""PyTorch flight-recorder dumps read without torch: the real dumps of a 4-rank NCCL job on an H200 where
rank 3 skips the third all_reduce (tests/fixtures/stacks/nccl/skip-collective/fr, made by
tools/capture/stacks/capture.py), and pickles that hold more than plain data refused."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from sparktui.cli import main
from sparktui.core.stacks import flight

from ..conftest import ROOT

FR = ROOT / "tests" / "fixtures" / "stacks" / "nccl" / "skip-collective" / "fr"


def test_the_rank_that_never_joined_is_named() -> None:
    dumps = flight.read_folder(FR)
    assert [d.rank for d in dumps] == [0, 1, 2, 3]
    assert dumps[0].version == "2.10" and dumps[0].groups == {"0": ("default_pg", (0, 1, 2, 3))}
    result = flight.analyse(dumps)
    assert result.not_joined == [("0 (default_pg)", 3, "nccl:all_reduce", [3])]
    assert result.findings == [
        "group 0 (default_pg): rank 3 never joined collective #3 (nccl:all_reduce), which ranks 0, 1, 2 are in"
    ]


def test_a_rank_without_a_dump_file_is_named(tmp_path: Path) -> None:
    for rank in (0, 1, 2):  # rank 3's file left out, as when its process died before the dump
        (tmp_path / f"nccl_trace_rank_{rank}").write_bytes((FR / f"nccl_trace_rank_{rank}").read_bytes())
    result = flight.analyse(flight.read_folder(tmp_path))
    assert result.missing_dumps == [3]
    assert result.findings[0] == "no dump file from rank 3 (missing dump files)"


def test_a_rank_gone_before_the_dump_is_named() -> None:
    """Mismatched collectives on the H200: rank 3's broadcast returned and its process ended; ranks 0-2 timed
    out in all_reduce and dumped (tests/fixtures/stacks/nccl-2/mismatch/fr)."""
    result = flight.analyse(flight.read_folder(ROOT / "tests/fixtures/stacks/nccl-2/mismatch/fr"))
    assert result.ranks == [0, 1, 2] and result.missing_dumps == [3]


def test_a_pickle_with_a_global_is_refused(tmp_path: Path) -> None:
    (tmp_path / "nccl_trace_rank_0").write_bytes(pickle.dumps({"entries": [], "path": Path("/etc")}))
    with pytest.raises(flight.Unreadable, match=r"nccl_trace_rank_0: refers to pathlib\.\w*Path"):
        flight.read_folder(tmp_path)


def test_the_command_reads_the_dumps(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["stacks", "--flight", str(FR)]) == 1
    assert "rank 3 never joined collective #3 (nccl:all_reduce)" in capsys.readouterr().out
