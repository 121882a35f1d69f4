"""One capture of every rank's stack, kept as plain data: what the cockpit shows, what a report, a bundle
(``stacks.json``) and a replay carry. Made from the comparison's groups (:mod:`sparktui.core.stacks.compare`);
redacted as the rest of an incident is (its texts through one function, its node names through another).
Pure, but for :func:`read` and :meth:`Snapshot.write`."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sparktui.core.stacks.compare import Group, RankView, none_found

#: The file a bundle (or an incident folder) keeps the last capture in.
FILE = "stacks.json"
VERSION = 1


class SnapshotError(ValueError):
    """A ``stacks.json`` that cannot be used; the message is one line."""


@dataclass(frozen=True, slots=True)
class RankNow:
    """Where one rank was: its node, place (``host`` or the container), process, and what it was doing."""

    node: str
    place: str
    pid: int
    rank: int | None
    wait: str  # the wait kind's id ("" when it could not be read)
    function: str  # the function it waits in (the frame its wait kind names)
    now: str  # in a few words: the wait kind's title and the frame
    status: str = ""  # py-spy's status of the thread it is placed by (idle, active, gil)
    odd: bool = False  # elsewhere than its group's waiting ranks
    moved: bool = False
    gpu: str = ""
    stack: tuple[str, ...] = ()  # the frames of the thread it is placed by, innermost first

    @property
    def who(self) -> str:
        return f"rank {self.rank}" if self.rank is not None else f"pid {self.pid}"

    @property
    def where(self) -> str:
        return self.node if self.place == "host" else f"{self.node}/{self.place}"


@dataclass(frozen=True, slots=True)
class GroupNow:
    """The ranks of one job, the comparison's verdict and what it names (the odd ranks, missing ranks)."""

    job: str
    verdict: str  # hang, progressing, together, no-wait, unread
    findings: tuple[str, ...]
    ranks: tuple[RankNow, ...]


