"""The per-source half of the analysis: matching, evidence and stage markers for one source's lines.

A :class:`Scan` reads one source's blocks of complete lines, in order. The :class:`Rules` (the catalogue
compiled into one pattern table) propose the lines that may match; each of them is classified once; hits
are counted per signature and scope as they come, so a line repeated a million times costs one count, not
a million records; an evidence line keeps the lines around it; stage markers become :class:`StageEvent`,
and the lines a metrics source writes for a server's readings
:class:`~sparktui.core.analysis.serving.ReadingEvent`.

:meth:`Scan.take` hands over what was found since the previous call as one :class:`Scanned`: plain,
picklable values, which a :class:`~sparktui.core.analysis.correlate.Correlation` merges with those of every
other source, in this process or in another one.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import IntEnum
from typing import NamedTuple, TypeVar

import regex

from sparktui.core.analysis.matcher import Matcher
from sparktui.core.analysis.provenance import Origins, Provenance, raising_frame
from sparktui.core.analysis.provenance import load as load_origins
from sparktui.core.analysis.serving import ReadingEvent
from sparktui.core.catalogue import Catalogue, Signature, Track, is_builtin
from sparktui.core.classify import Classification, classify
from sparktui.core.events import ByFields, Evidence, Position
from sparktui.core.search.engines import Engine, best_engine
from sparktui.core.serving import record
from sparktui.core.text import display

#: Lines of context kept before and after an evidence line.
CONTEXT_LINES = 3
#: Evidence lines one signature keeps per node, and in all.
EVIDENCE_PER_NODE = 3
EVIDENCE_MAX = 8
#: How much of a block's last line is read for its time (the prefixes that say it come first).
STAMP_CHARS = 256
#: Lines after a failure line that may go on with its message (see :meth:`Rules.continued`).
CONTINUED = 6


K = TypeVar("K")


def family_words(words: Sequence[str]) -> list[regex.Pattern[str]]:
    """A family's words, compiled to be found whatever their case."""
    return [regex.compile(w, regex.IGNORECASE) for w in words]


def filed(
    families: Sequence[tuple[K, Sequence[regex.Pattern[str]]]], line: str, default: K, timeout: float | None = None
) -> K:
    """How a fallback signature's hit on ``line`` is filed: the key of the first family whose words the line
    holds, else ``default``. The one rule for the scan and for the catalogue's own examples (which bound each
    search by ``timeout`` seconds: ``TimeoutError`` past it)."""
    for key, words in families:
        if any(w.search(line, timeout=timeout) for w in words):
            return key
    return default


class Role(IntEnum):
    """What a pattern of the table is for."""

    HIT = 0  # a signature's match.any
    VETO = 1  # its match.none: the line is not a hit of that signature
    WHEN = 2  # its context.when: seen somewhere in the scope
    UNLESS = 3  # its context.unless
    STAGE = 4  # a stage marker of a track
    QUIET = 5  # a fallback signature's match.quiet_after: no more of its hits in the source after it


@dataclass(frozen=True, slots=True)
class _Rule:
    role: Role
    owner: int  # signature index, or track index for STAGE
    stage: int = 0


