"""Which program, layer and process a log line comes from, and at what level.

Prefixes differ by program and version (see ``reference/signatures-from-source.md`` §0.1). A line can
carry two: Ray prefixes the output of its workers with ``(RayWorkerWrapper pid=…, ip=…)``, and vLLM ≥ 0.10
prefixes its child processes with ``(EngineCore_DP0 pid=…)``; the classifier peels the outer one and
classifies the rest.
"""

from __future__ import annotations

from dataclasses import dataclass

import regex

PROGRAMS = (
    "nccl",
    "torch",
    "vllm",
    "sglang",
    "ray",
    "uvicorn",
    "transformers",
    "docker",
    "cuda",
    "python",
    "other",
)


@dataclass(frozen=True, slots=True)
class Classification:
    """What a line is: ``program`` is one of :data:`PROGRAMS`; ``layer`` refines it (``ray-cpp``,
    ``vllm:Worker_TP1``); ``node`` and ``pid`` are set only when the line itself names them."""

    program: str
    layer: str
    level: str = ""
    process: str = ""
    rank: int | None = None
    node: str | None = None
    pid: int | None = None


# (RayWorkerWrapper pid=123, ip=10.0.0.2) and vLLM's (EngineCore_DP0 pid=123) / (Worker_TP1 pid=9)
_PROC_PREFIX = regex.compile(
    r"^\((?:(?P<proc>[A-Za-z_][\w\[\]:.-]*)(?:,? |(?=\)))?)?(?:pid=(?P<pid>\d+))?(?:,? ?ip=(?P<ip>[\w.:-]+))?\)\s?"
)
#: What NCCL writes before each of its lines: ``host:pid:tid [cudaDev]``, the host as the process saw it
#: (``NCCL_HOSTID`` where set), sometimes after a time stamp in brackets.
NCCL_PREFIX = r"(?:\[[\d-]+ [\d:.]+\] )?(?P<host>[A-Za-z0-9_][\w.-]*):(?P<pid>\d+):(?P<tid>\d+) \[(?P<dev>\d+)\] "
_NCCL = regex.compile(rf"^{NCCL_PREFIX}(?:[\w./]+:\d+ (?:\(\w+\) )?)?NCCL (?P<level>INFO|WARN|TRACE|ABORT)")
#: The same prefix where any line of a block starts, behind a launcher's ``(Worker pid=…)`` if there is one.
_NCCL_LINE = regex.compile(rf"(?m)^(?:\([^)\n]*\) ?)?{NCCL_PREFIX}")
_VLLM = regex.compile(
    r"^(?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL) \d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? "
    r"\[?(?P<file>[\w./-]+\.py):\d+\]? "
)
_SGLANG = regex.compile(r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?P<tags>(?: (?:DP|PP|TP|EP|CP)\d+)*)\] ")
_RAY_PY = regex.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}\t(?P<level>[A-Z]+) [\w.]+\.py:\d+ -- ")
_RAY_CPP = regex.compile(r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} (?P<level>[IWEF]) \d+ \d+\] ")
_TORCH_CPP = regex.compile(r"^\[rank(?P<rank>\d+)\]:\[(?P<level>[IWEF])")
_UVICORN = regex.compile(r"^(?P<level>INFO|WARNING|ERROR|CRITICAL|DEBUG):\s{2,}")
_TRACEBACK = regex.compile(
    r"^(?:Traceback \(most recent call last\)|\s+File \""
    r"|\s*(?:[\w.]+\.)?\w*(?:Error|Exception|Interrupt|Exit)\b(?::|$))"
)
_TP_TAG = regex.compile(r"TP(\d+)")
_CPP_LEVELS = {"I": "INFO", "W": "WARNING", "E": "ERROR", "F": "FATAL"}

