"""Which program, layer, node, process and rank a log line comes from, at what level, and when.

A line first loses what launchers, collectors and people put around it (``diagnostics/formats/prefixes.toml``:
Ray's and vLLM's process prefixes, torchrun's ranks, mpirun's tags, docker compose's services, kubectl's
pods, journald, time stamps, a paste's quote markers) and keeps what they say (the node, the rank, the
process, when, how many identical lines Ray folded into one). Then its own prefix says which program wrote
it (``reference/signatures-from-source.md`` §0.1): NCCL's ``host:pid:tid [dev]`` (with or without the word
NCCL, which versions before 2.10 leave out), vLLM's and uvicorn's levels, SGLang's bracketed time and tags,
Ray's Python and C++ formats, PyTorch's glog format, a Python traceback; and a few words tell the rest.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import regex

from sparktui.core import tomlfile
from sparktui.core.dirs import builtin
from sparktui.core.errors import Invalid
from sparktui.core.tomlfile import Table

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
    ``vllm:Worker_TP1``); ``node``, ``pid`` and ``rank`` are set only when the line itself says them;
    ``repeated`` is how many identical lines it stands for (Ray folds repeats from several workers into
    one); ``time`` is when it was written, in seconds within its year, when the line says it; ``relayed``
    when the node was named by a prefix another program added (Ray's ``ip=``, compose, kubectl, pdsh,
    journald), not by the program that wrote the line: such a log often carries several nodes' lines."""

    program: str
    layer: str
    level: str = ""
    process: str = ""
    rank: int | None = None
    node: str | None = None
    pid: int | None = None
    repeated: int = 1
    time: float | None = None
    relayed: bool = False


@dataclass(frozen=True, slots=True)
class Prefix:
    """One kind of prefix (``diagnostics/formats/prefixes.toml``) and the examples it is checked against."""

    id: str
    pattern: regex.Pattern[str]
    needs_any: tuple[str, ...] = ()
    examples: tuple[dict[str, str], ...] = ()


class PrefixError(Invalid):
    """A prefix file that cannot be used; the message is one line naming the file and the key."""


def load_prefixes(path: Path | None = None) -> tuple[Prefix, ...]:
    """The prefixes of ``path`` (``diagnostics/formats/prefixes.toml``), in the order they are tried, each
    key checked as every catalogue file's are."""
    path = path or builtin("diagnostics") / "formats" / "prefixes.toml"
    doc = Table(
        tomlfile.read(path, lambda reason: PrefixError(f"{path}: {reason}")),
        lambda key, reason: PrefixError(f"{path}: {key}: {reason}"),
    )
    doc.known(("prefixes",))
    found = []
    for prefix in doc.tables("prefixes"):
        prefix.known(("id", "what", "pattern", "requires", "examples"))
        prefix.text("what")
        try:
            pattern = regex.compile(prefix.text("pattern"))
        except regex.error as exc:
            raise prefix.fail("pattern", f"not a regular expression: {exc}") from None
        examples = tuple(dict(example.data) for example in prefix.tables("examples", required=False))
        found.append(Prefix(prefix.text("id"), pattern, tuple(prefix.texts("requires", required=False)), examples))
    return tuple(found)


PREFIXES = load_prefixes()
#: Every prefix at once, only to tell whether any can match the start of a line: most lines have none, and
#: one alternation says so in a third of the time that trying each prefix takes.
_ANY_PREFIX = regex.compile("|".join(f"(?:{p.pattern.pattern})" for p in PREFIXES))
#: Ray's de-duplication: one line stands for several identical ones from other workers.
#: Ray's repeat marker, and after the first one of a session its note on de-duplication (ray_logging's
#: ``_warn_once``): ``[repeated 7x across cluster] (Ray deduplicates logs by default. ... for more options.)``
_REPEATED = regex.compile(
    r" \[repeated (?P<repeated>\d+)x across cluster\](?: \(Ray deduplicates logs by default\.[^)]*\))?\s*$"
)
_REPEATED_ENDS = ("across cluster]", "for more options.)")
#: The most prefixes peeled from one line (a line of prefixes only stops there).
_MAX_PEELS = 8

