"""The spool: every line received, kept on the machine running sparktui, as a replayable bundle.

Logs vanish with the containers and nodes that wrote them (``--rm``, exit traps, a node that died), so a
live session writes each source's lines as they arrive into ``<state dir>/incidents/<time>/``, in the
bundle layout (:mod:`sparktui.core.sources.bundle`): the log, its ``.times`` file and a ``bundle.toml``
kept up to date. ``sparktui replay`` and ``sparktui diagnose`` open it like any bundle. Each source is
bounded: past :data:`MAX_BYTES` its files rotate once (``.1``), so the newest lines are always kept. So are
its open files: those of the :data:`OPEN_SOURCES` sources written last, each reopened (appending) when its next
batch comes, so a session following thousands of files does not take two descriptors for each.

Logs carry tokens and passwords, and this folder is what a user hands on with a bug report, so the spool
is private:

* secrets are redacted as lines are written, by the rules exports use (:mod:`sparktui.core.redact`), each
  source's batches as one text (a private key split across two batches goes whole); a line stays one
  line, so ``.times`` files and replays stay true. Only ``raw`` (``--spool-raw``) keeps
  them, and ``bundle.toml`` says which (``redacted``);
* the incident folder is 0700 and every file in it 0600, by the mode each is created with, so no other
  user can read any of it at any moment; a umask that takes the owner's own rights away is put right on
  the descriptor, so the modes are these whatever the umask.

A new spool (:meth:`Spool.new`) first removes the old incidents that the settings' ``[spool]``
(:mod:`sparktui.core.settings`) does not keep, oldest first: those last written too long ago, then as
many as the total size needs. Never one a live spool is writing: each holds a lock on its folder.

Each batch written is followed by a checkpoint (``checkpoint.jsonl``, one JSON object a line): the source (by a
digest of its name), its files' sizes and the cursor of the batch's source just after it, so a later session of
the same inputs (:meth:`Spool.resume`) goes on in the same incident: each file is cut back to its last
checkpoint (a batch written whole whose checkpoint was not is read again, never kept twice), its lines are
analysed again from here (:mod:`sparktui.core.intake.resume`) and the source read on from the cursor. The
checkpoint names no source and holds no line: only digests, sizes and cursors (file positions, offsets).

A write that fails (a full disk or quota, a file too big, a failing device: any :class:`OSError`) stops the
spool, never the session: the files are cut to the lines both a log and its ``.times`` hold whole, so what
was kept stays a bundle; nothing more is written, and :attr:`Spool.warning` says why and how much was not
kept, for the front ends to say.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import resource
import shutil
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from sparktui.core import settings, tomlfile
from sparktui.core.dirs import DIR_MODE, private_dir, private_file, state_dir
from sparktui.core.errors import Invalid
from sparktui.core.redact import PieceRedactor, redact
from sparktui.core.settings import SpoolSettings
from sparktui.core.sources.base import Cursor

MAX_BYTES = 64 << 20
#: The sources whose files stay open between writes (two descriptors each); another's are reopened to write.
#: Fewer under a soft limit on open files below 1,024: a sixteenth of it.
OPEN_SOURCES = 64
#: Seconds at least between two writes of ``bundle.toml`` once it lists :data:`OPEN_SOURCES` sources, while
#: more keep appearing (thousands of files followed would otherwise write it as many times, each longer); it
#: is written at :meth:`Spool.close` too, and when the spool stops.
MANIFEST_SECONDS = 1.0
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")
#: The names :meth:`Spool.new` gives incident folders: pruning removes nothing else from incidents/.
_STAMP = re.compile(r"\d{8}-\d{6}(?:-\d+)?")
#: The checkpoints of an incident: after each batch, where its source stood (see the module's note).
CHECKPOINT = "checkpoint.jsonl"


def digest(text: str) -> str:
    """How the checkpoint names a source, or a session's inputs: no name in it, yet the same one found again."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


