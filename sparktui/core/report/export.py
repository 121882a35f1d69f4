"""Writing an incident out: the report in its three forms and a replayable bundle, redacted by default.

``export(incident, directory)`` writes::

    report.md                Markdown, ready to paste into a GitHub issue
    report.html              the same as one self-contained page
    report.json              the diagnose JSON plus the report's sections
    bundle/bundle.toml       a bundle of the logs (``sparktui replay`` / ``sparktui diagnose`` open it)
    bundle/<log>             each log, redacted, with its <log>.times file when it had one
    bundle/findings.json     the diagnose JSON
    bundle/audit.jsonl       every command run from sparktui, with its whole output
    bundle/stacks.json       the last capture of every rank's stack, when one was made

An incident without logs gets no bundle.toml (a bundle lists at least one log), only the two JSON files.

Everything goes through one :class:`~sparktui.core.redact.Redactor`, so a host has the same placeholder in
every file.
"""

from __future__ import annotations

import errno
import json
import re
import shutil
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sparktui.core import tomlfile
from sparktui.core.redact import Redactor
from sparktui.core.report.html import page
from sparktui.core.report.incident import Incident
from sparktui.core.report.markdown import markdown
from sparktui.core.report.summary import as_dict
from sparktui.core.sources import bundle
from sparktui.core.sources.bundle import AUDIT
from sparktui.core.sources.files import FileSource
from sparktui.core.stacks.snapshot import FILE as STACKS
from sparktui.core.text import json_inert

#: Characters a file name in a bundle may not hold on some systems; each becomes ``_``.
_UNPORTABLE = re.compile(r'[\x00-\x1f\x7f<>:"|?*\\]')


def export(
    incident: Incident,
    directory: Path,
    *,
    redact: bool = True,
    anonymise_hosts: bool = False,
    hosts: Iterable[str] = (),
) -> list[Path]:
    """Write the incident into ``directory`` and return the files written. The folder is created if needed;
    one that holds an earlier export (and nothing else) has it removed first, so that no log of another
    incident stays in its bundle; one that holds anything else is refused with :class:`FileExistsError`.
    ``redact`` takes secrets out; ``anonymise_hosts`` also replaces host
    names and addresses, ``hosts`` naming hosts the logs may not show in a host position (the cluster's
    nodes and SSH addresses). Raises :class:`OSError` when ``directory`` cannot be written and
    :class:`~sparktui.core.sources.files.SourceError` when a log cannot be read."""
    redactor = Redactor(secrets=redact, anonymise_hosts=anonymise_hosts, hosts=hosts)
    incident = incident.folded()
    if anonymise_hosts:
        incident.learn_hosts(redactor)
        _learn_logs(redactor, incident.logs)
    safe = incident.redacted(redactor)
    _clear(directory)
    written = [
        _write(directory / "report.md", markdown(safe)),
        _write(directory / "report.html", page(safe)),
        _write(directory / "report.json", _json(as_dict(safe))),
    ]
    target = directory / "bundle"
    target.mkdir(exist_ok=True)
    if incident.logs:  # a bundle lists at least one log
        written += write_bundle(
            target,
            incident.logs,
            redactor,
            title=safe.title,
            description=safe.description,
            duration_ms=incident.duration_ms,
        )
    written.append(_write(target / "findings.json", _json(safe.diagnosis.as_dict())))
    audit = "".join(json.dumps(a.as_dict(), ensure_ascii=False) + "\n" for a in safe.audit)
    written.append(_write(target / AUDIT, audit))
    if safe.stacks is not None:
        written.append(safe.stacks.write(target))
    return written


def new_folder(parent: Path, stem: str) -> Path:
    """A folder named ``stem`` in ``parent``, made here and now and so never one another export made in the
    same second (``stem-2``, ``stem-3``, ... once the name is taken)."""
    for n in range(1, 1000):
        folder = parent / (stem if n == 1 else f"{stem}-{n}")
        try:
            folder.mkdir(parents=True)
        except FileExistsError:
            continue
        return folder
    raise FileExistsError(errno.EEXIST, f"every name from {stem} to {stem}-999 is taken in {parent}")


#: What an export writes at its top, the one content of a folder :func:`export` may clear.
_OWN = frozenset({"report.md", "report.html", "report.json", "bundle"})


