"""The releases listed in ``releases.toml`` and where their wheels are cached."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
RELEASES = HERE / "releases.toml"
TABLES = HERE / "tables"


def cache_dir() -> Path:
    """Where downloaded wheels are kept (never inside the repository)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "sparktui-messages"


@dataclass(frozen=True)
class Release:
    program: str
    package: str
    version: str
    label: str
    python: str = ""

    @property
    def folder(self) -> Path:
        return cache_dir() / self.package / self.version

    def wheel(self) -> Path | None:
        found = sorted(self.folder.glob("*.whl")) if self.folder.is_dir() else []
        return found[0] if found else None


@dataclass(frozen=True)
class Program:
    name: str
    releases: tuple[Release, ...]
    python: tuple[str, ...] = ()
    native: tuple[str, ...] = ()
    strings: str = ""
    exclude: tuple[str, ...] = ()

    def reads(self, name: str) -> bool:
        """Whether a .py file of the wheel is read: the longest matching prefix of `python` and `exclude`
        decides, an included one winning a tie."""
        take = max((len(p) for p in self.python if name.startswith(p)), default=-1)
        drop = max((len(p) for p in self.exclude if name.startswith(p)), default=-1)
        return take >= 0 and take >= drop

    def labels(self) -> list[str]:
        return [r.label for r in self.releases]


def programs(path: Path = RELEASES) -> dict[str, Program]:
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    out: dict[str, Program] = {}
    for name, spec in data.items():
        rels = tuple(
            Release(name, r["package"], r["version"], r.get("label", r["version"]), r.get("python", ""))
            for r in spec["releases"]
        )
        if len({r.label for r in rels}) != len(rels):
            raise ValueError(f"{path}: {name}: two releases with one label")
        out[name] = Program(
            name,
            rels,
            tuple(spec.get("python", ())),
            tuple(spec.get("native", ())),
            spec.get("strings", ""),
            tuple(spec.get("exclude", ())),
        )
    return out


def download(release: Release, timeout: float = 1800) -> Path | None:
    """The release's wheel, downloaded with pip unless already cached; None (and a note) when pip failed."""
    have = release.wheel()
    if have is not None:
        return have
    release.folder.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--no-cache-dir"]
    if release.python:
        cmd += ["--python-version", release.python]
    cmd += [f"{release.package}=={release.version}", "-d", str(release.folder)]
    if release.package == "torch" and "+cpu" in release.version and reachable("https://download.pytorch.org/whl/cpu/"):
        cmd += ["--extra-index-url", "https://download.pytorch.org/whl/cpu"]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        print(f"  {release.package}=={release.version}: download timed out", file=sys.stderr)
        return None
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["?"]
        print(f"  {release.package}=={release.version}: pip failed: {tail[0]}", file=sys.stderr)
        return None
    return release.wheel()


def reachable(url: str) -> bool:
    import urllib.request

    try:
        with urllib.request.urlopen(url, timeout=5):
            return True
    except Exception:
        return False
