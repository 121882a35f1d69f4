"""The wheel carries every module, the catalogue and the playbooks, so an installed sparktui (not only a
checkout) can diagnose and remedy."""

from __future__ import annotations

import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

from packaging.requirements import Requirement

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
    for path in [*(ROOT / "sparktui").rglob("*.bash"), *(ROOT / "sparktui").rglob("*.sh")]:  # sent to nodes
        assert str(path.relative_to(ROOT)) in names, path


def test_the_fast_extra_installs_hyperscan_where_its_wheels_are() -> None:
    """Hyperscan 0.9.1 has wheels for Linux x86-64 and aarch64 (a DGX Spark), macOS and Windows x86-64; on
    any other machine pip would build it from source and fail, so the extra must leave it out there, and the
    base install never needs it."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    (fast,) = (Requirement(r) for r in extras["fast"])
    assert fast.name == "hyperscan" and fast.marker is not None
    assert [str(Requirement(r)) for r in extras["dev"] if r.startswith("hyperscan")] == [str(fast)]
    for machine in ("x86_64", "aarch64", "arm64", "AMD64"):
        assert fast.marker.evaluate({"platform_machine": machine}), machine
    for machine in ("ppc64le", "s390x", "armv7l", "riscv64"):
        assert not fast.marker.evaluate({"platform_machine": machine}), machine
    assert not any(Requirement(r).name == "hyperscan" for r in project["dependencies"])


def test_the_base_install_brings_py_spy_where_its_wheels_are() -> None:
    """py-spy's wheels carry its binary for Linux x86-64 and aarch64 (a DGX Spark): the base install brings it
    there, for the live watch and stacks; anywhere else pip would try to build it (Rust), so it is left out."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    (spy,) = (Requirement(r) for r in project["dependencies"] if Requirement(r).name == "py-spy")
    assert spy.marker is not None
    for machine in ("x86_64", "aarch64"):
        assert spy.marker.evaluate({"sys_platform": "linux", "platform_machine": machine}), machine
    for platform, machine in (("linux", "ppc64le"), ("linux", "riscv64"), ("darwin", "arm64"), ("win32", "AMD64")):
        assert not spy.marker.evaluate({"sys_platform": platform, "platform_machine": machine}), machine
