"""``sparktui catalogue test PATH``: a path that names no catalogue file is refused with one line naming it
(exit 2), never reported as a catalogue that passed."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparktui.cli import main
from sparktui.core import catalogue as cat


def refused(path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    assert main(["catalogue", "test", str(path)]) == 2
    captured = capsys.readouterr()
    assert "passed" not in captured.out
    (line,) = captured.err.splitlines()
    assert str(path) in line
    return line


def test_a_folder_without_catalogue_files_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "notes.txt").write_text("not a signature\n")
    (tmp_path / "stages").mkdir()
    assert "no catalogue file" in refused(tmp_path, capsys)
    assert "no catalogue file" in refused(tmp_path / "stages", capsys)


def test_a_file_that_is_not_a_catalogue_file_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("not a signature\n")
    assert "not a catalogue file" in refused(path, capsys)


def test_a_folder_of_the_catalogue_still_passes(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["catalogue", "test", str(cat.builtin_dir() / "stages")]) == 0
    tracks = len(list((cat.builtin_dir() / "stages").glob("*.toml")))
    assert capsys.readouterr().out.strip() == f"{tracks} passed, 0 failed"
