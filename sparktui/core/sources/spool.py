"""The spool: every line received, kept on the machine running sparktui, as a replayable bundle.

Logs vanish with the containers and nodes that wrote them (``--rm``, exit traps, a node that died), so a
live session writes each source's lines as they arrive into ``<state dir>/incidents/<time>/``, in the
bundle layout (:mod:`sparktui.core.sources.bundle`): the log, its ``.times`` file and a ``bundle.toml``
kept up to date. ``sparktui replay`` and ``sparktui diagnose`` open it like any bundle. Each source is
bounded: past :data:`MAX_BYTES` its files rotate once (``.1``), so the newest lines are always kept.

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

A write that fails (a full disk or quota, a file too big, a failing device: any :class:`OSError`) stops the
spool, never the session: the files are cut to the lines both a log and its ``.times`` hold whole, so what
was kept stays a bundle; nothing more is written, and :attr:`Spool.warning` says why and how much was not
kept, for the front ends to say.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from sparktui.core import settings, tomlfile
from sparktui.core.dirs import DIR_MODE, private_dir, private_file, state_dir
from sparktui.core.errors import Invalid
from sparktui.core.redact import PieceRedactor, redact
from sparktui.core.settings import SpoolSettings

MAX_BYTES = 64 << 20
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")
#: The names :meth:`Spool.new` gives incident folders: pruning removes nothing else from incidents/.
_STAMP = re.compile(r"\d{8}-\d{6}(?:-\d+)?")


@dataclass
class _Open:
    name: str
    node: str
    file: str
    log: TextIO
    times: TextIO
    size: int = 0
    redact: PieceRedactor = field(default_factory=PieceRedactor)  # the source's batches are one text


@dataclass
class Spool:
    """Writes lines per source into the folder ``path`` (made private, and locked while it is written);
    :meth:`close` flushes everything. Never raises for content."""

    path: Path
    title: str = "live session"
    raw: bool = False  # keep secrets (the user asked for a raw copy)
    max_bytes: int = MAX_BYTES
    _files: dict[str, _Open] = field(default_factory=dict)
    _start: float = field(default_factory=time.monotonic)
    _lock: int = -1
    stopped: str = ""  # why writing stopped (a full disk): nothing more is written
    lost: int = 0  # bytes of the lines received that were not kept, since it stopped

    def __post_init__(self) -> None:
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
        cls, title: str, *, raw: bool = False, root: Path | None = None, keep: SpoolSettings | None = None
    ) -> Spool:
        """A spool in a new incident folder under ``root`` (default: the state folder), once the old
        incidents that ``keep`` (default: the settings file's) does not keep are removed."""
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
        spool = cls(path, title, raw)
        prune(base, keep, current=path)
        return spool

    @property
    def warning(self) -> str:
        """What a front end says once the spool stopped ("" while it writes)."""
        return f"spool stopped: {self.stopped}; {self.lost} bytes not kept" if self.stopped else ""

    def write(self, source: str, node: str, lines: tuple[str, ...], at: float | None = None) -> None:
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
            # The times first, on disk at once (a few bytes): a disk that fills up then cuts the log, whose
            # whole lines are kept, never the times that date them.
            entry.times.write(f"{ms}\n" * len(lines))
            entry.times.flush()
            entry.log.write(text)
        except OSError as exc:
            self._stop(exc)
            if not counted:
                self.lost += len(text.encode("utf-8", "replace"))

    def flush(self) -> None:
        if self.stopped:
            return
        try:
            for entry in self._files.values():
                entry.log.flush()
                entry.times.flush()
        except OSError as exc:
            self._stop(exc)

    def close(self) -> None:
        """Flush and close every file, and let go of the folder's lock. A folder that nothing was written
        to (every source failed to connect, or sent no line) is removed: it is no incident."""
        self.flush()
        for entry in self._files.values():
            for file in (entry.log, entry.times):
                try:
                    file.close()
                except OSError as exc:  # its last bytes did not fit
                    self._stop(exc)
        if not self._files:
            with contextlib.suppress(OSError):  # not empty: something else (a playbook's audit) was kept
                os.rmdir(self.path)
        self._files.clear()
        if self._lock >= 0:
            os.close(self._lock)
            self._lock = -1

    def _open(self, source: str, node: str) -> _Open:
        name = source if self.raw else redact(source)
        folder, stem = _UNSAFE.sub("_", node), _UNSAFE.sub("_", name).removesuffix(".log")
        folder = "_" if set(folder) <= {"."} else folder  # never "", "." or "..": the log stays inside
        file = f"{folder}/{stem}.log"
        taken = {e.file for e in self._files.values()}
        n = 1
        while file in taken:
            n += 1
            file = f"{folder}/{stem}-{n}.log"
        target = self.path / file
        os.close(private_dir(target.parent))
        entry = _Open(name, node, file, private_file(target), private_file(self.path / f"{file}.times"))
        self._files[source] = entry
        self._manifest()
        return entry

    def _stop(self, exc: OSError) -> None:
        """Stop writing, for ``exc``: every file is closed (what it still held in memory is dropped) and
        cut to its whole lines, and what was received but is not on disk is counted in :attr:`lost`."""
        if self.stopped:
            return
        self.stopped = os.strerror(exc.errno) if exc.errno else str(exc)
        for entry in self._files.values():
            for file in (entry.log, entry.times):
                with contextlib.suppress(OSError, ValueError):  # the bytes that do not fit, or closed already
                    file.close()
            self.lost += max(entry.size - _whole_lines(self.path / entry.file), 0)
        with contextlib.suppress(OSError):
            (self.path / "bundle.toml.tmp").unlink()  # a manifest that did not fit: the last one stays

    def _rotate(self, entry: _Open) -> None:
        entry.log.close()
        entry.times.close()
        log = self.path / entry.file
        os.replace(log, f"{log}.1")
        os.replace(f"{log}.times", f"{log}.1.times")
        entry.log = private_file(log)
        entry.times = private_file(self.path / f"{entry.file}.times")
        entry.size = 0

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
    than ``keep_mb`` in all, the oldest that hold something. ``current`` and every folder a live spool has
    locked stay. Returns the folders removed."""
    now = time.time() if now is None else now
    found: list[tuple[float, str, int, Path]] = []
    with os.scandir(incidents) as entries:
        for entry in entries:
            path = Path(entry.path)
            if entry.is_dir(follow_symlinks=False) and _STAMP.fullmatch(entry.name) and path != current:
                written, size = _extent(path)
                found.append((written, entry.name, size, path))
    total = sum(size for _, _, size, _ in found)
    removed: list[Path] = []
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
