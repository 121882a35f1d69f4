"""Loading and validating the catalogue: signatures (``diagnostics/*.toml``) and stage tracks
(``diagnostics/stages/*.toml``). A signature is of one of three kinds: ``line`` (patterns that match lines),
``stall`` (a unit of a stage track that stopped) or ``metric`` (a server's readings that stand still).

A broken file is rejected with a :class:`CatalogueError` that names the file, the key and the reason, so a
user editing their own signature directory sees exactly what to fix.
"""

from __future__ import annotations

import hashlib
import json
import operator
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field, replace
from enum import Enum
from functools import cache
from pathlib import Path
from typing import Any

import regex

from sparktui.core import dirs, tomlfile
from sparktui.core.classify import PROGRAMS
from sparktui.core.errors import Invalid
from sparktui.core.events import Severity
from sparktui.core.kinds import ID
from sparktui.core.serving.metrics import COUNTERS, GAUGES
from sparktui.core.taxonomy import CATEGORIES
from sparktui.core.tomlfile import Table

SCOPES = ("process", "source", "node", "all")


class CatalogueError(Invalid):
    """A signature or stage file that cannot be used, with where and why."""

    def __init__(self, path: Path | str, key: str, reason: str) -> None:
        self.path, self.key, self.reason = Path(path), key, reason
        super().__init__(f"{path}: {key}: {reason}" if key else f"{path}: {reason}")


@dataclass(frozen=True, slots=True)
class Context:
    """Conditions over the other lines of a scope, decided once the scope has been read."""

    scope: str = "source"
    unless: tuple[str, ...] = ()
    when: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Stall:
    """A failure found from progress: a unit of ``track`` reached one stage and not a later one."""

    track: str
    reached: str
    not_reached: str
    after_completed: bool | None = None  # NCCL: only a later (True) or only a first (False) communicator
    peer_reached: str | None = None
    where: tuple[tuple[str, str], ...] = ()  # facts the unit must have read, with these values (nnodes = "1")


@dataclass(frozen=True, slots=True)
class Differ:
    """A failure found from values every node of a job must share: two nodes printed different values of
    ``fact`` (a fact a stage track reads, called ``label`` in a sentence), among the lines that printed the same
    value of ``within`` where one is named (the same rendezvous: one job, not several read together)."""

    fact: str
    label: str
    within: str = ""


@dataclass(frozen=True, slots=True)
class Metric:
    """A failure found from a server's readings (the lines a metrics source writes, see
    :mod:`sparktui.core.serving.record`): the gauge ``busy`` above zero while the counter ``still`` has not
    moved, in every reading for ``still_for`` seconds."""

    busy: str
    still: str
    still_for: float


