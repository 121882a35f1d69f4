"""Incident bundles: a folder of logs with the time each line arrived, replayable as if live.

Layout (format 1)::

    bundle.toml              format, title, description, created, duration_ms (optional: how long the
                             incident lasted, when that is longer than its last line),
                             [[sources]] name / node / kind
    <name>                   the log exactly as received
    <name>.times             one integer per line: milliseconds since the start of the incident
    audit.jsonl              optional: the commands sparktui ran during the incident (audit entries)
    stacks.json              optional: the last capture of every rank's stack (sparktui.core.stacks.snapshot)

A log without a ``.times`` file replays all at once at time 0.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from sparktui.core import tomlfile
from sparktui.core.audit import AuditEntry, read_log
from sparktui.core.errors import Invalid
from sparktui.core.sources.files import FileSource, SourceError
from sparktui.core.tomlfile import Table

FORMAT = 1
AUDIT = "audit.jsonl"


class BundleError(Invalid):
    """A bundle that cannot be used; the message is one line."""


@dataclass(frozen=True, slots=True)
class BundleSource:
    """One log of a bundle: its name, its node, and its file (with the timing file a replay paces it by)."""

    name: str
    node: str
    path: Path

    def file(self) -> FileSource:
        return FileSource(self.path, self.name)

    def timed_lines(self) -> Iterator[tuple[int, str]]:
        """(milliseconds, line) in order; lines past the end of the timing file keep the last time."""
        times = self.path.with_name(self.path.name + ".times")
        offsets = _read_times(times) if times.exists() else []
        last = 0
        index = 0
        for block in self.file().blocks():
            for line in block.split("\n"):
                if index < len(offsets):
                    last = offsets[index]
                index += 1
                yield last, line


@dataclass(frozen=True, slots=True)
class Bundle:
    """An incident bundle (a folder of logs with ``bundle.toml``): what it is, its sources and the audit log of
    the commands run during it."""

    path: Path
    title: str
    description: str
    sources: tuple[BundleSource, ...]
    duration_ms: int = 0

    def audit(self) -> list[AuditEntry]:
        """The commands run from sparktui during the incident, for its report."""
        return read_log(self.path / AUDIT)

    def timeline(self) -> Iterator[tuple[int, BundleSource, str]]:
        """Every line of every source, merged in arrival order (ties keep each source's own order)."""
        streams = [_tagged(i, src) for i, src in enumerate(self.sources)]
        for t, _i, src, line in heapq.merge(*streams, key=lambda item: (item[0], item[1])):
            yield t, src, line


def _tagged(index: int, src: BundleSource) -> Iterator[tuple[int, int, BundleSource, str]]:
    for t, line in src.timed_lines():
        yield t, index, src, line


def is_bundle(path: Path) -> bool:
    return (path / "bundle.toml").is_file()


def load(path: Path) -> Bundle:
    manifest = path / "bundle.toml"
    doc = Table(
        tomlfile.read(manifest, lambda reason: BundleError(f"{manifest}: {reason}")),
        lambda key, reason: BundleError(f"{manifest}: {key}: {reason}"),
    )
    if doc.data.get("format") != FORMAT:
        raise doc.fail("format", f"expected {FORMAT}, found {doc.data.get('format')!r}")
    sources = []
    for item in doc.tables("sources", required=False):
        name = item.text("name")
        file = path / name
        if not file.resolve().is_relative_to(path.resolve()) or not file.is_file():
            raise item.fail("name", f"{name!r} is not a file inside the bundle")
        # No node key: the folder names it; an empty one: a file of notes, which names no node.
        node = item.text("node", empty=True) if "node" in item.data else file.parent.name
        sources.append(BundleSource(name, node, file))
    if not sources:
        raise doc.fail("sources", "the bundle lists no logs")
    duration = doc.data.get("duration_ms", 0)
    if not isinstance(duration, int) or duration < 0:
        raise doc.fail("duration_ms", "needs a whole number of milliseconds")
    title = doc.text("title", required=False, empty=True) or path.name
    return Bundle(path, title, doc.text("description", required=False, empty=True), tuple(sources), duration)


def _read_times(path: Path) -> list[int]:
    try:
        return [int(x) for x in path.read_text().split()]
    except (OSError, ValueError) as exc:
        raise SourceError(f"{path.name}: unusable timing file: {exc}") from None
