"""Judging one reading of every rank's stack, live: the groups of the comparison
(:mod:`sparktui.core.stacks.compare`) told apart as hung, loading, moving or idle, and a hung group made a
critical finding in the words of ``diagnostics/liveness/rank-hang.toml``. Pure once the words are loaded.

A group the comparison calls hung (its waiting ranks did not move while a rank is elsewhere or missing) is
**loading** instead when a rank elsewhere was placed, in any of its dumps, in a kind that is a long
legitimate wait (``progress = true``: loading weights, compiling): slow, not stuck. A group whose ranks all
wait together, or are all idle in application code, is **idle** (a server waiting for work); one whose
ranks moved is **progressing**.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from functools import cache
from pathlib import Path

from sparktui.core.analysis.diagnosis import Diagnosis
from sparktui.core.analysis.explain import live_apart, live_first, tell_jobs
from sparktui.core.dirs import builtin
from sparktui.core.errors import Invalid
from sparktui.core.events import Finding, Position, Severity
from sparktui.core.report.fold import belongs, fold_grids
from sparktui.core.stacks.compare import Group
from sparktui.core.stacks.kinds import WaitKind, place
from sparktui.core.stacks.ranks import Rank
from sparktui.core.stacks.snapshot import Snapshot
from sparktui.core.taxonomy import CATEGORIES
from sparktui.core.tomlfile import Table, read

#: What a reading says, worst first: a group hangs; ranks moved; a rank loads or compiles; nothing could be
#: read; every rank waits together (or idles); no rank process was found.
STATES = ("hang", "progressing", "loading", "unread", "idle", "none")
#: The source a live finding is said to come from (it comes from no log line).
SOURCE = "stacks (live)"


class WordsError(Invalid):
    """The finding's words cannot be used; the message names the file and the key."""


@dataclass(frozen=True, slots=True)
class Words:
    """What the hang finding says besides its title (the comparison's own sentence)."""

    id: str
    category: str
    severity: Severity
    explanation: str
    playbooks: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Reading:
    """One reading of every rank's stack: what it says, the capture, and its hung groups."""

    state: str
    snapshot: Snapshot
    hung: tuple[Group, ...] = ()

    @property
    def taken(self) -> datetime:
        return self.snapshot.taken


def group_state(group: Group, kinds: Sequence[WaitKind]) -> str:
    """One group's state (see the module's docstring)."""
    if group.verdict == "hang":
        odd = [v.rank for v in group.views if v.odd]
        return "loading" if any(_loading(r, kinds) for r in odd) else "hang"
    if any(_loading(v.rank, kinds) for v in group.views):
        return "loading"
    if group.verdict in ("progressing", "unread"):
        return group.verdict
    if group.verdict == "no-wait" and any(v.moved for v in group.views):
        return "progressing"  # busy in application code, not waiting on anyone
    return "idle"


def _loading(rank: Rank, kinds: Sequence[WaitKind]) -> bool:
    """Whether a dump of ``rank`` placed it in a long legitimate wait."""
    for sample in rank.samples:
        if sample.process is not None:
            found = place(sample.process, kinds)
            if found is not None and found.kind.progress:
                return True
    return False


def judge(groups: Sequence[Group], snapshot: Snapshot, kinds: Sequence[WaitKind]) -> Reading:
    """The reading of ``groups`` (whose capture is ``snapshot``): the worst of their states, its hung groups."""
    states = [group_state(g, kinds) for g in groups]
    state = min(states, key=STATES.index) if states else "none"
    hung = tuple(g for g, s in zip(groups, states, strict=True) if s == "hang")
    return Reading(state, snapshot, hung)


def hung_ranks(group: Group) -> list[str]:
    """Who a hung group waits on: its ranks elsewhere, by name, and its missing ones (the same from one
    reading to the next while the hang stands, whatever each rank's line or stillness)."""
    return [v.rank.name for v in group.views if v.odd] + [f"rank {r} (missing)" for r in group.missing]


def finding(reading: Reading, words: Words) -> Finding | None:
    """The critical finding of a hung reading (None for any other): titled by the first hung group's own
    sentence, its detail every hung group's findings, its facts the ranks named and where the others wait."""
    if not reading.hung:
        return None
    first = reading.hung[0]
    odd = [v for v in first.views if v.odd]
    waiting = [v for v in first.views if not v.odd and v.place is not None and v.place.kind.waits_on_peers]
    dumps = len(first.views[0].rank.samples) if first.views else 0
    return _made(
        words,
        reading.snapshot,
        f"{dumps} dumps of each rank over {first.seconds:.1f} s, ",
        [(g.job, g.findings) for g in reading.hung],
        [v.rank.node for v in odd] + [v.rank.node for g in reading.hung for v in g.views],
        {
            "job": first.job,
            "hung": "; ".join(hung_ranks(first)),
            "doing": "; ".join(f"{v.rank.name}: {v.now()}" for v in odd),
            "others_wait_in": waiting[0].place.describe() if waiting and waiting[0].place is not None else "",
        },
    )


