"""The wheel carries every module, the catalogue and the playbooks, so an installed sparktui (not only a
checkout) can diagnose and remedy."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

from .conftest import ROOT


def test_wheel_contains_every_signature_and_stage_file(tmp_path: Path) -> None:
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(tmp_path),
            str(ROOT),
        ],
        check=True,
        capture_output=True,
    )
    (wheel,) = tmp_path.glob("sparktui-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for path in [*ROOT.glob("diagnostics/*.toml"), *ROOT.glob("diagnostics/*/*.toml")]:
        assert f"sparktui/{path.relative_to(ROOT)}" in names, path
    for path in [*ROOT.glob("playbooks/*.toml"), *ROOT.glob("playbooks/steps/*.toml")]:
        assert f"sparktui/{path.relative_to(ROOT)}" in names, path
    for path in (ROOT / "sparktui").rglob("*.py"):  # every module: a new folder of code is in the package list
        assert str(path.relative_to(ROOT)) in names, path
    for path in [p for p in (ROOT / "sparktui" / "demo").rglob("*") if p.is_file()]:
        assert str(path.relative_to(ROOT)) in names, path
    assert "sparktui/tui/sparktui.tcss" in names