def _clear(directory: Path) -> None:
    """An empty ``directory`` to export into: made, or emptied of an earlier export, or refused."""
    directory.mkdir(parents=True, exist_ok=True)
    held = {p.name for p in directory.iterdir()}
    if not held:
        return
    if "report.json" not in held or not held <= _OWN or (directory / "bundle").is_symlink():
        raise FileExistsError(
            errno.EEXIST, "the folder holds files that are not an earlier sparktui report: give an empty or new one"
        )
    for name in held:
        path = directory / name
        if path.is_dir():
            shutil.rmtree(path)
        else:
            path.unlink()


def redact_bundle(
    source: Path, target: Path, *, anonymise_hosts: bool = False, hosts: Iterable[str] = ()
) -> list[Path]:
    """A redacted copy of the bundle (or spool) at ``source`` in ``target``: logs, file names, nodes and
    manifest. Raises :class:`~sparktui.core.bundle.BundleError` for a bundle that cannot be used."""
    loaded = bundle.load(source)
    logs = [FileSource(s.path, s.name, s.node) for s in loaded.sources]
    redactor = Redactor(anonymise_hosts=anonymise_hosts, hosts=hosts)
    if anonymise_hosts:
        redactor.learn(loaded.title)
        redactor.learn(loaded.description)
        _learn_logs(redactor, logs)
    return write_bundle(
        target,
        logs,
        redactor,
        title=redactor.text(loaded.title),
        description=redactor.text(loaded.description),
        duration_ms=loaded.duration_ms,
    )


def write_bundle(
    target: Path,
    logs: Sequence[FileSource],
    redactor: Redactor,
    *,
    title: str,
    description: str = "",
    duration_ms: int = 0,
) -> list[Path]:
    """Write ``logs`` as a bundle in ``target``, each through ``redactor`` (its lines, its file name and its
    node), with a copy of its ``.times`` file when it has one; returns the files written, the manifest
    last. A log keeps its name as its path inside the bundle where it can, and always its number of lines,
    so evidence positions and timing stay true. ``title`` and ``description`` are written as given."""
    target.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    entries: list[tuple[str, str]] = []
    taken = {"bundle.toml", "findings.json", AUDIT, STACKS}
    for log in logs:
        member = _member(redactor.text(log.name), taken)
        path = target / member
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("w", encoding="utf-8", errors="replace") as out:
            for block in log.blocks():
                out.write(redactor.text(block))
                out.write("\n")
        written.append(path)
        times = log.path.with_name(log.path.name + ".times")
        if times.is_file():
            written.append(Path(shutil.copyfile(times, target / f"{member}.times")))
        entries.append((member, redactor.node(log.default_node())))
    lines = [
        f"format = {bundle.FORMAT}",
        f"title = {tomlfile.string(title)}",
        f"description = {tomlfile.string(description)}",
        f"created = {tomlfile.string(datetime.now(UTC).isoformat(timespec='seconds'))}",
        f"redacted = {tomlfile.string(_redaction(redactor))}",
    ]
    if duration_ms:
        lines.append(f"duration_ms = {duration_ms}")
    for member, node in entries:
        lines += ["", "[[sources]]", f"name = {tomlfile.string(member)}", f"node = {tomlfile.string(node)}"]
    written.append(_write(target / "bundle.toml", "\n".join(lines) + "\n"))
    return written


def _learn_logs(redactor: Redactor, logs: Iterable[FileSource]) -> None:
    for log in logs:
        redactor.learn(log.name)
        for block in log.blocks():
            redactor.learn(block)


def _member(name: str, taken: set[str]) -> str:
    """A path inside the bundle for a log of this name: relative, portable, not used yet."""
    parts = [_UNPORTABLE.sub("_", p) for p in name.replace("\\", "/").split("/") if p not in ("", ".", "..")]
    path = "/".join(parts).removesuffix(".gz") or "log"
    if path.endswith(".times"):
        path += ".log"
    candidate, n = path, 1
    while candidate in taken:
        n += 1
        candidate = f"{path}-{n}"
    taken.add(candidate)
    return candidate


def _redaction(redactor: Redactor) -> str:
    done = [what for what, on in (("secrets", redactor.secrets), ("hosts", redactor.anonymise_hosts)) if on]
    return ", ".join(done) or "none"


def _json(data: Any) -> str:
    return json_inert(json.dumps(data, indent=2, ensure_ascii=False)) + "\n"


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path