#: What NCCL writes before each of its lines: ``host:pid:tid [cudaDev]``, the host as the process saw it
#: (``NCCL_HOSTID`` where set), sometimes after a time stamp in brackets.
NCCL_PREFIX = r"(?:\[[\d-]+ [\d:.]+\] )?(?P<host>[A-Za-z0-9_][\w.-]*):(?P<pid>\d+):(?P<tid>\d+) \[(?P<dev>\d+)\] "
_NCCL = regex.compile(
    rf"^{NCCL_PREFIX}(?:[\w./]+:\d+ (?:\(\w+\) )?)?(?:NCCL )?(?P<level>INFO|WARN|TRACE|ABORT)\b"
    rf"|^{NCCL_PREFIX}[\w./]+\.(?:cc|cu|h):\d+ -> \d+"  # the trace of an error: which call returned which code
)
#: The prefix where any line of a block starts, behind a launcher's ``(Worker pid=…)`` if there is one.
#: A line that begins with NCCL's own ``host:pid:tid [dev]``, the host starting with a letter: no prefix of
#: prefixes.toml can take anything off it (each begins with blanks, a bracket, a quote mark, a digit, a month
#: name and a blank, or a name followed by `` |`` or ``: ``), so peeling is skipped; tests check it agrees.
BARE_NCCL = regex.compile(r"[A-Za-z_][\w.-]*:\d+:\d+ \[\d+\] ")
_NCCL_LINE = regex.compile(rf"(?m)^(?:\([^)\n]*\) ?)?{NCCL_PREFIX}")
_OWN_NCCL_LINE = regex.compile(rf"(?m)^{NCCL_PREFIX}")  # not through Ray's prefix (another node's, maybe)
_VLLM = regex.compile(
    r"^(?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL) (?P<month>\d\d)-(?P<day>\d\d) "
    r"(?P<hour>\d\d):(?P<minute>\d\d):(?P<second>\d\d)(?P<fraction>\.\d+)? \[?(?P<file>[\w./-]+\.py):\d+\]? "
)
_SGLANG = regex.compile(
    r"^\[\d{4}-(?P<month>\d\d)-(?P<day>\d\d) (?P<hour>\d\d):(?P<minute>\d\d):(?P<second>\d\d)"
    r"(?P<tags>(?: (?:DP|PP|TP|EP|CP)\d+)*)\] "
)
_RAY_PY = regex.compile(
    r"^\d{4}-(?P<month>\d\d)-(?P<day>\d\d) (?P<hour>\d\d):(?P<minute>\d\d):(?P<second>\d\d)(?P<fraction>,\d{3})\t"
    r"(?P<level>[A-Z]+) [\w.]+\.py:\d+ -- "
)
_RAY_CPP = regex.compile(
    r"^\[\d{4}-(?P<month>\d\d)-(?P<day>\d\d) (?P<hour>\d\d):(?P<minute>\d\d):(?P<second>\d\d)(?P<fraction>,\d{3}) "
    r"(?P<level>[IWEF]) \d+ \d+\] "
)
_GLOG = regex.compile(
    r"^\[(?P<level>[IWEF])(?P<month>\d\d)(?P<day>\d\d) (?P<hour>\d\d):(?P<minute>\d\d):(?P<second>\d\d)"
    r"(?P<fraction>\.\d+)?[^\]]*\] "
)
_UVICORN = regex.compile(r"^(?P<level>INFO|WARNING|ERROR|CRITICAL|DEBUG):\s{2,}")
#: Formats that say a level (and often a time) at the start: (pattern, program, layer).
_PY_LOGGING = regex.compile(
    r"^(?:\d{4}-(?P<month>\d\d)-(?P<day>\d\d) (?P<hour>\d\d):(?P<minute>\d\d):(?P<second>\d\d)(?P<fraction>,\d{3})? "
    r"(?:- )?[\w.]+ - )?(?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL) (?:- )?"
)
_TRACEBACK = regex.compile(
    r"^(?:Traceback \(most recent call last\)|File \"|[\w.]*(?:Error|Exception|Interrupt|Exit)\b(?::|$))"
)
_LEVELLED = (
    (_RAY_PY, "ray", "ray-python"),
    (_RAY_CPP, "ray", "ray-cpp"),
    (_GLOG, "torch", "c10d"),
    (_UVICORN, "uvicorn", "uvicorn"),
)
_TP_TAG = regex.compile(r"TP ?(\d+)")
_CPP_LEVELS = {"I": "INFO", "W": "WARNING", "E": "ERROR", "F": "FATAL"}
_MONTHS = {
    m: i for i, m in enumerate(["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"], 1)
}

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
#: Each list of words as one search (a line is looked for each word in one pass, not one pass a word).
_TORCH, _DOCKER, _CUDA, _RAY = (
    re.compile("|".join(map(re.escape, words))) for words in (_TORCH_WORDS, _DOCKER_WORDS, _CUDA_WORDS, _RAY_WORDS)
)


