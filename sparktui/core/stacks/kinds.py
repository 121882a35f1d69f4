"""Where a rank waits, as data: the wait kinds of ``diagnostics/stacks/`` (one file each, with examples from
real dumps), and the place of a process by them. Pure once loaded.

A kind matches a thread when one of its frames has a function matching ``match.functions`` (in a file
matching ``match.files``, when given); the frame it names is the outermost such frame (``new_group`` rather
than the ``_new_process_group_helper`` it calls). A kind without functions (idle, busy in Python) matches
the main thread by its status alone. Kinds are tried in ``order``, lowest first, over every thread; the
first that matches is the process's place, the Python frames read before native ones. A kind with ``progress = true``
(loading weights, compiling) is a long legitimate wait: the live watch (:mod:`sparktui.core.liveness`) reads a
rank there as slow, not stuck.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path

from sparktui.core.dirs import builtin
from sparktui.core.errors import Invalid
from sparktui.core.stacks.dump import Frame, Process, Thread, Unreadable, threads
from sparktui.core.tomlfile import Table, read

STATUSES = ("idle", "active", "gil")


class KindError(Invalid):
    """A wait-kind file that cannot be used; the message names the file and the key."""


@dataclass(frozen=True, slots=True)
class Example:
    stack: str
    function: str  # the frame the kind names ("" for a counter-example)


@dataclass(frozen=True, slots=True)
class WaitKind:
    id: str
    title: str
    order: int
    waits_on_peers: bool  # a rank here waits for the other ranks of its group
    driver: bool  # a process here drives the ranks (waits on them as a whole): no rank of the comparison
    functions: tuple[re.Pattern[str], ...]
    files: tuple[re.Pattern[str], ...]
    status: frozenset[str]
    examples: tuple[Example, ...] = ()
    counter_examples: tuple[str, ...] = ()
    path: Path | None = None
    progress: bool = False  # a long legitimate wait (loading, compiling): a rank here is slow, not stuck

    def frame(self, thread: Thread) -> Frame | None:
        """The outermost frame of ``thread`` this kind names, or None when it does not match."""
        if self.status and not self.status <= thread.status:
            return None
        if not self.functions:
            return _innermost_python(thread) if thread.frames else None
        found = None
        for frame in thread.frames:
            if any(p.search(frame.function) for p in self.functions) and (
                not self.files or any(p.search(frame.file) for p in self.files)
            ):
                found = frame
        return found


@dataclass(frozen=True, slots=True)
class Place:
    """Where a process is: the kind, the frame it names, and the thread it is in."""

    kind: WaitKind
    frame: Frame
    thread: Thread

    @property
    def key(self) -> tuple[str, str]:
        """What two ranks share when they wait in the same place: the kind and the function."""
        return self.kind.id, self.frame.function

    def describe(self) -> str:
        return f"{self.kind.title}: {self.frame.function}"


def _innermost_python(thread: Thread) -> Frame:
    return next((f for f in thread.frames if not f.native), thread.frames[0])


def place(process: Process, kinds: Sequence[WaitKind]) -> Place | None:
    """The first kind (by order) that matches a thread of ``process``, the main thread first; None when no
    kind matches (no thread, or none with frames). The Python frames are read first; native frames (``py-spy
    --native``) only where no Python frame names a place: the store wait that gloo does in native code under
    ``new_group`` is ``new_group``, as a dump without native frames says, not ``c10d::TCPStore::wait``."""
    main = process.main_thread
    ordered = sorted(process.threads, key=lambda t: t is not main)
    python = [replace(t, frames=tuple(f for f in t.frames if not f.native)) for t in ordered]
    for kind in (k for k in kinds if k.functions):
        for thread, seen in zip(ordered, python, strict=True):
            frame = kind.frame(seen)
            if frame is not None:
                return Place(kind, frame, thread)
    for kind in kinds:
        for thread in ordered:
            if not kind.functions and thread is not main:
                continue
            frame = kind.frame(thread)
            if frame is not None:
                return Place(kind, frame, thread)
    return None


def builtin_dir() -> Path:
    return builtin("diagnostics") / "stacks"


@cache
def builtin_kinds() -> tuple[WaitKind, ...]:
    return load(builtin_dir())


def load(folder: Path) -> tuple[WaitKind, ...]:
    """Every ``*.toml`` of ``folder``, by order. Raises :class:`KindError`."""
    kinds = [load_file(path) for path in sorted(folder.glob("*.toml"))]
    seen: dict[str, Path | None] = {}
    for kind in kinds:
        if kind.id in seen:
            raise KindError(f"{kind.path}: id {kind.id!r} is also {seen[kind.id]}'s")
        seen[kind.id] = kind.path
    return tuple(sorted(kinds, key=lambda k: k.order))


def load_file(path: Path) -> WaitKind:
    def error(reason: str) -> KindError:
        return KindError(f"{path}: {reason}")

    t = Table(read(path, error), lambda key, reason: error(f"{key}: {reason}"))
    t.known(["id", "title", "order", "waits_on_peers", "driver", "progress", "match", "examples"])
    kind_id = t.text("id")
    if kind_id != path.stem:
        raise t.fail("id", f"must be the file's name ({path.stem})")
    m = t.table("match")
    m.known(["functions", "files", "status"])
    status = frozenset(m.texts("status", required=False))
    if status - set(STATUSES):
        raise m.fail("status", f"one of {', '.join(STATUSES)}")
    order = t.data.get("order")
    if not isinstance(order, int) or isinstance(order, bool):
        raise t.fail("order", "an integer")
    ex = t.table("examples")
    ex.known(["match", "no_match"])
    examples = []
    for e in ex.tables("match"):
        e.known(["stack", "function"])
        examples.append(Example(e.text("stack"), e.text("function")))
    counter = []
    for e in ex.tables("no_match", required=False):
        e.known(["stack"])
        counter.append(e.text("stack"))
    kind = WaitKind(
        kind_id,
        t.text("title"),
        order,
        t.flag("waits_on_peers", default=False),
        t.flag("driver", default=False),
        _patterns(m, "functions"),
        _patterns(m, "files"),
        status,
        tuple(examples),
        tuple(counter),
        path,
        t.flag("progress", default=False),
    )
    if kind.progress and kind.waits_on_peers:
        raise t.fail("progress", "a rank making progress of its own waits on no peer: not with waits_on_peers")
    if kind.driver and kind.waits_on_peers:
        raise t.fail("driver", "a driver waits on its ranks, not as a peer: not with waits_on_peers")
    if not kind.functions and not kind.status:
        raise m.fail("functions", "give functions or a status")
    return kind


def _patterns(table: Table, key: str) -> tuple[re.Pattern[str], ...]:
    found = []
    for text in table.texts(key, required=False):
        try:
            found.append(re.compile(text))
        except re.error as exc:
            raise table.fail(key, f"{text!r} is no regular expression: {exc}") from None
    return tuple(found)


def check_examples(kind: WaitKind, kinds: Iterable[WaitKind]) -> list[str]:
    """What is wrong with ``kind``'s examples against the whole set ``kinds``: each example must be placed in
    ``kind`` naming its function, each counter-example anywhere else."""
    every = sorted(kinds, key=lambda k: k.order)
    problems = []
    for i, example in enumerate(kind.examples):
        found = _place_of(example.stack, every)
        if isinstance(found, str):
            problems.append(f"example {i}: {found}")
        elif found is None or found.kind.id != kind.id or found.frame.function != example.function:
            got = "nothing" if found is None else f"{found.kind.id} ({found.frame.function})"
            problems.append(f"example {i}: placed in {got}, not {kind.id} ({example.function})")
    for i, stack in enumerate(kind.counter_examples):
        found = _place_of(stack, every)
        if isinstance(found, str):
            problems.append(f"counter-example {i}: {found}")
        elif found is not None and found.kind.id == kind.id:
            problems.append(f"counter-example {i}: placed in {kind.id} ({found.frame.function})")
    return problems


def _place_of(stack: str, kinds: Sequence[WaitKind]) -> Place | str | None:
    try:
        found = threads(stack)
    except Unreadable as exc:
        return f"no thread in it: {exc}"
    return place(Process(0, "", "", tuple(found)), kinds)