@dataclass(frozen=True, slots=True)
class Resume:
    """Where a source of a resumed incident stood: the spooled files that hold what it read (oldest first,
    each to its byte count), their lines, and the cursor to read the source on from."""

    files: tuple[tuple[Path, int], ...]
    cursor: Cursor
    incident: Path


@dataclass
class _Open:
    name: str
    node: str
    file: str
    log: TextIO | None = None  # open while it is one of the sources written last (see Spool._hold)
    times: TextIO | None = None
    size: int = 0
    redact: PieceRedactor = field(default_factory=PieceRedactor)  # the source's batches are one text
    key: str = ""  # the digest of the source's name, in the checkpoint
    stamps: int = 0  # bytes of its .times file
    cursor: Cursor | None = None  # the cursor of its source after the last batch kept


@dataclass
class Spool:
    """Writes lines per source into the folder ``path`` (made private, and locked while it is written);
    :meth:`close` flushes everything. Never raises for content."""

    path: Path
    title: str = "live session"
    raw: bool = False  # keep secrets (the user asked for a raw copy)
    max_bytes: int = MAX_BYTES
    open_sources: int = OPEN_SOURCES
    _files: dict[str, _Open] = field(default_factory=dict)
    _held: dict[str, _Open] = field(default_factory=dict)  # file -> entry whose files are open, oldest first
    _listed: float = -MANIFEST_SECONDS  # when bundle.toml was last written (monotonic)
    _unlisted: bool = False  # a source is not in bundle.toml yet
    _start: float = field(default_factory=time.monotonic)
    _lock: int = -1
    inputs: str = ""  # the digest of the session's inputs: a later session of the same resumes this one
    _marks: TextIO | None = None  # checkpoint.jsonl, open once the first batch was kept
    _resumed: dict[str, _Open] = field(default_factory=dict)  # digest -> a source the resumed session read
    _taken: dict[str, _Open] = field(default_factory=dict)  # those whose source resumes (see resume_of)
    resumed: bool = False  # it goes on with an earlier session's incident (see resume)
    _last_ms: int = 0  # the last time stamp written
    stopped: str = ""  # why writing stopped (a full disk): nothing more is written
    lost: int = 0  # bytes of the lines received that were not kept, since it stopped

    def __post_init__(self) -> None:
        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        if soft != resource.RLIM_INFINITY:  # a low limit on open files (ulimit -n 256) keeps fewer open
            self.open_sources = min(self.open_sources, max(4, soft // 16))
        self._lock = private_dir(self.path)
        try:
            fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(self._lock)
            raise Invalid(f"{self.path}: another live session keeps its spool there") from None
        if not self.raw:
            self.title = redact(self.title)

    @classmethod
    def new(
        cls,
        title: str,
        *,
        raw: bool = False,
        root: Path | None = None,
        keep: SpoolSettings | None = None,
        inputs: Sequence[str] = (),
    ) -> Spool:
        """A spool in a new incident folder under ``root`` (default: the state folder), once the old
        incidents that ``keep`` (default: the settings file's) does not keep are removed. ``inputs`` (the
        arguments naming its sources) go into its checkpoint, so that a later session of the same resumes it
        (:meth:`resume`), a ``--fresh`` one included; none: no later session resumes it."""
        keep = keep or settings.load().spool
        base = (root or state_dir()) / "incidents"
        os.close(private_dir(base.parent))  # the state folder, and the incidents: they list what was spooled
        os.close(private_dir(base))
        stamp = time.strftime("%Y%m%d-%H%M%S")
        path, n = base / stamp, 1
        while True:
            try:
                os.mkdir(path, DIR_MODE)
                break
            except FileExistsError:
                n += 1
                path = base / f"{stamp}-{n}"
        spool = cls(path, title, raw, inputs=_key(inputs) if inputs else "")
        prune(base, keep, current=path)
        return spool

    @property
    def warning(self) -> str:
        """What a front end says once the spool stopped ("" while it writes)."""
        return f"spool stopped: {self.stopped}; {self.lost} bytes not kept" if self.stopped else ""

    def write(
        self, source: str, node: str, lines: tuple[str, ...], at: float | None = None, cursor: Cursor | None = None
    ) -> None:
        """Keep ``lines`` of ``source``; ``cursor`` is where the source stands just after them (checkpointed)."""
        if not lines:
            return
        text = "".join(f"{line}\n" for line in lines)
        if self.stopped:
            self.lost += len(text.encode("utf-8", "replace"))
            return
        ms = int(((time.monotonic() if at is None else at) - self._start) * 1000)
        counted = False
        try:
            entry = self._files.get(source) or self._open(source, node)
            if not self.raw:
                text = entry.redact(text)
            size = len(text.encode("utf-8", "replace"))
            if entry.size and entry.size + size > self.max_bytes:
                self._rotate(entry)
            entry.size += size  # counted before it is written: what does not land, _stop counts as lost
            counted = True
            log, times = self._hold(entry)
            # The times first, on disk at once (a few bytes): a disk that fills up then cuts the log, whose
            # whole lines are kept, never the times that date them. Then the lines, on disk at once too: a
            # session killed, or a reader of the incident meanwhile, finds every batch received.
            stamps = f"{ms}\n" * len(lines)
            times.write(stamps)
            times.flush()
            log.write(text)
            log.flush()
            entry.stamps += len(stamps)
            self._last_ms = ms
            if cursor is not None:
                entry.cursor = cursor
                self._checkpoint(entry)
            if self._unlisted and time.monotonic() - self._listed >= MANIFEST_SECONDS:
                self._manifest()
        except OSError as exc:
            self._stop(exc)
            if not counted:
                self.lost += len(text.encode("utf-8", "replace"))

    def flush(self) -> None:
        if self.stopped:
            return
        try:
            for entry in self._held.values():
                for file in (entry.log, entry.times):
                    if file is not None:
                        file.flush()
        except OSError as exc:
            self._stop(exc)

    def close(self) -> None:
        """Flush and close every file, and let go of the folder's lock. A folder that nothing was written
        to (every source failed to connect, or sent no line) is removed: it is no incident."""
        self.flush()
        if self._unlisted and not self.stopped:
            try:
                self._manifest()
            except OSError as exc:
                self._stop(exc)
        for entry in list(self._held.values()):
            try:
                self._release(entry)
            except OSError as exc:  # its last bytes did not fit
                self._stop(exc)
        self._close_marks()
        if not self._files:
            with contextlib.suppress(OSError):  # not empty: something else (a playbook's audit) was kept
                os.rmdir(self.path)
        self._files.clear()
        if self._lock >= 0:
            os.close(self._lock)
            self._lock = -1

    def _open(self, source: str, node: str) -> _Open:
        key = digest(source)
        if (resumed := self._taken.pop(key, None)) is not None:  # the same file, written on
            self._files[source] = self._files.pop(f"\0{key}")
            return resumed
        name = source if self.raw else redact(source)
        folder, stem = _UNSAFE.sub("_", node), _UNSAFE.sub("_", name).removesuffix(".log")
        folder = "_" if set(folder) <= {"."} else folder  # never "", "." or "..": the log stays inside
        file = f"{folder}/{stem}.log"
        taken = {e.file for e in self._files.values()}
        n = 1
        while file in taken:
            n += 1
            file = f"{folder}/{stem}-{n}.log"
        os.close(private_dir((self.path / file).parent))
        entry = _Open(name, node, file, key=key)
        self._hold(entry)  # made now, so that the manifest names files that are there
        self._files[source] = entry
        self._unlisted = True
        if len(self._files) <= self.open_sources or time.monotonic() - self._listed >= MANIFEST_SECONDS:
            self._manifest()
        return entry

    def _hold(self, entry: _Open) -> tuple[TextIO, TextIO]:
        """The entry's files, opened (appending) if they are not, as the ones written last: the files of the
        source written longest ago are closed while more than :attr:`open_sources` sources' would be open."""
        self._held.pop(entry.file, None)
        if entry.log is None or entry.times is None:
            while self._held and len(self._held) >= self.open_sources:
                self._release(next(iter(self._held.values())))
            entry.times = entry.times or private_file(self.path / f"{entry.file}.times")
            entry.log = entry.log or private_file(self.path / entry.file)
        self._held[entry.file] = entry
        return entry.log, entry.times

    def _release(self, entry: _Open) -> None:
        """Close the entry's files (their buffers written first), until it is written again."""
        self._held.pop(entry.file, None)
        log, times, entry.log, entry.times = entry.log, entry.times, None, None
        for file in (times, log):
            if file is not None:
                file.close()

    def _stop(self, exc: OSError) -> None:
        """Stop writing, for ``exc``: every file is closed (what it still held in memory is dropped) and
        cut to its whole lines, and what was received but is not on disk is counted in :attr:`lost`."""
        if self.stopped:
            return
        self.stopped = os.strerror(exc.errno) if exc.errno else str(exc)
        for entry in self._files.values():
            for file in (entry.log, entry.times):
                if file is not None:
                    with contextlib.suppress(OSError, ValueError):  # the bytes that do not fit, or closed already
                        file.close()
            entry.log = entry.times = None
            self.lost += max(entry.size - _whole_lines(self.path / entry.file), 0)
        self._held.clear()
        with contextlib.suppress(OSError, ValueError):
            self._close_marks()
        with contextlib.suppress(OSError):
            if self._unlisted:  # sources it does not list yet: they are kept, if it fits
                self._manifest()
        with contextlib.suppress(OSError):
            (self.path / "bundle.toml.tmp").unlink()  # a manifest that did not fit: the last one stays

    def _rotate(self, entry: _Open) -> None:
        """Move the entry's files to ``.1`` (closed first): its next write makes new ones."""
        self._release(entry)
        log = self.path / entry.file
        os.replace(log, f"{log}.1")
        os.replace(f"{log}.times", f"{log}.1.times")
        entry.size = entry.stamps = 0
        if entry.cursor is not None:  # what a resume would read again: the new file, empty so far
            self._checkpoint(entry)

    def _checkpoint(self, entry: _Open) -> None:
        """Note where ``entry``'s source stands, with its files' sizes: on disk at once, as the lines are."""
        if self._marks is None:
            self._marks = private_file(self.path / CHECKPOINT)
            self._marks.write(json.dumps({"inputs": self.inputs, "redacted": not self.raw}) + "\n")
        mark = {"key": entry.key, "file": entry.file, "log": entry.size, "times": entry.stamps}
        self._marks.write(json.dumps({**mark, "ms": self._last_ms, "cursor": entry.cursor}) + "\n")
        self._marks.flush()

    def _close_marks(self) -> None:
        marks, self._marks = self._marks, None
        if marks is not None:
            marks.close()

    @classmethod
    def resume(
        cls,
        title: str,
        inputs: Sequence[str],
        *,
        raw: bool = False,
        root: Path | None = None,
        keep: SpoolSettings | None = None,
    ) -> Spool:
        """The spool of the last session of the same ``inputs`` (the arguments naming its sources), gone on
        from its checkpoint where that session ended (no live session holds it) and kept lines the same way
        (redacted or ``raw``); otherwise a new one (:meth:`new`). See :attr:`resumed`."""
        key = _key(inputs)
        keep = keep or settings.load().spool
        base = (root or state_dir()) / "incidents"
        if base.is_dir():
            prune(base, keep)  # one the settings do not keep is not resumed either
            stamps = sorted((e.name for e in os.scandir(base) if _STAMP.fullmatch(e.name)), key=_stamp_order)
            for name in reversed(stamps):
                head = _checkpoint_head(base / name)
                if head.get("inputs") != key:
                    continue
                if head.get("redacted") == raw:
                    break  # kept the other way: a resume would mix redacted and raw lines
                try:
                    spool = cls(base / name, title, raw, inputs=key)
                except (Invalid, OSError):
                    break  # a live session writes it, or it went
                if spool._take_up():
                    return spool
                spool.close()
                break
        return cls.new(title, raw=raw, root=root, keep=keep, inputs=inputs)

    def resume_of(self, source: str) -> Resume | None:
        """Where ``source`` stood when the resumed session ended, or None (not in it: read from its start).
        Asked once per source, by a source that reads on from the cursor: its lines are then written on in
        the same file; another source of the same name (one that cannot resume) gets a file of its own."""
        key = digest(source)
        entry = self._resumed.pop(key, None)
        if entry is None or entry.cursor is None:
            return None
        self._taken[key] = entry
        log = self.path / entry.file
        older = Path(f"{log}.1")
        files = ((older, older.stat().st_size),) if older.is_file() else ()
        return Resume((*files, (log, entry.size)), entry.cursor, self.path)

    def _take_up(self) -> bool:
        """Take up this incident's sources where its checkpoint says (each file cut back to it): True when one
        can be resumed at least. Every source it lists stays listed."""
        try:
            listed = tomlfile.read(self.path / "bundle.toml", lambda reason: Invalid(reason))
            marks = _checkpoints(self.path / CHECKPOINT)
        except (Invalid, OSError):
            return False
        by_file: dict[str, _Open] = {}
        for item in listed.get("sources", []):
            if not isinstance(item, dict) or not all(isinstance(item.get(k), str) for k in ("name", "node", "origin")):
                return False
            by_file[item["name"]] = _Open(item["origin"], item["node"], item["name"])
        for mark in marks.values():
            entry = by_file.get(mark["file"])
            if entry is None or not _cut(self.path / entry.file, mark["log"], mark["times"]):
                continue
            entry.key, entry.size, entry.stamps, entry.cursor = mark["key"], mark["log"], mark["times"], mark["cursor"]
            self._resumed[entry.key] = entry
            self._last_ms = max(self._last_ms, mark["ms"])
        for entry in by_file.values():  # each listed under a name no source has until its source is read again
            self._files[f"\0{entry.key or entry.file}"] = entry
        self._start = time.monotonic() - self._last_ms / 1000  # the times go on from the last one
        self.resumed = bool(self._resumed)
        return self.resumed

    def _manifest(self) -> None:
        lines = [
            "format = 1",
            f"title = {tomlfile.string(self.title)}",
            f"created = {tomlfile.string(time.strftime('%Y-%m-%dT%H:%M:%S'))}",
            f"redacted = {tomlfile.string('none' if self.raw else 'secrets')}",
        ]
        for entry in self._files.values():
            lines += [
                "",
                "[[sources]]",
                f"name = {tomlfile.string(entry.file)}",
                f"node = {tomlfile.string(entry.node)}",
                f"origin = {tomlfile.string(entry.name)}",
            ]
        tmp = self.path / "bundle.toml.tmp"
        with private_file(tmp, append=False) as out:
            out.write("\n".join(lines) + "\n")
        tmp.replace(self.path / "bundle.toml")
        self._listed, self._unlisted = time.monotonic(), False


def _stamp_order(name: str) -> tuple[str, int]:
    """An incident folder's name in the order they were made (``-2`` after the one of the same second)."""
    return name[:15], int(name[16:] or 1)


def _key(inputs: Sequence[str]) -> str:
    """How a checkpoint names a session's inputs."""
    return digest("\n".join(inputs))


def _checkpoint_head(incident: Path) -> dict[str, Any]:
    """The first line of an incident's checkpoint (its inputs, whether it redacts), or {} (none, unreadable)."""
    try:
        with open(incident / CHECKPOINT, encoding="utf-8") as marks:
            head = json.loads(marks.readline())
    except (OSError, ValueError):
        return {}
    return head if isinstance(head, dict) else {}


def _checkpoints(path: Path) -> dict[str, dict[str, Any]]:
    """The last checkpoint of each source (by its digest); a line cut short (a session killed mid-write) or
    of another shape is passed over."""
    last: dict[str, dict[str, Any]] = {}
    with open(path, encoding="utf-8", errors="replace") as marks:
        for line in marks:
            try:
                mark = json.loads(line)
            except ValueError:
                continue
            shapes = {"key": str, "file": str, "log": int, "times": int, "ms": int}
            if not isinstance(mark, dict) or not all(isinstance(mark.get(k), t) for k, t in shapes.items()):
                continue
            if isinstance(mark.get("cursor"), int | float | str):
                last[mark["key"]] = mark
    return last


def _cut(log: Path, size: int, stamps: int) -> bool:
    """Cut ``log`` and its ``.times`` back to the sizes a checkpoint gave (what was written after it is read
    again); False where either holds less than that (lost meanwhile: the source is read from its start)."""
    try:
        with open(log, "r+b") as text, open(f"{log}.times", "r+b") as times:
            if os.fstat(text.fileno()).st_size < size or os.fstat(times.fileno()).st_size < stamps:
                return False
            text.truncate(size)
            times.truncate(stamps)
            return True
    except OSError:
        return False


def _whole_lines(log: Path) -> int:
    """Cut the log at ``log`` and its ``.times`` to the lines both hold whole (a write that failed leaves
    half a line, or lines in one and not yet in the other); the bytes the log keeps."""
    try:
        with open(log, "r+b") as text, open(f"{log}.times", "r+b") as times:
            lines, stamps = text.read(), times.read()
            keep = min(lines.count(b"\n"), stamps.count(b"\n"))
            kept = _first(lines, keep)
            text.truncate(kept)
            times.truncate(_first(stamps, keep))
            return kept
    except OSError:
        return 0


def _first(data: bytes, lines: int) -> int:
    """The length of the first ``lines`` lines of ``data``, which holds at least that many whole."""
    end = data.rfind(b"\n") + 1
    for _ in range(data.count(b"\n") - lines):
        end = data.rfind(b"\n", 0, end - 1) + 1
    return end


def prune(incidents: Path, keep: SpoolSettings, *, current: Path | None = None, now: float | None = None) -> list[Path]:
    """Remove from ``incidents`` the incident folders ``keep`` does not keep, oldest first (by the last time
    anything in them was written): each written longer ago than ``keep_days``, then, while they take more
    than ``keep_mb`` in all, the oldest that hold something; first, every one that holds nothing at all (a
    session killed before it could remove its empty folder). ``current`` and every folder a live spool has
    locked stay. Returns the folders removed."""
    now = time.time() if now is None else now
    found: list[tuple[float, str, int, Path]] = []
    with os.scandir(incidents) as entries:
        for entry in entries:
            path = Path(entry.path)
            if entry.is_dir(follow_symlinks=False) and _STAMP.fullmatch(entry.name) and path != current:
                written, size = _extent(path)
                found.append((written, entry.name, size, path))
    removed = [path for _, _, size, path in found if not size and _remove(path)]  # nothing kept: no incident
    found = [entry for entry in found if entry[3] not in removed]
    total = sum(size for _, _, size, _ in found)
    for written, _, size, path in sorted(found):
        too_old = now - written > keep.keep_seconds
        if not too_old and total <= keep.keep_bytes:
            break  # the rest are newer, and fit
        if (too_old or size > 0) and _remove(path):
            removed.append(path)
            total -= size
    return removed


def _extent(path: Path) -> tuple[float, int]:
    """When anything in the folder ``path`` was last written, and the bytes its files hold."""
    written, size = path.lstat().st_mtime, 0
    for folder, _, files in os.walk(path):
        written = max(written, os.lstat(folder).st_mtime)
        for name in files:
            try:
                info = os.lstat(os.path.join(folder, name))
            except FileNotFoundError:
                continue  # rotated or replaced meanwhile
            written, size = max(written, info.st_mtime), size + info.st_size
    return written, size


def _remove(path: Path) -> bool:
    """Remove the incident folder ``path`` unless a live spool holds its lock."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    else:
        shutil.rmtree(path, ignore_errors=True)
        return not path.exists()
    finally:
        os.close(fd)