def captured(snapshot: Snapshot, words: Words) -> Finding | None:
    """The finding :func:`finding` made of a capture that saw a hang, made again from the capture as a bundle
    keeps it (``stacks.json``: the groups' verdicts and sentences, each rank's place), for ``diagnose`` of the
    bundle; None where no group of it hung."""
    hung = [g for g in snapshot.groups if g.verdict == "hang"]
    if not hung:
        return None
    odd = [r for r in hung[0].ranks if r.odd]
    waiting = [r for r in hung[0].ranks if not r.odd and r.now]
    return _made(
        words,
        snapshot,
        "",
        [(g.job, g.findings) for g in hung],
        [r.node for r in odd] + [r.node for g in hung for r in g.ranks],
        {
            "job": hung[0].job,
            "hung": "; ".join(f"{r.who} ({r.where})" for r in odd),
            "doing": "; ".join(f"{r.who}: {r.now}" for r in odd),
            "others_wait_in": waiting[0].now if waiting else "",
        },
    )


def _made(
    words: Words,
    snapshot: Snapshot,
    dumps: str,
    hung: Sequence[tuple[str, Sequence[str]]],
    nodes: Sequence[str],
    facts: dict[str, str],
) -> Finding:
    """The hang finding: titled by the first hung job's own sentence, its detail every hung job's sentences
    (with ``dumps``, how the ranks were read), RAS's entries and what was not read."""
    detail = [f"Read by py-spy at {snapshot.taken:%H:%M:%S UTC}, {dumps}on {snapshot.where}:"]
    detail += [f"- job {job}: " + "; ".join(said) for job, said in hung]
    detail += [f"- NCCL's RAS on {node}: {said}" for node, said in snapshot.ras]
    detail += [f"- not read: {p}" for p in snapshot.problems]
    facts = {**facts, "read_at": snapshot.taken.isoformat(timespec="seconds")}
    return Finding(
        signature=words.id,
        category=words.category,
        severity=words.severity,
        title=hung[0][1][0],
        explanation=words.explanation,
        remediations=words.playbooks,
        first_seen=Position(SOURCE, 0),
        nodes=tuple(dict.fromkeys(nodes)),
        count=len(hung),
        facts={k: v for k, v in facts.items() if v},
        detail="\n".join(detail),
    )


def merged(
    diagnosis: Diagnosis, live: Finding | None, snapshot: Snapshot | None, jobs: Iterable[Sequence[str]] = ()
) -> Diagnosis:
    """``diagnosis`` with the live finding first (a hang is the root of what the logs say after it; L1), or
    last where it is another job's (L2: its ranks on no node the logs' findings name, while they have a warning
    or worse); the live capture's "now" column in every grid; and, where the logs' first finding is a wait for
    peers, the nodes of each job the watch saw running (``jobs``) that did not report it (rule T2)."""
    findings = diagnosis.findings
    if live is not None:
        findings = placed(findings, live, snapshot)
    else:
        told = tell_jobs(list(findings), jobs)
        if told and told[0] is not findings[0]:
            findings = tuple(told)
    if findings is diagnosis.findings and snapshot is None:
        return diagnosis
    return replace(diagnosis, findings=findings, progress=fold_grids(diagnosis.progress, snapshot))


def kept(diagnosis: Diagnosis, snapshot: Snapshot | None) -> Diagnosis:
    """The diagnosis of a bundle's logs with the hang its capture saw (:func:`captured`) placed among its
    findings as the live watch placed it (:func:`placed`), unless a finding of the hang is there already."""
    words = builtin_words()
    hang = captured(snapshot, words) if snapshot is not None else None
    if hang is None or any(f.signature == words.id for f in diagnosis.findings):
        return diagnosis
    return replace(diagnosis, findings=placed(diagnosis.findings, hang, snapshot))


def placed(logged: Sequence[Finding], live: Finding, snapshot: Snapshot | None) -> tuple[Finding, ...]:
    """The logs' findings with the hang read from the stacks placed among them: first (rule L1), or last where
    it is another job's (L2, :func:`ours`)."""
    if not ours(logged, snapshot):
        return (*logged, live_apart(live, logged))
    return (live_first(live, logged), *logged)


def ours(logged: Sequence[Finding], snapshot: Snapshot | None) -> bool:
    """Whether the capture's hung jobs are those of the logs: the logs say nothing worse than info, or a hung
    group's ranks run on a node one of their findings names, or under a store address one of them names."""
    serious = [f for f in logged if f.severity >= Severity.WARNING]
    if snapshot is None or not serious:
        return True
    hung = [g for g in snapshot.groups if g.verdict == "hang"]
    return not hung or any(belongs(g, f, snapshot) for g in hung for f in serious)


def words_path() -> Path:
    return builtin("diagnostics") / "liveness" / "rank-hang.toml"


@cache
def builtin_words() -> Words:
    return load_words(words_path())


def load_words(path: Path) -> Words:
    """The finding's words in ``path``. Raises :class:`WordsError`."""

    def error(reason: str) -> WordsError:
        return WordsError(f"{path}: {reason}")

    t = Table(read(path, error), lambda key, reason: error(f"{key}: {reason}"))
    t.known(["id", "category", "severity", "explanation", "playbooks"])
    category = t.text("category")
    if category not in CATEGORIES:
        raise t.fail("category", f"not a category of the taxonomy ({category!r})")
    severity = t.text("severity")
    try:
        level = Severity[severity.upper()]
    except KeyError:
        raise t.fail("severity", f"one of {', '.join(s.label for s in Severity)}") from None
    return Words(t.text("id"), category, level, t.text("explanation"), tuple(t.texts("playbooks", required=False)))
