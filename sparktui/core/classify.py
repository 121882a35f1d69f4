"""Which program, layer, node, process and rank a log line comes from, at what level, and when.

A line first loses what launchers, collectors and people put around it (``diagnostics/formats/prefixes.toml``:
Ray's and vLLM's process prefixes, torchrun's ranks, mpirun's tags, docker compose's services, kubectl's
pods, journald, time stamps, a paste's quote markers) and keeps what they say (the node, the rank, the
process, when, how many identical lines Ray folded into one). Then the first program format that applies
(``diagnostics/formats/programs.toml``: NCCL's ``host:pid:tid [dev]``, vLLM's and uvicorn's levels, SGLang's
bracketed time and tags, Ray's Python and C++ formats, PyTorch's glog format, a Python traceback, and words
for the rest) says which program wrote it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import regex

from sparktui.core.formats import Format, Prefix, load_prefixes, load_programs

PREFIXES = load_prefixes()
_PROGRAMS = load_programs()
#: The formats of the programs' own lines, in the order they are tried.
FORMATS = _PROGRAMS.formats
#: Every program a line may be filed under, with the cockpit pane that shows its lines.
PANES = _PROGRAMS.panes
PROGRAMS = tuple(PANES)


@dataclass(frozen=True, slots=True)
class Classification:
    """What a line is: ``program`` is one of :data:`PROGRAMS`; ``layer`` refines it (``ray-cpp``,
    ``vllm:Worker_TP1``); ``node``, ``pid`` and ``rank`` are set only when the line itself says them;
    ``repeated`` is how many identical lines it stands for (Ray folds repeats from several workers into
    one); ``time`` is when it was written, in seconds within its year, when the line says it; ``relayed``
    when the node was named by a prefix another program added (Ray's ``ip=``, compose, kubectl, pdsh,
    journald), not by the program that wrote the line: such a log often carries several nodes' lines;
    ``file`` the source file the program's logger names (vLLM's ``[weight_utils.py:427]``), where it does."""

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
    file: str = ""


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
#: (``NCCL_HOSTID`` where set; ``<name>`` where a reporter masked it), sometimes after a time stamp in brackets:
#: the start of the ``nccl`` format of programs.toml, used here to find NCCL's lines in a block at once (a test
#: checks they agree).
NCCL_PREFIX = (
    r"(?:\[[\d-]+ [\d:.]+\] )?(?P<host>[A-Za-z0-9_][\w.-]*|<[\w.-]+>):(?P<pid>\d+):(?P<tid>\d+) \[(?P<dev>\d+)\] "
)
#: The prefix where any line of a block starts, behind a launcher's ``(Worker pid=…)`` if there is one.
#: A line that begins with NCCL's own ``host:pid:tid [dev]``, the host starting with a letter: no prefix of
#: prefixes.toml can take anything off it (each begins with blanks, a bracket, a quote mark, a digit, a month
#: name and a blank, or a name followed by `` |`` or ``: ``), so peeling is skipped; tests check it agrees.
BARE_NCCL = regex.compile(r"[A-Za-z_][\w.-]*:\d+:\d+ \[\d+\] ")
_NCCL_LINE = regex.compile(rf"(?m)^(?:\([^)\n]*\) ?)?{NCCL_PREFIX}")
_OWN_NCCL_LINE = regex.compile(rf"(?m)^{NCCL_PREFIX}")  # not through Ray's prefix (another node's, maybe)
_TP_TAG = regex.compile(r"TP ?(\d+)")
_MONTHS = {
    m: i for i, m in enumerate(["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"], 1)
}


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

    def other(self) -> Classification:
        """A line no format knows, with what its prefixes said."""
        return Classification(
            "other",
            "other",
            "",
            self.proc,
            self.rank,
            self.node,
            self.pid,
            self.repeated,
            self.time,
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
    found = _format(body, said)
    if found is None:
        return said.other()
    return _made(found[0], body, said, found[1])


def _format(body: str, said: _Said) -> tuple[Format, regex.Match[str] | None] | None:
    """The first format that applies to a line stripped of its prefixes, and its match if it has a pattern."""
    for fmt in FORMATS:
        if fmt.pattern is not None:
            m = fmt.pattern.match(body.lstrip() if fmt.stripped else body)
            if m is not None:
                return fmt, m
        elif fmt.words is not None and fmt.words.search(body):
            return fmt, None
        if fmt.prefixed and any(_PREFIXED[condition](said) for condition in fmt.prefixed):
            return fmt, None
    return None


def format_of(line: str) -> Format | None:
    """The program format that classifies ``line`` (what ``catalogue test`` checks the examples with)."""
    said = _Said()
    found = _format(_peel(line, said), said)
    return found[0] if found is not None else None


#: What each condition of a format's ``prefixed`` asks of a line's prefixes.
_PREFIXED: dict[str, Callable[[_Said], bool]] = {
    "ray-process": lambda said: said.proc.startswith("Ray"),
    "through-ray": lambda said: said.ray,
    "process-with-pid": lambda said: bool(said.proc) and said.pid is not None,
}


def _made(fmt: Format, body: str, said: _Said, m: regex.Match[str] | None) -> Classification:
    found = m.groupdict() if m is not None else {}
    level = found.get("level")
    if level:
        level = fmt.levels.get(level, level)
    elif fmt.error_if and fmt.error_if in body:
        level = "ERROR"
    else:
        level = fmt.level
    layer, process, rank = fmt.layer, said.proc or fmt.process, said.rank
    if fmt.tagged:
        tag = (found.get("tags") or "").strip() if "tags" in found else said.proc
        if tag:
            layer, process = f"{fmt.layer}:{tag}", tag
            rank = _rank_from_tag(tag) if _rank_from_tag(tag) is not None else said.rank
    time = _time(found) if found.get("second") is not None else None
    pid = found.get("pid")
    return Classification(
        fmt.program,
        layer,
        level,
        process,
        rank,
        said.node or found.get("host"),
        int(pid) if pid else said.pid,
        said.repeated,
        time if time is not None else said.time,
        said.node is not None,
        found.get("file") or "",
    )


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