@dataclass(frozen=True, slots=True)
class Snapshot:
    """A capture: when, over which nodes, every group, what could not be read, the findings it was taken for
    (the stall findings its "now" part is folded into), each node's host name as the node gave it (the
    name its logs know it by: ``local`` is this machine's), and what NCCL's RAS said on each node (each
    entry of its report in a line: :mod:`~sparktui.core.stacks.ras`)."""

    taken: datetime
    where: str
    groups: tuple[GroupNow, ...]
    problems: tuple[str, ...] = ()
    findings: tuple[str, ...] = ()  # signature ids
    seconds: float = 0.0  # how long the gathering took
    hosts: tuple[tuple[str, str], ...] = ()  # (node, its host name), for the nodes that answered
    ras: tuple[tuple[str, str], ...] = ()  # (node, an entry of its RAS report)

    def names(self, node: str) -> set[str]:
        """The names ``node`` goes by: its own and its host name."""
        return {node, *(h for n, h in self.hosts if n == node and h)}

    @property
    def verdict(self) -> str:
        """hang (ranks wait on a rank elsewhere or missing), partial (something could not be read), no-hang."""
        if any(g.verdict == "hang" for g in self.groups):
            return "hang"
        return "partial" if self.problems or any(g.verdict == "unread" for g in self.groups) else "no-hang"

    @property
    def ranks(self) -> list[RankNow]:
        return [r for g in self.groups for r in g.ranks]

    def headline(self) -> str:
        """One line: the verdict and what it names first."""
        hung = [g for g in self.groups if g.verdict == "hang"]
        if hung:
            return hung[0].findings[0]
        if not self.groups:
            return none_found(self.problems)
        counted = f"{len(self.ranks)} rank{'s' if len(self.ranks) != 1 else ''}"
        verdicts = ", ".join(sorted({g.verdict for g in self.groups}))
        return f"{counted}, {verdicts}" + (f"; {len(self.problems)} not read" if self.problems else "")

    def as_dict(self) -> dict[str, Any]:
        return {
            "version": VERSION,
            "taken": self.taken.isoformat(),
            "where": self.where,
            "verdict": self.verdict,
            "seconds": round(self.seconds, 3),
            "findings": list(self.findings),
            "problems": list(self.problems),
            "hosts": dict(self.hosts),
            "ras": [{"node": n, "said": s} for n, s in self.ras],
            "groups": [
                {
                    "job": g.job,
                    "verdict": g.verdict,
                    "findings": list(g.findings),
                    "ranks": [{**_rank_dict(r), "stack": list(r.stack)} for r in g.ranks],
                }
                for g in self.groups
            ],
        }

    def redacted(self, text: Callable[[str], str], node: Callable[[str], str]) -> Snapshot:
        """Every text from the nodes (commands, frames, jobs, findings) through ``text``, node names through
        ``node``."""
        groups = tuple(
            GroupNow(
                text(g.job),
                g.verdict,
                tuple(map(text, g.findings)),
                tuple(
                    replace(
                        r,
                        node=node(r.node),
                        place=text(r.place),
                        function=text(r.function),
                        now=text(r.now),
                        gpu=text(r.gpu),
                        stack=tuple(map(text, r.stack)),
                    )
                    for r in g.ranks
                ),
            )
            for g in self.groups
        )
        hosts = tuple((node(n), node(h)) for n, h in self.hosts)
        ras = tuple((node(n), text(s)) for n, s in self.ras)
        return replace(
            self, where=text(self.where), groups=groups, problems=tuple(map(text, self.problems)), hosts=hosts, ras=ras
        )

    def write(self, folder: Path) -> Path:
        path = folder / FILE
        path.write_text(json.dumps(self.as_dict(), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        return path


def of(
    groups: Sequence[Group],
    problems: Sequence[str],
    where: str,
    *,
    findings: Iterable[str] = (),
    seconds: float = 0.0,
    taken: datetime | None = None,
    hosts: Mapping[str, str] | None = None,
    ras: Iterable[tuple[str, str]] = (),
) -> Snapshot:
    """The capture of the comparison's ``groups``; ``hosts``: each node's host name, as it gave it; ``ras``:
    (node, entry) for each entry of a node's RAS report."""
    return Snapshot(
        taken or datetime.now(UTC),
        where,
        tuple(GroupNow(g.job, g.verdict, g.findings, tuple(_rank(v) for v in g.views)) for g in groups),
        tuple(problems),
        tuple(findings),
        seconds,
        tuple(sorted((hosts or {}).items())),
        tuple(ras),
    )


def _rank(v: RankView) -> RankNow:
    r, p = v.rank, v.place
    return RankNow(
        r.node,
        r.place,
        r.pid,
        r.rank,
        "" if p is None else p.kind.id,
        "" if p is None else p.frame.function,
        v.now(),
        "" if p is None else p.thread.status_text,
        v.odd,
        v.moved,
        "" if r.gpu is None else str(r.gpu),
        () if p is None else tuple(str(f) for f in p.thread.frames),
    )


def _rank_dict(r: RankNow) -> dict[str, Any]:
    return {
        "node": r.node,
        "place": r.place,
        "pid": r.pid,
        "rank": r.rank,
        "wait": r.wait,
        "function": r.function,
        "now": r.now,
        "status": r.status,
        "odd": r.odd,
        "moved": r.moved,
        "gpu": r.gpu,
    }


def from_dict(d: Any) -> Snapshot:
    """The snapshot :meth:`Snapshot.as_dict` wrote; raises :class:`SnapshotError`."""
    try:
        if d["version"] != VERSION:
            raise SnapshotError(f"version {d['version']!r}, not {VERSION}")
        taken = datetime.fromisoformat(str(d["taken"]))
        if taken.tzinfo is None:
            raise SnapshotError("taken: no time zone")
        groups = tuple(
            GroupNow(
                str(g["job"]),
                str(g["verdict"]),
                tuple(str(f) for f in g["findings"]),
                tuple(_rank_of(r) for r in g["ranks"]),
            )
            for g in d["groups"]
        )
        return Snapshot(
            taken,
            str(d["where"]),
            groups,
            tuple(str(p) for p in d.get("problems", ())),
            tuple(str(f) for f in d.get("findings", ())),
            float(d.get("seconds", 0.0)),
            tuple((str(n), str(h)) for n, h in dict(d.get("hosts", {})).items()),
            tuple((str(r["node"]), str(r["said"])) for r in d.get("ras", ())),
        )
    except SnapshotError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise SnapshotError(f"not a capture of the stacks ({type(exc).__name__}: {exc})") from None


def _rank_of(r: dict[str, Any]) -> RankNow:
    rank = r.get("rank")
    return RankNow(
        str(r["node"]),
        str(r["place"]),
        int(r["pid"]),
        None if rank is None else int(rank),
        str(r.get("wait", "")),
        str(r.get("function", "")),
        str(r.get("now", "")),
        str(r.get("status", "")),
        bool(r.get("odd", False)),
        bool(r.get("moved", False)),
        str(r.get("gpu", "")),
        tuple(str(f) for f in r.get("stack", ())),
    )


def read(folder: Path) -> Snapshot | None:
    """The capture kept in ``folder`` (a bundle, an incident folder); None when there is none. Raises
    :class:`SnapshotError` for one that cannot be used."""
    path = folder / FILE
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise SnapshotError(f"{path}: {exc.strerror or exc}") from None
    try:
        return from_dict(json.loads(text))
    except json.JSONDecodeError as exc:
        raise SnapshotError(f"{path}: not JSON: {exc}") from None
    except SnapshotError as exc:
        raise SnapshotError(f"{path}: {exc}") from None
