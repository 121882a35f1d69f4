"""What reaches every node for a scan there: sparktui's core and the catalogue, as one zip that Ray's runtime
environment unpacks on each node as the actors' working directory.

The zip holds ``sparktui/__init__.py`` and ``sparktui/core/`` (the code the scan needs, no user interface),
the built-in catalogue folder as ``diagnostics/`` beside it (where :func:`sparktui.core.dirs.builtin` finds it
on the node, and with it the line formats and the taxonomy), and each of the user's signature and stage
files that the catalogue uses, one folder each, numbered in catalogue order (``signatures/s0003/x.toml``,
``signatures/t0000/stages/y.toml``): loaded after the built-in folder, they give the same catalogue in the
same order. Files the catalogue left out (a user's file that failed its checks) are not shipped.

The zip is made the same, byte for byte, from the same code and catalogue (entries sorted, times fixed), so
Ray, which names a package by its content, uploads it once and each node unpacks it once; a changed
signature makes another package. On the node, :func:`load_shipped` loads it and the scanner compares its
:func:`~sparktui.core.catalogue.digest` with the one the driver sent.
"""

from __future__ import annotations

import hashlib
import io
import zipfile
from dataclasses import dataclass
from pathlib import Path

import sparktui
from sparktui.core import catalogue as cat
from sparktui.core.dirs import cache_dir

#: The folder of the zip holding the user's signature and stage files.
USER = "signatures"
#: Every entry gets this time: the same files make the same bytes.
_EPOCH = (1980, 1, 1, 0, 0, 0)


@dataclass(frozen=True, slots=True)
class Shipment:
    """The zip for one catalogue and this code, where it lies here, its size and its catalogue's digest."""

    path: Path
    size: int
    digest: str


def build(catalogue: cat.Catalogue) -> Shipment:
    """The zip for ``catalogue`` (kept in the cache folder, made once per content)."""
    files: dict[str, bytes] = {}
    package = Path(sparktui.__file__).resolve().parent
    files["sparktui/__init__.py"] = (package / "__init__.py").read_bytes()
    for path in (package / "core").rglob("*.py"):
        files[f"sparktui/{path.relative_to(package).as_posix()}"] = path.read_bytes()
    builtin = cat.builtin_dir()
    for path in builtin.rglob("*"):
        if path.is_file() and "__pycache__" not in path.parts and path.suffix in (".toml", ".md", ".tsv"):
            files[f"diagnostics/{path.relative_to(builtin).as_posix()}"] = path.read_bytes()
    theirs = [s.path for s in catalogue.signatures if not cat.is_builtin(s.path)]
    for i, path in enumerate(theirs):
        files[f"{USER}/s{i:04d}/{path.name}"] = path.read_bytes()
    for i, path in enumerate(t.path for t in catalogue.tracks if not cat.is_builtin(t.path)):
        files[f"{USER}/t{i:04d}/stages/{path.name}"] = path.read_bytes()
    data = _zip(files)
    name = hashlib.sha256(data).hexdigest()[:32]
    path = cache_dir() / "edge" / f"sparktui-{name}.zip"
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_bytes(data)
        tmp.replace(path)
    return Shipment(path, len(data), cat.digest(catalogue))


def load_shipped(root: Path) -> cat.Catalogue:
    """The catalogue of a shipment unpacked at ``root`` (on the node): the built-in folder beside the code,
    then the user's files in their order."""
    user = root / USER
    folders = sorted(p for p in user.iterdir() if p.is_dir()) if user.is_dir() else []
    return cat.load(folders)


def _zip(files: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as z:
        for name in sorted(files):
            info = zipfile.ZipInfo(name, _EPOCH)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            z.writestr(info, files[name])
    return out.getvalue()
