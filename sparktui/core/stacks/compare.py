"""Comparing the ranks of each group: who waits where, which ranks are elsewhere and what they do, which
are missing, and whether the dumps taken a few seconds apart show progress. Pure.

A group is the ranks of one job (one store address, else one engine). Its ranks that wait on their peers
(a wait kind with ``waits_on_peers``) mostly wait in one place; a rank elsewhere is named, with what it
does, as is a rank of the world size found on no node. A driver (``driver``: a process in ray.get, waiting
on the ranks as a whole) is shown but is no odd rank. The group **hangs** when its waiting ranks did not
move between the dumps and a rank is elsewhere or missing; it is **progressing** when a waiting rank moved
or any rank's place changed between the dumps; **together** when every rank waits in one place and nothing
moved (a healthy loop can look so as well: no rank is named).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from sparktui.core.stacks.dump import Process
from sparktui.core.stacks.kinds import Place, WaitKind, place
from sparktui.core.stacks.ranks import Rank


@dataclass(frozen=True, slots=True)
class RankView:
    rank: Rank
    place: Place | None
    moved: bool  # its stack changed between the dumps
    shifted: bool = False  # its place (kind or function) changed between the dumps
    odd: bool = False

    def now(self) -> str:
        """Where it is, in a few words."""
        if self.place is None:
            why = next((s.error for s in reversed(self.rank.samples) if s.error), "")
            return "gone" if self.rank.gone else (f"not read: {why}" if why else "not read")
        frame = self.place.frame
        return f"{self.place.kind.title}: {frame}"


@dataclass(frozen=True, slots=True)
class Group:
    job: str
    views: tuple[RankView, ...]
    verdict: str
    findings: tuple[str, ...]
    missing: tuple[int, ...] = ()
    seconds: float = 0.0  # between the first and last dump

    @property
    def hangs(self) -> bool:
        return self.verdict == "hang"


def compare(ranks: Iterable[Rank], kinds: Sequence[WaitKind]) -> list[Group]:
    """Every group of ``ranks``, by job, in order of the first rank found."""
    jobs: dict[str, list[Rank]] = {}
    for rank in ranks:
        jobs.setdefault(rank.job, []).append(rank)
    return [group(job, members, kinds) for job, members in jobs.items()]


def group(job: str, members: Sequence[Rank], kinds: Sequence[WaitKind]) -> Group:
    members = sorted(members, key=lambda r: (r.rank is None, r.rank or 0, r.node, r.pid))
    views = [RankView(r, _place(r.latest, kinds), *_moved(r, kinds)) for r in members]
    times = [s.at for r in members for s in r.samples if s.process is not None and s.at]
    seconds = max(times) - min(times) if times else 0.0
    world = max((r.world for r in members if r.world is not None), default=None)
    found = {r.rank for r in members if r.rank is not None}
    missing = tuple(i for i in range(world) if i not in found) if world is not None else ()
    waiting = [v for v in views if v.place is not None and v.place.kind.waits_on_peers]
    if not any(v.place is not None for v in views):
        return Group(job, tuple(views), "unread", ("no rank of this group could be read",), missing, seconds)
    if not waiting:
        what = "; ".join(f"{v.rank.name} {v.now()}" for v in views)
        return Group(job, tuple(views), "no-wait", (f"no rank waits on its peers: {what}",), missing, seconds)
    key, _ = Counter(v.place.key for v in waiting if v.place is not None).most_common(1)[0]
    together = [v for v in views if v.place is not None and v.place.key == key]
    odd = [v for v in views if v not in together and not (v.place is not None and v.place.kind.driver)]
    views = [RankView(v.rank, v.place, v.moved, v.shifted, v in odd) for v in views]
    moved = any(v.shifted or (v.moved and v.place is not None and v.place.kind.waits_on_peers) for v in views)
    anchor = together[0].place
    assert anchor is not None
    waiters = _names([v.rank for v in together])
    verb = "waits" if len(together) == 1 else "wait"
    findings = []
    for v in (v for v in views if v.odd):
        findings.append(_odd(v, anchor, waiters, verb))
    if missing:
        were = "were" if len(missing) > 1 else "was"
        findings.append(
            f"{_numbers(list(missing))} of {world} {were} found on no node searched, while {waiters} {verb} in "
            f"{anchor.frame.function}"
        )
    span = f" {seconds:.1f} s apart" if seconds else ""
    if moved:
        verdict = "progressing"
        findings.append(f"the ranks moved between the dumps{span}: progressing")
    elif odd or missing:
        verdict = "hang"
        findings.append(f"{waiters} did not move between the dumps{span}")
    else:
        verdict = "together"
        findings.append(
            f"every rank waits in {anchor.describe()}{' unchanged between the dumps' + span if span else ''}; "
            "no rank is elsewhere"
        )
    return Group(job, tuple(views), verdict, tuple(findings), missing, seconds)


def _odd(v: RankView, anchor: Place, waiters: str, verb: str) -> str:
    where = anchor.frame.function
    if v.place is None:
        return f"{v.rank.name} is {v.now()}, while {waiters} {verb} in {where}"
    if v.place.kind.waits_on_peers:
        return (
            f"{v.rank.name} waits in {v.place.frame.function} ({v.place.kind.title}), not in {where}, which "
            f"{waiters} {verb} in: mismatched"
        )
    busy = ", still moving," if v.moved else ""
    gpu = f" (its GPU: {v.rank.gpu})" if v.rank.gpu is not None else ""
    return (
        f"{v.rank.name} is {v.place.kind.title}, in {v.place.frame}{busy} and never entered {where}, "
        f"which {waiters} {verb} in{gpu}"
    )


def _place(process: Process | None, kinds: Sequence[WaitKind]) -> Place | None:
    return place(process, kinds) if process is not None else None


def _moved(rank: Rank, kinds: Sequence[WaitKind]) -> tuple[bool, bool]:
    """Whether the thread the rank is placed by changed between its dumps, and whether its place did."""
    places = [place(s.process, kinds) for s in rank.samples if s.process is not None]
    frames = {None if p is None else (p.key, p.thread.frames) for p in places}
    keys = {None if p is None else p.key for p in places}
    return len(frames) > 1, len(keys) > 1


def _names(ranks: Sequence[Rank]) -> str:
    """``rank 0``, ``ranks 0-2``, ``ranks 0, 2``; by node and pid for ranks without a number."""
    numbers = [r.rank for r in ranks if r.rank is not None]
    others = [r.name for r in ranks if r.rank is None]
    return ", ".join(([_numbers(numbers)] if numbers else []) + others)


def _numbers(numbers: Sequence[int]) -> str:
    if len(numbers) == 1:
        return f"rank {numbers[0]}"
    if len(numbers) > 2 and list(numbers) == list(range(numbers[0], numbers[0] + len(numbers))):
        return f"ranks {numbers[0]}-{numbers[-1]}"
    return "ranks " + ", ".join(str(n) for n in numbers)


#: What a search that found no rank process, and was kept from nothing, says.
NONE_FOUND = "no rank process found (torch.distributed ranks, vLLM/SGLang/Ray workers, GPU users)"
#: What it says when something could not be read: a node that did not answer, processes not ours to inspect.
NOT_ALL_CLEAR = "no rank process read, and this is no all-clear"


def none_found(problems: Sequence[str]) -> str:
    """The one-line headline of a search that found no group: nothing runs, or no all-clear at all, with what
    could not be read first."""
    if not problems:
        return NONE_FOUND
    more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
    return f"{NOT_ALL_CLEAR}: {problems[0]}{more}"


def exit_code(groups: Sequence[Group], problems: Sequence[str] = ()) -> int:
    """1 when a group hangs on a rank elsewhere or missing; else 2 when something could not be read (a node,
    a container, a group's ranks), so the answer is partial; else 0."""
    if any(g.hangs for g in groups):
        return 1
    return 2 if problems or any(g.verdict == "unread" for g in groups) else 0


def as_dict(groups: Sequence[Group], problems: Sequence[str] = ()) -> dict[str, Any]:
    return {
        "version": 1,
        "verdict": {0: "no-hang", 1: "hang", 2: "partial"}[exit_code(groups, problems)],
        "groups": [
            {
                "job": g.job,
                "verdict": g.verdict,
                "findings": list(g.findings),
                "missing_ranks": list(g.missing),
                "seconds_between_dumps": round(g.seconds, 3),
                "ranks": [_rank(v) for v in g.views],
            }
            for g in groups
        ],
        "problems": list(problems),
    }


def _rank(v: RankView) -> dict[str, Any]:
    r = v.rank
    latest = r.latest
    return {
        "rank": r.rank,
        "world_size": r.world,
        "node": r.node,
        "place": r.place,
        "pid": r.pid,
        "command": r.command,
        "wait": None if v.place is None else v.place.kind.id,
        "function": None if v.place is None else v.place.frame.function,
        "frame": None if v.place is None else str(v.place.frame),
        "status": None if v.place is None else v.place.thread.status_text,
        "now": v.now(),
        "odd": v.odd,
        "moved": v.moved,
        "gpu": None if r.gpu is None else str(r.gpu),
        "errors": [s.error for s in r.samples if s.error],
        "threads": []
        if latest is None
        else [{"name": t.name, "status": t.status_text, "frames": [str(f) for f in t.frames]} for t in latest.threads],
    }