class Rules:
    """The catalogue compiled for scanning: every signature and stage pattern in one table, one matcher."""

    def __init__(
        self,
        catalogue: Catalogue,
        engine: Callable[[Sequence[str]], Engine] = best_engine,
        origins: Origins | None = None,
    ) -> None:
        self.catalogue = catalogue
        self.signatures = catalogue.signatures
        self.tracks = catalogue.tracks
        patterns: list[str] = []
        self.rules: list[_Rule] = []

        def add(pattern: str, rule: _Rule) -> None:
            patterns.append(pattern)
            self.rules.append(rule)

        for i, sig in enumerate(self.signatures):
            for p in sig.any:
                add(p, _Rule(Role.HIT, i))
            for p in sig.none:
                add(p, _Rule(Role.VETO, i))
            for p in sig.quiet_after:
                add(p, _Rule(Role.QUIET, i))
            if sig.context is not None:
                for p in sig.context.when:
                    add(p, _Rule(Role.WHEN, i))
                for p in sig.context.unless:
                    add(p, _Rule(Role.UNLESS, i))
        for t, track in enumerate(self.tracks):
            for s, stage in enumerate(track.stages):
                for p in stage.any:
                    add(p, _Rule(Role.STAGE, t, s))
        untrusted = [key for key in range(len(patterns)) if not is_builtin(self.owner(key).path)]
        self.matcher = Matcher(patterns, engine(patterns), untrusted=untrusted)
        index = {sig.id: i for i, sig in enumerate(self.signatures)}
        #: Per fallback signature, its families in order: the index of each one's signature and its words.
        self.families: dict[int, list[tuple[int, list[regex.Pattern[str]]]]] = {
            i: [(index[f"{sig.id}-{f.name}"], family_words(f.words)) for f in sig.families]
            for i, sig in enumerate(self.signatures)
            if sig.fallback
        }
        self.origins = origins if origins is not None else load_origins()
        #: Per fallback signature, the index of each of its families' signature by the family's name.
        self.named_families: dict[int, dict[str, int]] = {
            i: {f.name: index[f"{sig.id}-{f.name}"] for f in sig.families}
            for i, sig in enumerate(self.signatures)
            if sig.fallback
        }
        #: Per fallback signature, its traceback's frame line (``traceback.frame``), if it says one.
        self.frames: dict[int, regex.Pattern[str]] = {
            i: regex.compile(sig.frame) for i, sig in enumerate(self.signatures) if sig.fallback and sig.frame
        }
        #: Per fallback signature, its own patterns: the shapes of a failure line.
        self.shapes: dict[int, list[regex.Pattern[str]]] = {
            i: [regex.compile(p) for p in sig.any] for i, sig in enumerate(self.signatures) if sig.fallback
        }

    def family(self, owner: int, line: str) -> int:
        """The signature a fallback signature's hit on ``line`` is filed under by its words: that of the
        first of its families whose words the line holds, else the fallback signature itself."""
        return filed(self.families.get(owner, ()), line, owner)

    def origin(self, owner: int, provenance: Provenance) -> tuple[int, str] | None:
        """The signature a fallback signature's hit is filed under by where it came from (the raising
        frame, the logger's file, the exception's class: :class:`~sparktui.core.analysis.provenance.Origins`),
        and how that was decided; None where its origin files it under no family of this signature."""
        filing = self.origins.file(provenance)
        family = self.named_families.get(owner, {}).get(filing.family) if filing is not None else None
        if filing is None or family is None:
            return None
        return family, f"filed as {filing.family.replace('-', ' ')}: {filing.said}"

    def continued(self, owner: int, lines: Sequence[str], index: int, timed: bool) -> list[str]:
        """The lines after ``lines[index]`` that go on with its message (a logger that wraps at the terminal's
        width, as Rich's does; a message of several lines), at most :data:`CONTINUED`: up to a blank line, a
        line that says its own program or level, a line that says a time where the failure line said none,
        or a failure line of its own. (Where the failure line says a time too, a collector put one before
        every line, as ``kubectl logs --timestamps`` and ``docker logs -t`` do: a time then starts no new
        message.) ``timed``: whether the failure line said a time."""
        shapes = self.shapes[owner]
        found = []
        for text in lines[index + 1 : index + 1 + CONTINUED]:
            said = classify(text)
            if not text.strip() or said.program != "other" or said.level or (said.time is not None and not timed):
                break
            if any(shape.search(text) for shape in shapes):
                break
            found.append(text)
        return found

    def owner(self, key: int) -> Signature | Track:
        """The signature or stage track a pattern of the table belongs to."""
        rule = self.rules[key]
        return self.tracks[rule.owner] if rule.role is Role.STAGE else self.signatures[rule.owner]

    def where(self, key: int) -> str:
        """The file and key a pattern of the table comes from (``.../my-sig.toml: match.any[0]``)."""
        rule, pattern, owner = self.rules[key], self.matcher.patterns[key], self.owner(key)
        if isinstance(owner, Track):
            return f"{owner.path}: stages[{rule.stage}].any[{owner.stages[rule.stage].any.index(pattern)}]"
        context = owner.context
        field, patterns = {
            Role.HIT: ("match.any", owner.any),
            Role.VETO: ("match.none", owner.none),
            Role.WHEN: ("context.when", context.when if context else ()),
            Role.UNLESS: ("context.unless", context.unless if context else ()),
            Role.QUIET: ("match.quiet_after", owner.quiet_after),
        }[rule.role]
        return f"{owner.path}: {field}[{patterns.index(pattern)}]"