@dataclass(slots=True)
class _Said:
    """What the prefixes of a line said."""

    node: str | None = None
    rank: int | None = None
    pid: int | None = None
    proc: str = ""
    repeated: int = 1
    time: float | None = None
    ray: bool = False  # Ray's worker prefix (with ip=): the line reached the log through Ray

    def made(
        self,
        program: str,
        layer: str,
        level: str = "",
        *,
        proc: str | None = None,
        rank: int | None = None,
        time: float | None = None,
    ) -> Classification:
        return Classification(
            program,
            layer,
            level,
            self.proc if proc is None else proc,
            rank if rank is not None else self.rank,
            self.node,
            self.pid,
            self.repeated,
            time if time is not None else self.time,
            self.node is not None,
        )


def classify(line: str) -> Classification:
    """Classify one line (already decoded and free of escape sequences)."""
    bare = BARE_NCCL.match(line)
    if bare is not None and not line.endswith("across cluster]"):
        # Most lines of a big log; none of the prefixes starts like this. An INFO line's classification is
        # its process's (host, pid) and level only, so it is made once per process: the key is ``host:pid``
        # (a host name holds no colon), not the thread or device after it, which would multiply the entries.
        if not line.startswith("NCCL INFO ", bare.end()):
            return _program(line, _Said())
        head = line[: line.find(":", line.find(":") + 1)]
        known = _BARE_INFO.get(head)
        if known is None:
            if len(_BARE_INFO) >= _BARE_INFO_MAX:
                _BARE_INFO.clear()
            known = _BARE_INFO[head] = _program(line, _Said())
        return known
    said = _Said()
    body = _peel(line, said)
    return _program(body, said)


#: The classification of a plain NCCL INFO line by the ``host:pid`` of its prefix (see :func:`classify`); it is
#: emptied when full (a few hundred bytes an entry; a cluster's log of restarts holds thousands of processes).
_BARE_INFO: dict[str, Classification] = {}
_BARE_INFO_MAX = 32768


def peeled_by(line: str) -> list[Prefix]:
    """The prefixes taken off ``line``, in order (what ``catalogue test`` checks the examples with)."""
    taken: list[Prefix] = []
    _peel(line, _Said(), taken)
    return taken


def _peel(line: str, said: _Said, taken: list[Prefix] | None = None) -> str:
    if line.endswith(_REPEATED_ENDS):
        m = _REPEATED.search(line)
        if m is not None:
            said.repeated = int(m.group("repeated"))
            line = line[: m.start()]
    for _ in range(_MAX_PEELS):
        if _ANY_PREFIX.match(line) is None:
            return line
        for prefix in PREFIXES:
            m = prefix.pattern.match(line)
            if m is None or not m.end() or (prefix.needs_any and not any(m.group(g) for g in prefix.needs_any)):
                continue
            _learn(m, said)
            if taken is not None:
                taken.append(prefix)
            line = line[m.end() :]
            break
        else:
            return line
    return line


def _learn(m: regex.Match[str], said: _Said) -> None:
    found = m.groupdict()
    if found.get("node"):
        said.node = found["node"]
    if found.get("ip"):
        said.node, said.ray = found["ip"], True
    if found.get("rank"):
        said.rank = int(found["rank"])
    if found.get("pid"):
        said.pid = int(found["pid"])
    if found.get("proc"):
        said.proc = found["proc"]
    if found.get("second") is not None:
        said.time = _time(found)


def _time(found: dict[str, str | None]) -> float | None:
    """Seconds within the year of a time a line gives (the year itself is left out: some formats do not
    give it, and the lines of one incident are compared with each other)."""
    month = _MONTHS.get(found.get("monthname") or "") or int(found.get("month") or 0)
    if not month or found.get("day") is None:
        return None
    fraction = float((found.get("fraction") or "0").replace(",", ".") or 0)
    return (
        (month * 31 + int(found["day"] or 0)) * 86400
        + int(found["hour"] or 0) * 3600
        + int(found["minute"] or 0) * 60
        + int(found["second"] or 0)
        + fraction
    )