@dataclass(frozen=True, slots=True)
class Example:
    """A line (or a log) a signature or track is checked against: the facts it must capture, whether it
    must fire (log examples), and for a track the stage it marks ("" for none)."""

    text: str
    facts: Mapping[str, str] = field(default_factory=dict)
    fires: bool = True
    stage: str = ""
    #: A log example of several nodes: each node's own lines, read as a source of that node (``text`` is "").
    nodes: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class Family:
    """Words that put a failure line the catalogue does not name into a category (see a fallback signature's
    ``[[families]]``): the first family whose ``words`` one is found in the line takes it. ``examples`` are
    lines it must take, ``counter_examples`` lines with near words it must leave."""

    name: str
    category: str
    title: str
    what: str
    words: tuple[str, ...]
    fix: str = ""
    playbooks: tuple[str, ...] = ()
    examples: tuple[str, ...] = ()
    counter_examples: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Signature:
    """One failure the catalogue names (a ``diagnostics/*.toml`` file): how it is matched (lines, a stall or a
    metric), what it means and how to fix it, with the examples it is checked against."""

    id: str
    path: Path
    category: str
    severity: Severity
    title: str
    what: str
    why: str
    fix: str
    references: tuple[str, ...]
    programs: frozenset[str] = frozenset()
    playbooks: tuple[str, ...] = ()
    consequence_of: tuple[str, ...] = ()
    waits_for_peers: bool = False
    lost_peer: bool = False  # a wait for peers that says one was lost (its socket closed), not waited for
    any: tuple[str, ...] = ()
    none: tuple[str, ...] = ()
    context: Context | None = None
    stall: Stall | None = None
    metric: Metric | None = None
    differ: Differ | None = None
    match_examples: tuple[Example, ...] = ()
    no_match_examples: tuple[Example, ...] = ()
    log_examples: tuple[Example, ...] = ()
    #: A fallback signature names what no other signature does: its patterns are the shapes of any failure
    #: line (an exception, an ERROR line, a signal), a line another signature hits is not its hit, and its
    #: ``families`` sort the lines it takes into categories. Each family is a signature of its own in the
    #: catalogue (``<id>-<family>``, with ``family_of`` naming this one), so that its findings are told apart.
    fallback: bool = False
    families: tuple[Family, ...] = ()
    family_of: str = ""
    #: A fallback signature takes no more hits in a source after a line of one of these (an orderly shutdown
    #: began: what fails after it fails because of it).
    quiet_after: tuple[str, ...] = ()
    #: A fallback signature's reading of what it takes: the levels at which a program says a line is no
    #: failure of its own (``match.calm``: a failure's shape on such a line is a note); what Python prints
    #: between the exceptions of a chain (``traceback.chain``); a traceback's frame line, with the groups
    #: ``file``, ``line`` and ``func`` (``traceback.frame``); the exit statuses that only report what the
    #: process printed before them (``exit.reports``: ``positive``, or a status such as ``-15``).
    calm: frozenset[str] = frozenset()
    chain: tuple[str, ...] = ()
    frame: str = ""
    exit_reports: tuple[str, ...] = ()
    #: The releases ("vllm 0.11.0") whose own messages the match examples were checked against (written by
    #: tools/messages/stamp.py from the message tables; documentation, never used to match).
    checked: tuple[str, ...] = ()
    #: A user's file says it stands in for the built-in signature of its id (without it, such a file is
    #: left out: see :mod:`sparktui.core.analysis.userfiles`).
    replaces: bool = False

    @property
    def kind(self) -> str:
        if self.stall is not None:
            return "stall"
        if self.metric is not None:
            return "metric"
        return "differ" if self.differ is not None else "line"

    @property
    def explanation(self) -> str:
        return " ".join(part for part in (self.what, self.why, self.fix) if part)


#: Seconds a metric signature's readings must stand still, unless it says otherwise: vLLM's own stats line goes
#: quiet after two 10 s intervals without a token, so a third is past any pause of a working engine.
STILL_FOR = 30.0
#: How long a unit may sit at a stage without progress before a live source counts it as stuck, unless the
#: track or the stage says otherwise.
STUCK_AFTER = 60.0


@dataclass(frozen=True, slots=True)
class StageDef:
    """One stage of a track. ``opens``: its line may begin a unit. ``process_level``: it happens once per
    process (it begins a unit only for a process not seen before). ``once_done``: the stage the same line
    marks when it comes after the unit is done (NCCL connects channels during init, or since 2.22 at a
    communicator's first collective). ``stuck_after``: seconds without progress after reaching it before a
    live unit counts as stuck. ``settled``: nothing after it waits for other ranks, so a finished log that
    stops there shows no stall unless something else says it was stuck. ``short``: its name in a grid cell."""

    id: str
    label: str
    any: tuple[str, ...]
    opens: bool = True
    process_level: bool = False
    once_done: str = ""
    stuck_after: float = STUCK_AFTER
    settled: bool = False
    short: str = ""  # a word or two for a grid cell; the label where not given

    @property
    def brief(self) -> str:
        return self.short or self.label


#: How a track counts the things that progress through it: one per communicator of a process, one per rank
#: (a rank's tag on its node), or one per node.
UNITS = ("communicator", "rank", "node")


@dataclass(frozen=True, slots=True)
class Track:
    """An ordered ladder of start-up stages of one program (``nccl``, ``vllm``, ``sglang``, ``ray``).

    ``unit`` says what progresses on its own. A track of communicators also names, as facts captured by its
    stage patterns, the ``key`` that tells one communicator of a process from another (its pointer), the
    ``group`` that ties one communicator's units on every rank together (its commId, written ``group_label``
    in messages), and the stage ``done`` at which a unit is ready. A communicator split from another names
    its ``parent`` (the parent's key) and the ``split`` facts that, with the parent's group, tie it across
    ranks when its own lines carry no group. A unit begins at its first visible line, whatever its stage.
    """

    id: str
    label: str
    programs: frozenset[str]
    stages: tuple[StageDef, ...]
    path: Path
    unit: str = "rank"
    key: str = ""
    group: str = ""
    group_label: str = ""
    done: str = ""
    parent: str = ""
    split: tuple[str, ...] = ()
    examples: tuple[Example, ...] = ()
    #: A user's file says it stands in for the built-in track of its id (as a signature's ``replaces``).
    replaces: bool = False
    #: Each stage's place by its id, and the facts that file a unit under its peer group and rank (the
    #: stage tracker asks both for every marker).
    places: dict[str, int] = field(init=False, repr=False, compare=False)
    filing: frozenset[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "places", {stage.id: i for i, stage in reversed(list(enumerate(self.stages)))})
        names = (self.group, self.parent, *self.split, "rank", "nranks")
        object.__setattr__(self, "filing", frozenset(n for n in names if n))

    def index(self, stage_id: str) -> int:
        return self.places[stage_id]