@dataclass(slots=True)
class Hits(ByFields):
    """The hits of one signature within one context scope, from one source, since the last hand-over."""

    signature: str
    scope: str
    first: Position
    count: int = 0
    nodes: list[str] = field(default_factory=list)
    facts: dict[str, str] = field(default_factory=dict)
    evidence: list[Evidence] = field(default_factory=list)
    folded: int = 0  # lines of other processes that Ray's de-duplication folded into these
    filed: str = ""  # a fallback's: how its first hit was filed ("filed as model files: raised in ...")
    weak: bool = False  # only the end of its source speaks for it (a traceback cut there): at most a warning


class StageEvent(NamedTuple):
    """A line that marks a stage of a track: what a :class:`~sparktui.core.analysis.stages.StageTracker`
    is fed. ``process`` names the process the line comes from (how, the track says; "" where the line does
    not say it); ``at`` is the time the line was read (a live source's clock; 0 for a file read after the
    fact); ``time`` is the time the line itself says, if any; ``repeated`` how many processes' lines it
    stands for (Ray folds identical lines of several workers into one). A named tuple: a scan makes one per
    marker, tens of thousands per 20 MB of NCCL logs, and one made elsewhere (a worker process, a node) is
    pickled, which a tuple is made and pickled several times faster than a frozen dataclass."""

    track: str
    stage: int
    facts: dict[str, str]
    node: str
    process: str
    rank: int | None
    position: Position
    text: str
    at: float
    time: float | None = None
    repeated: int = 1


@dataclass(frozen=True, slots=True)
class LateContext:
    """The lines after an evidence line that had not been read yet when the evidence was handed over."""

    source: str
    line: int
    after: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Disabled:
    """A pattern that ran out of its time budget on a line (see :mod:`~.matcher`): it is disabled for the
    rest of the run. ``where`` names its file and key."""

    where: str
    source: str
    line: int
    seconds: float

    @property
    def text(self) -> str:
        return (
            f"{self.where}: pattern disabled for this run: it took over {self.seconds:.2f} s of CPU on line "
            f"{self.line} of {self.source}"
        )


@dataclass(frozen=True, slots=True)
class Scanned(ByFields):
    """What one source's scan found since its previous hand-over."""

    source: str
    node: str
    lines: int  # lines read from the source so far, in all
    last_time: float | None = None  # the latest time its lines said so far, where they say one
    hits: tuple[Hits, ...] = ()
    seen: tuple[tuple[Role, str, str], ...] = ()  # (WHEN or UNLESS, signature id, scope) met in a line
    stages: tuple[StageEvent, ...] = ()
    context: tuple[LateContext, ...] = ()
    disabled: tuple[Disabled, ...] = ()
    hosts: tuple[str, ...] = ()  # the other names its lines give the source's node (see Scan.home)
    read_bytes: int = 0  # how far into its stored file reading got, where it is a file (for progress)
    readings: tuple[ReadingEvent, ...] = ()  # a server's readings, where the source is a metrics source