def _program(body: str, said: _Said) -> Classification:
    m = _NCCL.match(body)
    if m is not None:
        host, pid = m.group("host"), int(m.group("pid"))
        return Classification(
            "nccl",
            "nccl",
            m.group("level") or "WARN",
            said.proc or "nccl",
            said.rank,
            said.node or host,
            pid,
            said.repeated,
            said.time,
            said.node is not None,
        )
    if body.startswith("NCCL version"):
        return said.made("nccl", "nccl", "INFO")
    m = _VLLM.match(body)
    if m is not None:
        layer = f"vllm:{said.proc}" if said.proc else "vllm"
        return said.made("vllm", layer, m.group("level"), rank=_rank_from_tag(said.proc), time=_time(m.groupdict()))
    m = _SGLANG.match(body)
    if m is not None:
        tags = m.group("tags").strip()
        layer = f"sglang:{tags}" if tags else "sglang"
        return said.made("sglang", layer, proc=tags or None, rank=_rank_from_tag(tags), time=_time(m.groupdict()))
    for pattern, program, layer in _LEVELLED:
        m = pattern.match(body)
        if m is not None:
            level = m.group("level")
            return said.made(program, layer, _CPP_LEVELS.get(level, level), time=_time(m.groupdict()))
    if _TORCH.search(body):
        return said.made("torch", "c10d")
    if _DOCKER.search(body):
        return said.made("docker", "docker", "ERROR" if "rror" in body else "")
    if _CUDA.search(body):
        return said.made("cuda", "cuda")
    if "transformers" in body:
        return said.made("transformers", "transformers")
    stripped = body.lstrip()
    if _TRACEBACK.match(stripped):
        return said.made("python", "python", "ERROR" if "Error" in body else "")
    if _RAY.search(body) or said.proc.startswith("Ray") or said.ray:
        return said.made("ray", "ray")
    if said.proc and said.pid is not None:
        # vLLM's child-process prefix in front of something unrecognised (a print, a warning).
        return said.made("vllm", f"vllm:{said.proc}", rank=_rank_from_tag(said.proc))
    m = _PY_LOGGING.match(stripped)
    if m is not None:
        return said.made("python", "python", m.group("level"), time=_time(m.groupdict()))
    return said.made("other", "other")


def nccl_hosts(text: str) -> list[str]:
    """The hosts named by the NCCL lines of a block of lines, in order (repeats included)."""
    return [m.group("host") for m in _NCCL_LINE.finditer(text)]


#: Lines of a file's first block looked at to tell a log from notes about a run.
LOG_SAMPLE = 20
#: The characters at the start of a line looked at to tell whether it reads as a log (its prefix, level, time
#: and node are there): a line of megabytes costs no more than a short one.
LOG_HEAD = 1024


def logged(text: str, sample: int = LOG_SAMPLE) -> bool:
    """Whether a block of lines reads as a log: one of its first ``sample`` lines was written by a program
    the classifier knows, or says its level, its time or its node. Lines none of which do (a capture's
    ``key=value`` notes, a README, a list of versions) are notes about a run, not the log of a node."""
    for line in text.split("\n", sample)[:sample]:
        found = classify(line[:LOG_HEAD])
        if found.program != "other" or found.level or found.time is not None or found.node:
            return True
    return False


def node_in(text: str) -> str | None:
    """The node a block of lines comes from, where its own NCCL lines name it (not those Ray relayed)."""
    m = _OWN_NCCL_LINE.search(text)  # the first is enough: a block may be megabytes of NCCL lines
    return m.group("host") if m else None


class NodeLearner:
    """The node of a source's lines, learnt from its blocks as they are read: as declared, else the host its
    own NCCL lines name as soon as one does within its first ``within`` characters, else ``named`` (made from
    its path) where its lines read as a log, and none ("") while every line so far is a note about the run
    (:func:`logged`). A stream's blocks are what has come so far, a line each at times: one block is not
    enough to decide on."""

    def __init__(self, declared: str | None, named: str, *, within: int = 1 << 20) -> None:
        self.node = declared or named
        self._named = named
        self._within = within
        self._looked = within if declared else 0
        self._logged = False

    @property
    def decided(self) -> bool:
        """Whether more blocks can no longer change the node (declared, named by NCCL, or ``within`` read)."""
        return self._looked >= self._within

    def learn(self, block: str) -> str:
        """The node after one more block."""
        if self.decided or not block:
            return self.node
        block = block[: self._within - self._looked]  # never more than its first ``within`` characters in all
        host = node_in(block)
        if host:
            self.node, self._looked = host, self._within
            return self.node
        if not self._logged:
            self._logged = logged(block)
            self.node = self._named if self._logged else ""
        self._looked += len(block)
        return self.node


def _rank_from_tag(tag: str) -> int | None:
    m = _TP_TAG.search(tag)
    return int(m.group(1)) if m else None
