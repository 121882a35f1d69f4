"""A wheelhouse made without network: the distributions installed on this machine, packed again as wheels.

``build("ray[default]", folder)`` writes one wheel for Ray and one for each distribution it needs (its
requirements, followed recursively, for the extras asked and the markers of this Python), so that
``pip install --no-index --find-links FOLDER "ray[default]"`` installs a real Ray where no index can be
reached. A wheel holds the files its distribution's RECORD lists (compiled ``__pycache__`` left out, as
pip compiles again), its ``.dist-info`` with the original WHEEL and METADATA, and a new RECORD; scripts
that are not entry points (``py-spy``'s binary) go to ``.data/scripts``, entry-point scripts are left to
pip to write again.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.metadata as md
import zipfile
from collections.abc import Iterable
from pathlib import Path, PurePosixPath

from packaging.requirements import Requirement
from packaging.tags import sys_tags
from packaging.utils import canonicalize_name

#: Written by the installer, not part of a wheel (RECORD is written again).
INSTALLED_ONLY = frozenset({"RECORD", "INSTALLER", "REQUESTED", "direct_url.json"})
#: The wheel tags this Python installs.
SUPPORTED = frozenset(str(tag) for tag in sys_tags())


def needed(requirement: str) -> list[md.Distribution]:
    """The installed distributions ``requirement`` needs, itself first."""
    extras: dict[str, set[str]] = {}
    found: dict[str, md.Distribution] = {}
    todo = [Requirement(requirement)]
    while todo:
        req = todo.pop()
        key = canonicalize_name(req.name)
        if key in found and req.extras <= extras[key]:
            continue
        dist = found.get(key) or md.distribution(req.name)
        found[key] = dist
        extras[key] = extras.get(key, set()) | req.extras
        for line in dist.requires or []:
            sub = Requirement(line)
            wanted = [{"extra": extra} for extra in ("", *sorted(extras[key]))]
            if sub.marker is None or any(sub.marker.evaluate(env) for env in wanted):
                todo.append(sub)
    return list(found.values())


def build(requirement: str, folder: Path) -> None:
    """Write a wheel into ``folder`` for each distribution ``requirement`` needs."""
    folder.mkdir(parents=True, exist_ok=True)
    for dist in needed(requirement):
        repack(dist, folder)


def repack(dist: md.Distribution, folder: Path) -> Path:
    """The installed ``dist`` as a wheel in ``folder``."""
    files = list(dist.files or [])
    info = next(f.parent for f in files if f.name == "METADATA" and f.parent.suffix == ".dist-info")
    wheel = dist.read_text("WHEEL") or ""
    tags = [line.split(":", 1)[1].strip() for line in wheel.splitlines() if line.startswith("Tag:")]
    tag = next(t for t in tags if t in SUPPORTED)  # py2-none-any would not be installed, py3-none-any is
    name, version = canonicalize_name(dist.metadata["Name"]).replace("-", "_"), dist.version
    scripts = {e.name for e in dist.entry_points if e.group in ("console_scripts", "gui_scripts")}
    path = folder / f"{name}-{version}-{tag}.whl"
    record: list[str] = []
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as archive:
        for file in files:
            arcname = _place(file, info, scripts, f"{name}-{version}.data")
            source = Path(str(dist.locate_file(file)))
            if arcname is not None and source.is_file():
                record.append(_add(archive, source, arcname))
        record.append(f"{info}/RECORD,,")
        archive.writestr(f"{info}/RECORD", "".join(f"{line}\n" for line in record))
    return path


def _place(file: PurePosixPath, info: PurePosixPath, scripts: Iterable[str], data: str) -> str | None:
    """Where an installed file goes in the wheel; None for what pip writes itself."""
    if "__pycache__" in file.parts or (file.parent == info and file.name in INSTALLED_ONLY):
        return None
    if file.parts[0] != "..":
        return file.as_posix()
    if file.name in scripts:
        return None
    if file.parent.name != "bin":
        raise ValueError(f"{file}: installed outside site-packages and not a script: cannot repack it")
    return f"{data}/scripts/{file.name}"


def _add(archive: zipfile.ZipFile, source: Path, arcname: str) -> str:
    """Store ``source`` (with its mode) as ``arcname``; its RECORD line."""
    digest, size = hashlib.sha256(), 0
    entry = zipfile.ZipInfo.from_file(source, arcname)
    with source.open("rb") as src, archive.open(entry, "w") as dst:
        while chunk := src.read(1 << 20):
            digest.update(chunk)
            dst.write(chunk)
            size += len(chunk)
    hashed = base64.urlsafe_b64encode(digest.digest()).rstrip(b"=").decode()
    return f"{arcname},sha256={hashed},{size}"