#: What an advisory may be about: the component in words, and the fact of a stage track or signature that
#: holds a version its logs print ("" where the logs print none the catalogue reads).
COMPONENTS: dict[str, tuple[str, str]] = {
    "nccl": ("NCCL", "nccl_version"),
    "torch": ("PyTorch", ""),
    "vllm": ("vLLM", "vllm_version"),
    "sglang": ("SGLang", ""),
    "ray": ("Ray", ""),
    "driver": ("the NVIDIA driver", ""),
    "kernel": ("the kernel", ""),
    "systemd": ("systemd", ""),
}
_BOUND = regex.compile(r"\s*(==|!=|>=|<=|>|<)\s*(\d+(?:[.\-]\d+)*)\s*")


def version_ranges(spec: str) -> list[list[tuple[str, tuple[int, ...]]]]:
    """Version ranges (``>= 2.30.4, <= 2.30.7; == 2.21.5``: ``;`` between ranges, ``,`` between the bounds of
    one) as (operator, numbers) per bound. Raises ValueError for a bound it cannot read."""
    found = []
    for part in spec.split(";"):
        bounds = []
        for bound in part.split(","):
            m = _BOUND.fullmatch(bound)
            if m is None:
                raise ValueError(f"{bound.strip()!r} is not a version bound (such as >= 2.30.4 or == 7.0.0-1019)")
            bounds.append((m[1], tuple(int(n) for n in regex.findall(r"\d+", m[2]))))
        found.append(bounds)
    return found


_HOLDS = {
    "==": operator.eq,
    "!=": operator.ne,
    ">=": operator.ge,
    "<=": operator.le,
    ">": operator.gt,
    "<": operator.lt,
}


def in_ranges(version: str, spec: str) -> bool | None:
    """Whether ``version`` lies in one of the ranges ``spec``; each bound compares as many numbers as it gives
    (``== 2.28.9`` holds for 2.28.9+cuda13.0, ``< 2.11`` for 2.10.1, ``== 7.0.0-1019`` for 7.0.0-1019-nvidia).
    False for "" (not installed); None for text that does not start with a number."""
    text = version.strip().lstrip("v")
    if not text:
        return False
    if not text[0].isdigit():
        return None
    numbers = tuple(int(n) for n in regex.findall(r"\d+", text))
    return any(all(_HOLDS[op](numbers[: len(bound)], bound) for op, bound in bounds) for bounds in version_ranges(spec))


@dataclass(frozen=True, slots=True)
class Advisory:
    """A release known to go wrong (``diagnostics/advisories/*.toml``): its component and the versions
    affected, the condition (an expression over the pre-launch facts, and in words), what goes wrong, the
    fix, where it was reported and when, the runtime findings (signature ids) whose symptom it is, and its
    examples (read by :mod:`sparktui.core.inventory.rules`, which checks it before launch)."""

    id: str
    path: Path
    component: str
    affected: str
    verdict: str
    category: str
    title: str
    symptom: str
    fix: str
    source: str
    date: str
    fixed: str = ""
    condition: str = ""
    applies: str = ""
    signatures: tuple[str, ...] = ()
    examples: tuple[Mapping[str, Any], ...] = ()  # each [[examples]] table as read (plain data: it pickles)

    @property
    def label(self) -> str:
        return COMPONENTS[self.component][0]

    @property
    def log_fact(self) -> str:
        return COMPONENTS[self.component][1]

    def covers(self, version: str) -> bool:
        """Whether ``version`` (as a program printed it) lies in the affected ranges."""
        return in_ranges(version, self.affected) is True