@dataclass(slots=True)
class _Pending:
    """Evidence still waiting for the lines after it; ``sent`` lines of ``after`` were handed over."""

    line: int
    node: str
    text: str
    before: tuple[str, ...]
    after: list[str] = field(default_factory=list)
    sent: int | None = None  # None until it has been handed over in a Hits

    def freeze(self, source: str) -> Evidence:
        self.sent = len(self.after)
        return Evidence(source, self.line, self.node, self.text, self.before, tuple(self.after))


class Scan:
    """One source, scanned in line order. ``node`` is the node of its further lines (a live source may learn
    it from its content and change it); ``hosts`` the other names that node goes by in lines (see
    :meth:`home`)."""

    def __init__(self, rules: Rules, name: str, node: str, hosts: frozenset[str] = frozenset()) -> None:
        self.rules = rules
        self.name = name
        self.node = node
        self.known = hosts  # the machine's own names, where the source could ask it (over SSH)
        self.hosts: list[str] = []  # the names its lines gave the source's node, in the order met
        self.lines = 0
        self._tail: deque[str] = deque(maxlen=CONTEXT_LINES)
        self._waiting: list[_Pending] = []
        self._hits: dict[tuple[int, str], tuple[Hits, list[_Pending]]] = {}
        self._kept: dict[tuple[int, str], list[str]] = {}  # the nodes of the evidence kept so far
        self._seen: set[tuple[Role, str, str]] = set()
        self._new_seen: list[tuple[Role, str, str]] = []
        self._stages: list[StageEvent] = []
        self._disabled: list[Disabled] = []
        self._readings: list[ReadingEvent] = []
        self._quiet: set[int] = set()  # the fallback signatures that take no more hits here (match.quiet_after)
        self._named = 0  # the last line a signature named (a fallback takes no line a signature names)
        self.last_time: float | None = None

    def feed(self, text: str, now: float = 0.0) -> None:
        """Scan a block of complete lines (``\\n``-separated, without the final newline)."""
        base = self.lines
        lines: list[str] | None = None
        if self._waiting:
            lines = text.split("\n")
            for pending in self._waiting:
                pending.after.extend(display(s) for s in lines[: CONTEXT_LINES - len(pending.after)])
            self._waiting = [p for p in self._waiting if len(p.after) < CONTEXT_LINES or p.sent is not None]
        rules = self.rules.rules
        for found in self.rules.matcher.scan(text):
            matches = [(rules[key], m) for key, m in found.matches]
            lines = self._line(base, found.row, found.text, matches, text, lines, now)
        for over in self.rules.matcher.overruns():
            self._disabled.append(Disabled(self.rules.where(over.key), self.name, base + over.index + 1, over.seconds))
        self._read(text, base, now)
        count = text.count("\n") + 1
        if count >= CONTEXT_LINES:
            lines = lines if lines is not None else text.rsplit("\n", CONTEXT_LINES)[-CONTEXT_LINES:]
            self._tail.extend(lines[-CONTEXT_LINES:])
        else:
            self._tail.extend(text.split("\n"))
        self.lines += count
        last = text.rfind("\n") + 1
        self._saw_time(classify(text[last : last + STAMP_CHARS]).time)

    def _read(self, text: str, base: int, now: float) -> None:
        """The readings among a block's lines (a metrics source's; only lines holding its tag are looked at)."""
        index, counted_to, at = 0, 0, text.find(record.TAG)
        while at >= 0:  # only the lines that hold the tag: a block may be megabytes of other lines
            start, end = text.rfind("\n", 0, at) + 1, text.find("\n", at)
            end = end if end >= 0 else len(text)
            index += text.count("\n", counted_to, start)
            counted_to, line, at = start, text[start:end], text.find(record.TAG, end)
            if (found := record.parse(line)) is not None:
                position = Position(self.name, base + index + 1)
                time = classify(line).time
                self._readings.append(ReadingEvent(self.node, found.endpoint, found.reading, position, line, now, time))

    def _saw_time(self, time: float | None) -> None:
        if time is not None and (self.last_time is None or time > self.last_time):
            self.last_time = time

    def take(self, read_bytes: int = 0) -> Scanned:
        """What was found since the previous call (hits, context conditions met, stage markers, and the
        context lines that arrived for evidence handed over before); ``read_bytes`` says how far into its
        file the reader got."""
        context = []
        for pending in self._waiting:
            if pending.sent is not None and len(pending.after) > pending.sent:
                context.append(LateContext(self.name, pending.line, tuple(pending.after)))
                pending.sent = len(pending.after)
        hits = []
        for found, pendings in self._hits.values():
            found.evidence = [p.freeze(self.name) for p in pendings]
            hits.append(found)
        self._waiting = [p for p in self._waiting if len(p.after) < CONTEXT_LINES]
        scanned = Scanned(
            source=self.name,
            node=self.node,
            lines=self.lines,
            last_time=self.last_time,
            hits=tuple(hits),
            seen=tuple(self._new_seen),
            stages=tuple(self._stages),
            context=tuple(context),
            disabled=tuple(self._disabled),
            hosts=tuple(self.hosts),
            read_bytes=read_bytes,
            readings=tuple(self._readings),
        )
        self._hits, self._new_seen, self._stages, self._disabled, self._readings = {}, [], [], [], []
        return scanned

    def end(self, read_bytes: int = 0) -> Scanned:
        """The source ended (a file read to its end, ``read_bytes`` of it): what its last lines leave open,
        handed over as :meth:`take` hands over. A source that stops inside a traceback, at one of its frames (a
        process killed while printing it, a pasted excerpt cut short), shows a failure whose exception line it
        never printed: unless a signature names that frame, a weak hit (a warning at most) of the fallback
        signature on it, filed under no family. (Not by the frame's area, as a raising frame is: the exception
        may come from any call below the frame, and filing each frame of the fixtures' and the wild corpus's
        whole tracebacks by its area agrees with their labels for 58 of 93.)"""
        lines = list(self._tail)
        for owner, pattern in self.rules.frames.items():
            at = cut_at(lines, pattern)
            if at is None:
                continue
            index, m = at
            cls = classify(lines[index])
            sig = self.rules.signatures[owner]
            if cls.level in sig.calm or owner in self._quiet:  # a calm level's, or after an orderly shutdown
                continue
            position = Position(self.name, self.lines - len(lines) + index + 1)
            if position.line == self._named:  # a signature names the frame: it says more
                continue
            node = self.home(cls)
            facts = {"cut": f"{m['file']}:{m['line']} in {m['func']}"}
            found = Hits(sig.id, scope_key(sig, self.name, node, cls), position, 1, [node] if node else [], facts)
            found.weak = True
            before = tuple(display(b) for b in lines[max(index - CONTEXT_LINES, 0) : index])
            evidence = _Pending(position.line, node, display(lines[index]), before)
            evidence.after.extend(display(a) for a in lines[index + 1 :])
            self._hits[(owner, found.scope)] = (found, [evidence])
            break
        return self.take(read_bytes)

    def home(self, cls: Classification) -> str:
        """The node a line belongs to. A source is one node unless its lines prove otherwise: a host its
        lines name is the source's node when it is one of the machine's own names, where the source could
        ask them (over SSH: a copy of another node's log stays that node's), and otherwise when it is the
        first host the program itself named (NCCL's ``host:pid:tid``; a prefix another program added, as
        Ray's ``ip=`` or pdsh's, often carries other nodes' lines). An SSH alias and the host name NCCL
        prints are so one node, and a log that merges several nodes still shows each."""
        host = cls.node
        if host is None or host == self.node or host in self.hosts:
            return self.node
        if host in self.known or (not self.known and not self.hosts and not cls.relayed):
            self.hosts.append(host)
            return self.node
        return host

    def _line(
        self,
        base: int,
        index: int,
        line: str,
        matches: list[tuple[_Rule, regex.Match[str]]],
        block: str,
        lines: list[str] | None,
        now: float,
    ) -> list[str] | None:
        position = Position(self.name, base + index + 1)
        cls: Classification | None = None
        # A veto concerns the other patterns of its signature: a line only one pattern matched has none.
        vetoed = {r.owner for r, _ in matches if r.role is Role.VETO} if len(matches) > 1 else ()
        fallback: tuple[_Rule, regex.Match[str]] | None = None  # a failure line no other signature may name
        named = False
        hit: set[int] = set()  # signatures this line is a hit of already: one line is one hit, however many patterns
        for rule, m in matches:
            if rule.role is Role.STAGE:
                cls = cls or classify(line)
                self._stage(rule, m, cls, position, now)
                continue
            if rule.role is Role.QUIET:
                self._quiet.add(rule.owner)
                continue
            if rule.role is Role.VETO or rule.owner in vetoed:
                continue
            sig = self.rules.signatures[rule.owner]
            if sig.fallback and rule.role is Role.HIT:
                fallback = fallback or (rule, m)
                continue
            cls = cls or classify(line)
            if sig.programs and cls.program not in sig.programs:
                continue
            named = named or rule.role is Role.HIT
            node = self.home(cls)
            scope = scope_key(sig, self.name, node, cls)
            if rule.role in (Role.WHEN, Role.UNLESS):
                seen = (rule.role, sig.id, scope)
                if seen not in self._seen:
                    self._seen.add(seen)
                    self._new_seen.append(seen)
                continue
            if rule.owner in hit:
                continue
            hit.add(rule.owner)
            lines = self._hit(rule.owner, sig, scope, position, node, m.groupdict(), index, block, lines, cls.repeated)
        if named:
            self._named = position.line
        if fallback is not None and not named and fallback[0].owner not in self._quiet:
            cls = cls or classify(line)
            if cls.level not in self.rules.signatures[fallback[0].owner].calm:
                rule, m = fallback
                lines = lines if lines is not None else block.split("\n")
                owner, said = self._filed(rule.owner, m, cls, index, lines)
                sig = self.rules.signatures[owner]
                node = self.home(cls)
                scope = scope_key(sig, self.name, node, cls)
                facts = m.groupdict()
                lines = self._hit(owner, sig, scope, position, node, facts, index, block, lines, cls.repeated, said)
        if cls is not None:
            self._saw_time(cls.time)
        return lines

    def _filed(
        self, owner: int, m: regex.Match[str], cls: Classification, index: int, lines: list[str]
    ) -> tuple[int, str]:
        """The signature a fallback signature's hit on ``lines[index]`` is filed under, and how: by where it
        came from (the frame that raised it, the logger's file, its exception's class), else by the words
        of the line, else by those of the line with the lines that go on with its message."""
        exception = m.groupdict().get("exception") or ""
        pattern = self.rules.frames.get(owner)
        frame = raising_frame(self._before(index, lines), pattern) if exception and pattern is not None else None
        provenance = Provenance(
            cls.program, cls.file, frame["file"] if frame is not None else "", exception, lines[index]
        )
        found = self.rules.origin(owner, provenance)
        if found is not None:
            return found
        line = lines[index]
        family = self.rules.family(owner, line)
        if family == owner:  # no family in the line: its message may go on below it
            more = self.rules.continued(owner, lines, index, cls.time is not None)
            family = self.rules.family(owner, " ".join((line, *more)))
        if family == owner:
            return owner, ""
        name = self.rules.signatures[family].id.removeprefix(f"{self.rules.signatures[owner].id}-")
        return family, f"filed as {name.replace('-', ' ')}: by the words of the failure"

    def _before(self, index: int, lines: list[str]) -> list[str]:
        """The lines of this source before ``lines[index]``, at most :data:`CONTEXT_LINES` + 1, the nearest last."""
        start = index - CONTEXT_LINES - 1
        before = list(self._tail)[start:] if start < 0 else []
        return before + lines[max(start, 0) : index]

    def _hit(
        self,
        owner: int,
        sig: Signature,
        scope: str,
        position: Position,
        node: str,
        facts: dict[str, str | None],
        index: int,
        block: str,
        lines: list[str] | None,
        repeated: int,
        filed: str = "",
    ) -> list[str] | None:
        key = (owner, scope)
        entry = self._hits.get(key)
        if entry is None:
            entry = self._hits[key] = (Hits(sig.id, scope, position, filed=filed), [])
        found, pendings = entry
        found.count += repeated  # a line Ray folded stands for that many
        found.folded += repeated - 1
        for k, v in facts.items():
            if v is not None:
                found.facts.setdefault(k, v)
        if node and node not in found.nodes:  # a file of notes has no node to name
            found.nodes.append(node)
        kept = self._kept.setdefault(key, [])
        if len(kept) < EVIDENCE_MAX and kept.count(node) < EVIDENCE_PER_NODE:
            kept.append(node)
            lines = lines if lines is not None else block.split("\n")
            pendings.append(self._evidence(position, node, index, lines))
        return lines

    def _stage(self, rule: _Rule, m: regex.Match[str], cls: Classification, position: Position, now: float) -> None:
        track = self.rules.tracks[rule.owner]
        if cls.program not in track.programs:
            return
        node = self.home(cls)
        facts = {k: v for k, v in m.groupdict().items() if v is not None}
        self._stages.append(
            StageEvent(
                track.id,
                rule.stage,
                facts,
                node,
                process_key(track, node, cls),
                cls.rank,
                position,
                m.string,
                now,
                cls.time,
                cls.repeated,
            )
        )

    def _evidence(self, position: Position, node: str, index: int, lines: list[str]) -> _Pending:
        start = index - CONTEXT_LINES
        before = list(self._tail)[start:] if start < 0 else []
        before += lines[max(start, 0) : index]
        pending = _Pending(
            position.line, node, display(lines[index]), tuple(display(b) for b in before[-CONTEXT_LINES:])
        )
        pending.after.extend(display(s) for s in lines[index + 1 : index + 1 + CONTEXT_LINES])
        if len(pending.after) < CONTEXT_LINES:
            self._waiting.append(pending)
        return pending


