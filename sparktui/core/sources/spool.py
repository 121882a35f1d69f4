"""The spool: every line received, kept on the machine running sparktui, as a replayable bundle.

Logs vanish with the containers and nodes that wrote them (``--rm``, exit traps, a node that died), so a
live session writes each source's lines as they arrive into ``<state dir>/incidents/<time>/``, in the
bundle layout (:mod:`sparktui.core.bundle`): the log, its ``.times`` file and a ``bundle.toml`` kept up to
date. ``sparktui replay`` and ``sparktui diagnose`` open it like any bundle. Each source is bounded: past
:data:`MAX_BYTES` its files rotate once (``.1``), so the newest lines are always kept.
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from sparktui.core import tomlfile
from sparktui.core.dirs import state_dir

MAX_BYTES = 64 << 20
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def new_incident_dir(root: Path | None = None) -> Path:
    base = (root or state_dir()) / "incidents"
    stamp = time.strftime("%Y%m%d-%H%M%S")
    path = base / stamp
    n = 1
    while path.exists():
        n += 1
        path = base / f"{stamp}-{n}"
    path.mkdir(parents=True)
    return path


@dataclass
class _Open:
    name: str
    node: str
    file: str
    log: TextIO
    times: TextIO
    size: int = 0


@dataclass
class Spool:
    """Writes lines per source; :meth:`close` flushes everything. Never raises for content."""

    path: Path
    title: str = "live session"
    max_bytes: int = MAX_BYTES
    _files: dict[str, _Open] = field(default_factory=dict)
    _start: float = field(default_factory=time.monotonic)

    def write(self, source: str, node: str, lines: tuple[str, ...], at: float | None = None) -> None:
        if not lines:
            return
        entry = self._files.get(source) or self._open(source, node)
        ms = int(((time.monotonic() if at is None else at) - self._start) * 1000)
        text = "".join(f"{line}\n" for line in lines)
        size = len(text.encode("utf-8", "replace"))
        if entry.size and entry.size + size > self.max_bytes:
            self._rotate(entry)
        entry.log.write(text)
        entry.times.write(f"{ms}\n" * len(lines))
        entry.size += size

    def flush(self) -> None:
        for entry in self._files.values():
            entry.log.flush()
            entry.times.flush()

    def close(self) -> None:
        self.flush()
        for entry in self._files.values():
            entry.log.close()
            entry.times.close()
        self._files.clear()

    def _open(self, source: str, node: str) -> _Open:
        file = f"{_UNSAFE.sub('_', node)}/{_UNSAFE.sub('_', source)}.log"
        taken = {e.file for e in self._files.values()}
        base, n = file, 1
        while file in taken:
            n += 1
            file = base.replace(".log", f"-{n}.log")
        target = self.path / file
        target.parent.mkdir(parents=True, exist_ok=True)
        entry = _Open(
            source,
            node,
            file,
            target.open("a", encoding="utf-8", errors="replace"),
            (self.path / f"{file}.times").open("a", encoding="utf-8"),
        )
        self._files[source] = entry
        self._manifest()
        return entry

    def _rotate(self, entry: _Open) -> None:
        entry.log.close()
        entry.times.close()
        log = self.path / entry.file
        os.replace(log, f"{log}.1")
        os.replace(f"{log}.times", f"{log}.1.times")
        entry.log = log.open("a", encoding="utf-8", errors="replace")
        entry.times = (self.path / f"{entry.file}.times").open("a", encoding="utf-8")
        entry.size = 0

    def _manifest(self) -> None:
        lines = [
            "format = 1",
            f"title = {tomlfile.string(self.title)}",
            f"created = {tomlfile.string(time.strftime('%Y-%m-%dT%H:%M:%S'))}",
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
        tmp.write_text("\n".join(lines) + "\n", encoding="utf-8")
        tmp.replace(self.path / "bundle.toml")