def load_advisory(path: Path) -> Advisory:
    doc = _reader(path, _read_toml(path))
    doc.known(
        (
            *("id", "category", "verdict", "title", "component", "affected", "fixed", "condition", "applies"),
            *("symptom", "fix", "source", "date", "signatures", "examples"),
        )
    )
    advisory_id = doc.text("id")
    if advisory_id != path.stem or not ID.match(advisory_id):
        raise doc.fail("id", f"must be lower-case-with-dashes and equal the file name ({path.stem})")
    if doc.text("category") not in CATEGORIES:
        raise doc.fail("category", f"unknown category {doc.data['category']!r} (see diagnostics/taxonomy.md)")
    try:
        version_ranges(doc.text("affected"))
    except ValueError as exc:
        raise doc.fail("affected", str(exc)) from None
    if not doc.text("source").startswith("https://"):
        raise doc.fail("source", "a https:// link to where it was reported or fixed")
    if not regex.fullmatch(r"\d{4}-\d{2}-\d{2}", doc.text("date")):
        raise doc.fail("date", "the source's date, YYYY-MM-DD")
    words = {key: doc.text(key, required=key in ("symptom", "fix")) for key in ("symptom", "fix", "fixed", "applies")}
    for key, text in words.items():
        if "{" in text or "}" in text:
            raise doc.fail(key, "no braces: the words go into a finding's detail, where braces mark facts")
    condition = doc.text("condition", required=False)
    if bool(condition) != bool(words["applies"]):
        raise doc.fail("applies", "a condition needs its words in applies (and applies a condition)")
    return Advisory(
        advisory_id,
        path,
        doc.choice("component", tuple(COMPONENTS)),
        doc.text("affected"),
        doc.choice("verdict", ("block", "slow", "advice")),
        doc.text("category"),
        doc.text("title"),
        words["symptom"],
        words["fix"],
        doc.text("source"),
        doc.text("date"),
        words["fixed"],
        condition,
        words["applies"],
        tuple(doc.texts("signatures", required=False)),
        tuple(dict(t.data) for t in doc.tables("examples")),
    )


@dataclass(frozen=True, slots=True)
class Catalogue:
    """Signatures, stage tracks and advisories; ``refused``: one line for each of the user's files left out,
    and for each that replaces a built-in one by its leave (``replaces = true``), said as the catalogue loads
    and among a diagnosis' warnings (see :mod:`sparktui.core.analysis.userfiles`)."""

    signatures: tuple[Signature, ...]
    tracks: tuple[Track, ...]
    refused: tuple[str, ...] = ()
    advisories: tuple[Advisory, ...] = ()

    def get(self, signature_id: str) -> Signature:
        for sig in self.signatures:
            if sig.id == signature_id:
                return sig
        raise KeyError(signature_id)

    def track(self, track_id: str) -> Track:
        for track in self.tracks:
            if track.id == track_id:
                return track
        raise KeyError(track_id)


