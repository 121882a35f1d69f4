"""Read the ``libnccl.so.2`` of released NCCL wheels as files and keep what identifies each build.

For each wheel (``nvidia-nccl-cu12`` / ``nvidia-nccl-cu13`` at a version, for x86_64 and aarch64) this
runs ``pip download --no-deps --only-binary=:all: --platform ...`` into a temporary folder outside the
repository, copies ``nvidia/nccl/lib/libnccl.so.2`` out of the wheel (a zip), reads it with the same ELF
reader the node probe uses (:mod:`sparktui.core.inventory.image_probe`: its sha256, GNU build id, the
architecture in its ELF header, the compilers in its ``.comment`` section and the ``NCCL version ...``
string in its ``.rodata``), then deletes the wheel and the library (they weigh 200 to 400 MB each).

The facts go to ``tests/fixtures/builds/nccl-wheels.json`` (one object per wheel, sorted), which the advisory tests
read. ``--keep DIR`` also keeps the libraries of the wheels named by ``--keep-only`` (default: the x86_64
``nvidia-nccl-cu12`` 2.29.2, a release with a known hang) in ``DIR/<package>-<version>-<arch>/``: the spark
test nodes' check loads one from there.

    python3 tools/capture/nccl_wheels.py                       # the default set
    python3 tools/capture/nccl_wheels.py --keep ~/.cache/sparktui-tests/nccl
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from sparktui.core.inventory.image_probe import NCCL_SAYS, elf_build  # noqa: E402

OUT = ROOT / "tests" / "fixtures" / "builds" / "nccl-wheels.json"
MEMBER = "nvidia/nccl/lib/libnccl.so.2"
#: The platform tags pip may pick for each architecture (the wheels moved from manylinux2014 to 2_18).
PLATFORMS = {
    "x86_64": ("manylinux2014_x86_64", "manylinux_2_18_x86_64", "manylinux_2_17_x86_64"),
    "aarch64": ("manylinux2014_aarch64", "manylinux_2_18_aarch64", "manylinux_2_17_aarch64"),
}
#: The releases read by default: both sides of each advisory's boundaries (2.21.5, 2.28.9, 2.29.2 -> 2.29.3,
#: 2.30.3 -> 2.30.4 .. 2.30.7, 2.31.1 -> 2.31.2). 2.32 has no wheel for these platform tags on the index.
DEFAULT = {
    "nvidia-nccl-cu12": ("2.21.5", "2.26.2", "2.28.9", "2.29.2", "2.29.3", "2.30.3", "2.30.4", "2.30.7", "2.31.2"),
    "nvidia-nccl-cu13": ("2.28.9", "2.29.2", "2.29.3", "2.30.7", "2.31.2"),
}
KEEP_ONLY = ("nvidia-nccl-cu12==2.29.2:x86_64",)


def read_wheel(package: str, version: str, arch: str, work: Path, keep: Path | None) -> dict[str, object] | None:
    """The facts of one wheel's library (None where that release has no wheel for ``arch``: 2.21.5 had
    none for aarch64); the wheel and the library are removed before returning."""
    folder = Path(tempfile.mkdtemp(dir=work))
    try:
        platforms = [arg for tag in PLATFORMS[arch] for arg in ("--platform", tag)]
        got = subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--quiet", *platforms,
             "--dest", str(folder), f"{package}=={version}"],
            check=False,
        )  # fmt: skip
        if got.returncode != 0:
            return None
        (wheel,) = folder.glob("*.whl")
        library = folder / "libnccl.so.2"
        with zipfile.ZipFile(wheel) as archive, archive.open(MEMBER) as src, library.open("wb") as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
        facts = elf_build(str(library), NCCL_SAYS)
        if keep is not None:
            place = keep / f"{package}-{version}-{arch}"
            place.mkdir(parents=True, exist_ok=True)
            shutil.copy2(library, place / "libnccl.so.2")
        del facts["path"]
        return {"package": package, "version": version, "wheel": wheel.name, "platform": arch, **facts}
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("specs", nargs="*", help="package==version (default: the set in DEFAULT)")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--keep", type=Path, help="keep the libraries named by --keep-only here")
    parser.add_argument("--keep-only", action="append", help="package==version:arch (repeatable)")
    args = parser.parse_args(argv)
    wanted = [tuple(s.split("==", 1)) for s in args.specs] or [(p, v) for p, vs in DEFAULT.items() for v in vs]
    kept = set(args.keep_only or KEEP_ONLY)
    # the wheels read now replace their entries; the others already written stay
    found: list[dict[str, object]] = json.loads(args.out.read_text()) if args.out.exists() else []
    with tempfile.TemporaryDirectory(prefix="nccl-wheels-") as work:
        for package, version in wanted:
            for arch in PLATFORMS:
                keep = args.keep if f"{package}=={version}:{arch}" in kept else None
                if args.keep is not None and keep is None:
                    continue
                one = read_wheel(package, version, arch, Path(work), keep)
                if one is None:
                    print(f"{package} {version} {arch}: no wheel")
                    continue
                print(f"{package} {version} {arch}: {one['says']} gcc {one['gcc']} {one['build_id']}")
                found = [f for f in found if (f["package"], f["version"], f["platform"]) != (package, version, arch)]
                found.append(one)
    found.sort(key=lambda f: (str(f["package"]), tuple(int(n) for n in str(f["version"]).split(".")), f["platform"]))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(found, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