def cut_at(lines: Sequence[str], frame: regex.Pattern[str]) -> tuple[int, regex.Match[str]] | None:
    """Where a source whose last lines are ``lines`` stops inside a traceback: the index and match of its
    deepest frame line (one that ``frame``, a fallback signature's ``traceback.frame``, finds), where every
    line after it is blank or that frame's own (the code it quotes and the carets under it: the frame line's
    prefix, then deeper indentation); None where the source does not stop inside one."""
    for index in range(len(lines) - 1, -1, -1):
        m = frame.search(lines[index])
        if m is not None:
            lead = lines[index][: m.start()]
            prefix, depth = lead.rstrip(), len(lead) - len(lead.rstrip())
            below = [text for text in lines[index + 1 :] if text.strip()]
            inside = all(t.startswith(prefix) and _depth(t[len(prefix) :]) > depth for t in below)
            return (index, m) if inside else None
    return None


def _depth(text: str) -> int:
    return len(text) - len(text.lstrip())


def scope_key(sig: Signature, source: str, node: str, cls: Classification) -> str:
    """Where a signature's context conditions are decided for this line: its source, node, process or all."""
    scope = sig.context.scope if sig.context is not None else "all"
    if scope == "source":
        return source
    if scope == "node":
        return node
    if scope == "process":
        return f"{source}\x00{cls.pid or cls.process}"
    return ""


def process_key(track: Track, node: str, cls: Classification) -> str:
    """The process a stage marker belongs to, as the track counts its units: by process id for a track of
    communicators ("" where the line names no process), by the rank's tag on its node, or the node as a
    whole."""
    if track.unit == "communicator":
        return f"{node}:{cls.pid}" if cls.pid is not None else ""
    if track.unit == "rank" and cls.rank is not None:
        return f"{node}:{cls.process}"
    return f"{node}:"