def digest(catalogue: Catalogue) -> str:
    """One SHA-256 (hex) of everything the scan and the correlation take from a catalogue: every signature
    and stage track, in their order, each file named by its name and whether it is built-in, never by the
    folder it lies in. Two machines that loaded the same files agree on it wherever the files lie, and a
    catalogue that differs in one pattern, example or place in the order does not: a scan made elsewhere
    with another catalogue would hand over signature and stage numbers that mean something else here."""

    def plain(value: object) -> object:
        if isinstance(value, Path):
            return [is_builtin(value), value.parent.name == "stages", value.name]
        if isinstance(value, set | frozenset):
            return sorted(value)
        if isinstance(value, Enum):
            return value.value
        raise TypeError(f"{type(value).__name__} in a catalogue")

    whole = {"signatures": [asdict(s) for s in catalogue.signatures], "tracks": [asdict(t) for t in catalogue.tracks]}
    text = json.dumps(whole, sort_keys=True, default=plain, ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


@cache
def builtin_dir() -> Path:
    """The catalogue shipped with sparktui (the ``diagnostics/`` folder of the checkout or the install)."""
    return dirs.builtin("diagnostics")


def is_builtin(path: Path) -> bool:
    """Whether a signature or stage track file is the shipped catalogue's, whose patterns the tests check,
    rather than the user's, however the path is written (``diagnostics/x.toml`` from the checkout is one)."""
    home = builtin_dir()
    if path.parent == home or path.parent == home / "stages":
        return True
    folder = path.parent.resolve()
    return folder == home.resolve() or folder == (home / "stages").resolve()


def load(extra_dirs: Iterable[Path] = (), *, builtin: bool = True) -> Catalogue:
    """Load the built-in catalogue plus ``extra_dirs``; a signature id in a later folder replaces an
    earlier one of the same id. Whether a user's file may replace a built-in one (it must say
    ``replaces = true``) is for :func:`sparktui.core.analysis.userfiles.load` to judge: a shipment's files
    (:mod:`sparktui.core.edge.shipment`) were judged before they left."""
    dirs = ([builtin_dir()] if builtin else []) + [Path(d) for d in extra_dirs]
    signatures: dict[str, Signature] = {}
    tracks: dict[str, Track] = {}
    advisories: dict[str, Advisory] = {}
    for folder in dirs:
        if not folder.is_dir():
            raise CatalogueError(folder, "", "not a directory")
        for path in sorted((folder / "stages").glob("*.toml")):
            track = load_track(path)
            tracks[track.id] = track
        for path in sorted((folder / "advisories").glob("*.toml")):
            advisory = load_advisory(path)
            advisories[advisory.id] = advisory
        for path in sorted(folder.glob("*.toml")):
            sig = load_signature(path)
            signatures[sig.id] = sig
    read = _facts_read(tracks.values())
    for sig in signatures.values():
        if sig.stall is not None:
            _check_stall_refs(sig, tracks, read)
        if sig.differ is not None:
            _check_differ_refs(sig, read)
    return Catalogue(
        tuple(_with_families(signatures.values())), tuple(tracks.values()), advisories=tuple(advisories.values())
    )


def _with_families(signatures: Iterable[Signature]) -> Iterable[Signature]:
    """Every signature, each fallback one followed by one signature per family of it."""
    for sig in signatures:
        yield sig
        for family in sig.families:
            yield replace(
                sig,
                id=f"{sig.id}-{family.name}",
                category=family.category,
                title=family.title,
                what=family.what,
                fix=family.fix or sig.fix,
                playbooks=family.playbooks,
                any=(),
                none=(),
                match_examples=(),
                no_match_examples=(),
                log_examples=(),
                families=(),
                quiet_after=(),
                fallback=False,
                family_of=sig.id,
            )


def load_signature(path: Path) -> Signature:
    doc = _read_toml(path)
    r = _reader(path, doc)
    sig_id = r.text("id")
    if sig_id != path.stem:
        raise CatalogueError(path, "id", f"{sig_id!r} must equal the file name without .toml ({path.stem!r})")
    if not ID.match(sig_id):
        raise CatalogueError(path, "id", "use lower-case letters, digits and single dashes")
    category = r.text("category")
    if category not in CATEGORIES:
        raise CatalogueError(path, "category", f"unknown category {category!r} (see diagnostics/taxonomy.md)")
    try:
        severity = Severity.parse(r.text("severity"))
    except ValueError as exc:
        raise CatalogueError(path, "severity", str(exc)) from None
    programs = frozenset(r.texts("programs", required=False))
    for program in programs:
        if program not in PROGRAMS:
            raise CatalogueError(path, "programs", f"unknown program {program!r} (one of {', '.join(PROGRAMS)})")
    if r.flag("lost_peer", default=False) and not r.flag("waits_for_peers", default=False):
        raise CatalogueError(path, "lost_peer", "says how a rank waited for its peers: needs waits_for_peers = true")
    kind = r.text("kind", required=False) or "line"
    ex = r.table("explain")
    examples = r.table("examples", required=False).data
    common: dict[str, Any] = dict(
        id=sig_id,
        path=path,
        category=category,
        severity=severity,
        title=r.text("title"),
        what=ex.text("what"),
        why=ex.text("why"),
        fix=ex.text("fix", required=False),
        references=tuple(ex.texts("references", required=False)),
        programs=programs,
        playbooks=tuple(r.texts("playbooks", required=False)),
        consequence_of=tuple(r.texts("consequence_of", required=False)),
        waits_for_peers=r.flag("waits_for_peers", default=False),
        lost_peer=r.flag("lost_peer", default=False),
        log_examples=_log_examples(path, examples),
        checked=_checked(path, r.texts("checked", required=False)),
        replaces=r.flag("replaces", default=False),
    )
    if kind == "stall":
        return Signature(**common, stall=_stall(path, r.table("stall")))
    if kind == "metric":
        if not common["log_examples"]:
            raise CatalogueError(path, "examples.log", "a metric signature needs log examples (readings)")
        return Signature(**common, metric=_metric(path, r.table("metric")))
    if kind == "differ":
        if not common["log_examples"]:
            raise CatalogueError(path, "examples.log", "a differ signature needs log examples")
        return Signature(**common, differ=_differ(path, r.table("differ")))
    if kind != "line":
        raise CatalogueError(path, "kind", f"unknown kind {kind!r} (line, stall, metric or differ)")
    match = r.table("match")
    any_ = tuple(_pattern(path, f"match.any[{i}]", p) for i, p in enumerate(match.texts("any")))
    if not any_:
        raise CatalogueError(path, "match.any", "needs at least one pattern")
    none = tuple(_pattern(path, f"match.none[{i}]", p) for i, p in enumerate(match.texts("none", required=False)))
    context = None
    if "context" in doc:
        c = r.table("context")
        scope = c.text("scope", required=False) or "source"
        if scope not in SCOPES:
            raise CatalogueError(path, "context.scope", f"unknown scope {scope!r} (one of {', '.join(SCOPES)})")
        context = Context(
            scope,
            tuple(_pattern(path, f"context.unless[{i}]", p) for i, p in enumerate(c.texts("unless", required=False))),
            tuple(_pattern(path, f"context.when[{i}]", p) for i, p in enumerate(c.texts("when", required=False))),
        )
    matches = _line_examples(path, examples, "match", with_facts=True)
    no_matches = _line_examples(path, examples, "no_match", with_facts=False)
    if not matches:
        raise CatalogueError(path, "examples.match", "needs at least one example line that must match")
    if not no_matches:
        raise CatalogueError(path, "examples.no_match", "needs at least one example line that must not match")
    fallback = r.flag("fallback", default=False)
    families = tuple(_family(path, i, f) for i, f in enumerate(r.tables("families", required=False)))
    quiet_after = tuple(
        _pattern(path, f"match.quiet_after[{i}]", p) for i, p in enumerate(match.texts("quiet_after", required=False))
    )
    calm = frozenset(match.texts("calm", required=False))
    traceback = r.table("traceback", required=False)
    chain = tuple(traceback.texts("chain", required=False))
    frame = _pattern(path, "traceback.frame", traceback.text("frame")) if "frame" in traceback.data else ""
    if frame and not {"file", "line", "func"} <= set(regex.compile(frame).groupindex):
        raise CatalogueError(path, "traceback.frame", "needs the groups file, line and func")
    exit_reports = tuple(r.table("exit", required=False).texts("reports", required=False))
    for status in exit_reports:
        if status != "positive" and not status.lstrip("-").isdigit():
            raise CatalogueError(path, "exit.reports", f"{status!r} is neither 'positive' nor an exit status")
    if (families or quiet_after or calm or chain or frame or exit_reports) and not fallback:
        raise CatalogueError(
            path, "fallback", "families, match.quiet_after, match.calm, traceback and exit need fallback = true"
        )
    names = [f.name for f in families]
    if len(set(names)) != len(names):
        raise CatalogueError(path, "families", "two families have the same name")
    return Signature(
        **common,
        any=any_,
        none=none,
        context=context,
        match_examples=matches,
        no_match_examples=no_matches,
        fallback=fallback,
        families=families,
        quiet_after=quiet_after,
        calm=calm,
        chain=chain,
        frame=frame,
        exit_reports=exit_reports,
    )


def _family(path: Path, i: int, f: Table) -> Family:
    f.known(("name", "category", "title", "what", "fix", "words", "playbooks", "examples", "counter_examples"))
    name, category = f.text("name"), f.text("category")
    if not ID.match(name):
        raise CatalogueError(path, f"families[{i}].name", "use lower-case letters, digits and single dashes")
    if category not in CATEGORIES:
        raise CatalogueError(path, f"families[{i}].category", f"unknown category {category!r}")
    examples = tuple(f.texts("examples"))
    if not examples:
        raise CatalogueError(path, f"families[{i}].examples", "needs at least one line the family takes")
    return Family(
        name=name,
        category=category,
        title=f.text("title"),
        what=f.text("what"),
        words=tuple(_pattern(path, f"families[{i}].words[{j}]", w) for j, w in enumerate(f.texts("words"))),
        fix=f.text("fix", required=False),
        playbooks=tuple(f.texts("playbooks", required=False)),
        examples=examples,
        counter_examples=tuple(f.texts("counter_examples", required=False)),
    )


def load_track(path: Path) -> Track:
    r = _reader(path, _read_toml(path))
    stages = []
    stuck_after = r.seconds("stuck_after", default=STUCK_AFTER)
    for i, s in enumerate(r.tables("stages")):
        stages.append(
            StageDef(
                id=s.text("id"),
                label=s.text("label"),
                any=tuple(
                    _pattern(path, f"stages[{i}].any[{j}]", p) for j, p in enumerate(s.texts("any", required=False))
                ),
                opens=s.flag("opens", default=True),
                process_level=s.flag("process_level", default=False),
                once_done=s.text("once_done", required=False),
                stuck_after=s.seconds("stuck_after", default=stuck_after),
                settled=s.flag("settled", default=False),
                short=s.text("short", required=False),
            )
        )
    ids = [s.id for s in stages]
    targets = {s.once_done for s in stages}
    for i, stage in enumerate(stages):
        if stage.once_done and stage.once_done not in ids[i + 1 :]:
            raise CatalogueError(path, f"stages[{i}].once_done", f"{stage.once_done!r} is not a later stage")
        if not stage.any and stage.id not in targets:
            raise CatalogueError(path, f"stages[{i}].any", "needs patterns (or the stage is another's once_done)")
    return replace(
        _track(path, r, tuple(stages)),
        examples=_stage_examples(r, set(ids)),
        replaces=r.flag("replaces", default=False),
    )


def _stage_examples(r: Table, stages: set[str]) -> tuple[Example, ...]:
    """A track's ``[[examples]]``: a real line, the stage it marks ("" for none) and the facts it gives."""
    found = []
    for ex in r.tables("examples"):
        stage = ex.text("stage", empty=True)
        if stage and stage not in stages:
            raise ex.fail("stage", f"no stage {stage!r} in this track")
        facts = ex.table("facts", required=False)
        found.append(Example(ex.text("line"), {k: facts.text(k) for k in facts.data}, stage=stage))
    return tuple(found)


def _track(path: Path, r: Table, stages: tuple[StageDef, ...]) -> Track:
    """The track's header: what its units are, and for a track of communicators the facts that name them."""
    track_id, label, programs = r.text("track"), r.text("label"), frozenset(r.texts("programs"))
    raw = r.data.get("unit", "rank")
    if isinstance(raw, str):
        if raw not in ("rank", "node"):
            raise CatalogueError(path, "unit", f"unknown unit {raw!r} (rank, node, or a [unit] table)")
        return Track(track_id, label, programs, stages, path, unit=raw)
    u = r.table("unit")
    kind = u.text("kind")
    if kind not in UNITS:
        raise CatalogueError(path, "unit.kind", f"unknown unit {kind!r} (one of {', '.join(UNITS)})")
    done = u.text("done", required=kind == "communicator")
    if done and done not in {s.id for s in stages}:
        raise CatalogueError(path, "unit.done", f"no stage {done!r} in this track")
    return Track(
        track_id,
        label,
        programs,
        stages,
        path,
        unit=kind,
        key=u.text("key", required=kind == "communicator"),
        group=u.text("group", required=False),
        group_label=u.text("group_label", required=False),
        done=done,
        parent=u.text("parent", required=False),
        split=tuple(u.texts("split", required=False)),
    )


def _stall(path: Path, s: Table) -> Stall:
    s.known(("track", "reached", "not_reached", "after_completed", "peer_reached", "where"))
    where = s.table("where", required=False)
    return Stall(
        track=s.text("track"),
        reached=s.text("reached"),
        not_reached=s.text("not_reached"),
        after_completed=s.flag("after_completed", default=False) if "after_completed" in s.data else None,
        peer_reached=s.text("peer_reached", required=False) or None,
        where=tuple((fact, where.text(fact)) for fact in where.data),
    )


def _metric(path: Path, m: Table) -> Metric:
    m.known(("busy", "still", "still_for"))
    busy, still = m.text("busy"), m.text("still")
    if busy not in GAUGES:
        raise CatalogueError(path, "metric.busy", f"unknown gauge {busy!r} (one of {', '.join(GAUGES)})")
    if still not in COUNTERS:
        raise CatalogueError(path, "metric.still", f"unknown counter {still!r} (one of {', '.join(COUNTERS)})")
    return Metric(busy, still, m.seconds("still_for", default=STILL_FOR))


def _differ(path: Path, d: Table) -> Differ:
    d.known(("fact", "label", "within"))
    return Differ(d.text("fact"), d.text("label"), d.text("within", required=False))


def _facts_read(tracks: Iterable[Track]) -> frozenset[str]:
    """The facts the stage tracks read: the named groups of their stages' patterns."""
    return frozenset(name for t in tracks for st in t.stages for p in st.any for name in regex.compile(p).groupindex)


def _check_differ_refs(sig: Signature, read: frozenset[str]) -> None:
    """A differ signature's facts must be facts a stage track reads (``read``)."""
    assert sig.differ is not None
    for key in ("fact", "within"):
        fact = getattr(sig.differ, key)
        if fact and fact not in read:
            raise CatalogueError(sig.path, f"differ.{key}", f"no stage track reads a fact {fact!r}")


def _check_stall_refs(sig: Signature, tracks: Mapping[str, Track], read: frozenset[str]) -> None:
    """A stall signature's track and stages must exist, and the facts of its ``where`` be facts a track reads."""
    assert sig.stall is not None
    for fact, _ in sig.stall.where:
        if fact not in read:
            raise CatalogueError(sig.path, f"stall.where.{fact}", f"no stage track reads a fact {fact!r}")
    track = tracks.get(sig.stall.track)
    if track is None:
        raise CatalogueError(sig.path, "stall.track", f"unknown track {sig.stall.track!r} ({', '.join(tracks)})")
    for key in ("reached", "not_reached", "peer_reached"):
        stage = getattr(sig.stall, key)
        if stage is None:
            continue
        try:
            track.index(stage)
        except KeyError:
            known = ", ".join(s.id for s in track.stages)
            raise CatalogueError(
                sig.path, f"stall.{key}", f"track {track.id} has no stage {stage!r} ({known})"
            ) from None


#: One entry of ``checked``: a program and a release of it, one space between ("nccl 2.27.7-cu13").
RELEASE = regex.compile(r"[a-z][a-z0-9_\-]* [0-9][\w.+\-]*")


def _checked(path: Path, entries: list[str]) -> tuple[str, ...]:
    for i, entry in enumerate(entries):
        if not RELEASE.fullmatch(entry):
            raise CatalogueError(path, f"checked[{i}]", f"{entry!r} is not '<program> <version>' (e.g. 'vllm 0.11.0')")
    if len(set(entries)) != len(entries):
        raise CatalogueError(path, "checked", "lists a release twice")
    return tuple(entries)


def _line_examples(path: Path, examples: Mapping[str, Any], key: str, *, with_facts: bool) -> tuple[Example, ...]:
    raw = examples.get(key, [])
    if not isinstance(raw, list):
        raise CatalogueError(path, f"examples.{key}", "must be an array of tables ([[examples.match]])")
    out = []
    for i, item in enumerate(raw):
        if not isinstance(item, dict) or not isinstance(item.get("line"), str):
            raise CatalogueError(path, f"examples.{key}[{i}].line", "needs a string")
        facts = item.get("facts", {})
        if not with_facts and facts:
            raise CatalogueError(path, f"examples.{key}[{i}].facts", "only match examples capture facts")
        if not isinstance(facts, dict) or not all(isinstance(v, str) for v in facts.values()):
            raise CatalogueError(path, f"examples.{key}[{i}].facts", "must be a table of strings")
        out.append(Example(item["line"], dict(facts)))
    return tuple(out)


def _log_examples(path: Path, examples: Mapping[str, Any]) -> tuple[Example, ...]:
    raw = examples.get("log", [])
    if not isinstance(raw, list):
        raise CatalogueError(path, "examples.log", "must be an array of tables ([[examples.log]])")
    out = []
    for i, item in enumerate(raw):
        if not isinstance(item, dict):
            raise CatalogueError(path, f"examples.log[{i}]", "must be a table")
        nodes = item.get("nodes", {})
        if not isinstance(nodes, dict) or not all(isinstance(t, str) for t in nodes.values()):
            raise CatalogueError(path, f"examples.log[{i}].nodes", "must be a table of each node's lines (strings)")
        if not isinstance(item.get("text", ""), str) or bool(item.get("text")) == bool(nodes):
            raise CatalogueError(path, f"examples.log[{i}].text", "needs a string, or nodes instead (one of the two)")
        fires = item.get("fires", True)
        if not isinstance(fires, bool):
            raise CatalogueError(path, f"examples.log[{i}].fires", "must be true or false")
        out.append(Example(item.get("text", ""), fires=fires, nodes=tuple(nodes.items())))
    return tuple(out)


def _pattern(path: Path, key: str, pattern: str) -> str:
    try:
        regex.compile(pattern)
    except regex.error as exc:
        raise CatalogueError(path, key, f"regular expression does not compile: {exc}") from None
    return pattern


def _read_toml(path: Path) -> dict[str, Any]:
    return tomlfile.read(path, lambda reason: CatalogueError(path, "", reason))


def _reader(path: Path, data: Mapping[str, Any]) -> Table:
    """A file's top table, whose errors name the file."""
    return Table(data, lambda key, reason: CatalogueError(path, key, reason))