_RAY_WORDS = ("Local node IP", "Ray runtime started", "ray start", "Autoscaler status", "GCS", "raylet", "Ray cluster")
_DOCKER_WORDS = ("docker:", "Error response from daemon", "nvidia-container-cli", "Unable to find image", "OCI runtime")
_CUDA_WORDS = ("CUDA error", "CUDA driver", "cuda runtime", "no kernel image", "CUDA capability", "CUDA-capable")
_TORCH_WORDS = (
    "ProcessGroupNCCL",
    "torch.distributed",
    "TCPStore",
    "c10d",
    "Watchdog caught",
    "DistBackendError",
    "DistStoreError",
    "DistNetworkError",
    "ProcessGroupGloo",
    "Gloo connectFullMesh",
)


def classify(line: str) -> Classification:
    """Classify one line (already decoded and free of escape sequences)."""
    outer = _PROC_PREFIX.match(line)
    if outer is None or not (outer.group("pid") or outer.group("ip")):
        return _classify_body(line, "", None, None)
    proc, ip = outer.group("proc") or "", outer.group("ip")
    pid = int(outer.group("pid")) if outer.group("pid") else None
    inner = _classify_body(line[outer.end() :], proc, pid, ip)
    if inner.program == "other" and not ip:
        # vLLM's child-process prefix in front of something unrecognised (a traceback, a print).
        return Classification("vllm", f"vllm:{proc}", process=proc, rank=_rank_from_tag(proc), pid=pid)
    return inner


def _classify_body(body: str, proc: str, pid: int | None, node: str | None) -> Classification:
    m = _NCCL.match(body)
    if m is not None:
        return Classification(
            "nccl", "nccl", m.group("level"), proc or "nccl", None, node or m.group("host"), int(m.group("pid"))
        )
    if body.startswith("NCCL version"):
        return Classification("nccl", "nccl", "INFO", proc, None, node, pid)
    m = _VLLM.match(body)
    if m is not None:
        rank = _rank_from_tag(proc)
        return Classification("vllm", f"vllm:{proc}" if proc else "vllm", m.group("level"), proc, rank, node, pid)
    m = _SGLANG.match(body)
    if m is not None:
        tags = m.group("tags").strip()
        return Classification(
            "sglang", f"sglang:{tags}" if tags else "sglang", "", tags, _rank_from_tag(tags), node, pid
        )
    m = _RAY_PY.match(body)
    if m is not None:
        return Classification("ray", "ray-python", m.group("level"), proc, None, node, pid)
    m = _RAY_CPP.match(body)
    if m is not None:
        return Classification("ray", "ray-cpp", _CPP_LEVELS[m.group("level")], proc, None, node, pid)
    m = _TORCH_CPP.match(body)
    if m is not None:
        return Classification("torch", "c10d", _CPP_LEVELS[m.group("level")], proc, int(m.group("rank")), node, pid)
    m = _UVICORN.match(body)
    if m is not None:
        return Classification("uvicorn", "uvicorn", m.group("level"), proc, None, node, pid)
    if any(w in body for w in _TORCH_WORDS):
        return Classification("torch", "c10d", "", proc, None, node, pid)
    if any(w in body for w in _DOCKER_WORDS):
        return Classification("docker", "docker", "ERROR" if "rror" in body else "", proc, None, node, pid)
    if any(w in body for w in _CUDA_WORDS):
        return Classification("cuda", "cuda", "", proc, None, node, pid)
    if "transformers" in body:
        return Classification("transformers", "transformers", "", proc, None, node, pid)
    if _TRACEBACK.match(body):
        return Classification("python", "python", "ERROR" if "Error" in body else "", proc, None, node, pid)
    if any(w in body for w in _RAY_WORDS) or proc.startswith("Ray") or node is not None:
        return Classification("ray", "ray", "", proc, None, node, pid)
    return Classification("other", "other", "", proc, None, node, pid)


def nccl_hosts(text: str) -> list[str]:
    """The hosts named by the NCCL lines of a block of lines, in order (repeats included)."""
    return [m.group("host") for m in _NCCL_LINE.finditer(text)]


def node_in(text: str) -> str | None:
    """The node a block of lines comes from, where its NCCL lines name it."""
    hosts = nccl_hosts(text)
    return hosts[0] if hosts else None


def _rank_from_tag(tag: str) -> int | None:
    m = _TP_TAG.search(tag)
    return int(m.group(1)) if m else None
