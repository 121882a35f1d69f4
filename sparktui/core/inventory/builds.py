"""The builds a node will load, read from their files (by the probe's ELF reader, see
:func:`sparktui.core.inventory.image_probe.builds`), and systemd-logind's settings for the user the engine
runs as; the parsers of the ``builds`` and ``logind`` sections and of the probe's ``builds`` part, and the
build table each report prints. Pure."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

#: Each component, as the table names it, in the table's order.
LABELS = {
    "nccl": "NCCL (torch's)",
    "nccl_system": "NCCL (system)",
    "torch": "torch",
    "vllm": "vLLM",
    "sglang": "SGLang",
    "ray": "Ray",
    "cudart": "CUDA runtime",
    "driver": "CUDA driver",
    "kernel": "kernel",
}


class Unreadable(ValueError):
    """A section that is not what the probe or loginctl prints."""


@dataclass(frozen=True, slots=True)
class Build:
    """One build a node will load: where (``host``, or ``image`` for the engine container or image), the
    component (a key of :data:`LABELS`), its version, its file, and what identifies the build: sha256, GNU
    build id, the architecture of its ELF header and the compilers named in its ``.comment`` (``gcc``: the
    newest GCC among them)."""

    place: str
    component: str
    version: str = ""
    path: str = ""
    sha256: str = ""
    build_id: str = ""
    arch: str = ""
    compilers: tuple[str, ...] = ()
    gcc: str = ""
    says: str = ""  # what the file says it is (libnccl's "NCCL version 2.29.2+cuda13.1")

    @property
    def label(self) -> str:
        return LABELS.get(self.component, self.component)

    @property
    def compiler(self) -> str:
        return f"gcc {self.gcc}" if self.gcc else ("; ".join(self.compilers) or "")


@dataclass(frozen=True, slots=True)
class Logind:
    """systemd-logind's settings that decide whether an SSH-started process keeps its IPC objects after
    the session closes: ``RemoveIPC``, ``KillUserProcesses`` (yes/no, "" where unread) and the user's
    ``Linger``, with the user's uid (logind spares system users, uid < 1000)."""

    uid: int | None
    systemd: str = ""  # systemd's version (loginctl --version: "systemd 255 (255.4-1ubuntu8)")
    remove_ipc: str = ""
    kill_user_processes: str = ""
    linger: str = ""


def build(place: str, component: str, found: Mapping[str, Any]) -> Build:
    """One entry of the probe's JSON (``path``, ``sha256``, ``build_id``, ``compilers``...) as a Build."""

    def text(key: str) -> str:
        value = found.get(key)
        return "" if value is None else str(value)

    says = text("says")
    version = text("version") or (says.removeprefix("NCCL version ").split("+")[0] if says else "")
    return Build(
        place,
        component,
        version,
        text("path"),
        text("sha256"),
        text("build_id"),
        text("arch"),
        tuple(str(c) for c in found.get("compilers") or ()),
        text("gcc"),
        says,
    )


def from_probe(place: str, found: Mapping[str, Any]) -> tuple[Build, ...]:
    """The builds in a probe's ``builds`` object, in the table's order."""
    return tuple(build(place, name, found[name]) for name in LABELS if name in found and isinstance(found[name], dict))


def host_builds(text: str) -> tuple[Build, ...]:
    """The ``builds`` section: the probe run as ``python3 - host``, its JSON."""
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end < start:
        said = next((line.strip() for line in text.splitlines() if line.strip()), "")
        raise Unreadable(said or "the host's build reader printed nothing")
    try:
        found = json.loads(text[start : end + 1])
    except ValueError:
        raise Unreadable("the host's build reader printed no JSON") from None
    builds = found.get("builds") if isinstance(found, dict) else None
    if not isinstance(builds, dict):
        raise Unreadable(str(found.get("error") if isinstance(found, dict) else "") or "no builds in its JSON")
    return from_probe("host", builds)


def logind(text: str) -> Logind:
    """The ``logind`` section: ``uid N``, ``systemd N (...)`` (loginctl's version), then what ``loginctl
    show`` / ``show-user`` said (``RemoveIPC=yes``, ``Linger=no``), then the settings of logind.conf and its drop-ins
    (``/etc/systemd/logind.conf: RemoveIPC=no``, later files over earlier ones; the commented-out lines of
    the shipped file, ``#RemoveIPC=yes``, are systemd's compiled-in defaults), and ``linger file`` where
    ``/var/lib/systemd/linger/USER`` exists. What loginctl says wins over the files, which win over the
    defaults."""
    uid: int | None = None
    said: dict[str, str] = {}
    files: dict[str, str] = {}
    defaults: dict[str, str] = {}
    linger_file = False
    systemd = ""
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("uid ") and line[4:].isdigit():
            uid = int(line[4:])
        elif line.startswith("systemd ") and line.split()[1].isdigit():
            systemd = line.split()[1]
        elif line == "linger file":
            linger_file = True
        elif ": " in line and line.startswith("/"):
            key, _, setting = line.split(": ", 1)[1].partition("=")
            if key.lstrip().startswith("#"):  # the shipped file lists the compiled-in defaults, commented out
                defaults[key.strip("# \t")] = setting.strip().lower()
            else:
                files[key.strip()] = setting.strip().lower()
        elif "=" in line:
            key, _, setting = line.partition("=")
            said[key.strip()] = setting.strip().lower()
    if uid is None:
        raise Unreadable("no uid line")

    def value(key: str) -> str:
        return _yes_no(said.get(key) or files.get(key) or defaults.get(key, ""))

    # lingering is the file /var/lib/systemd/linger/USER: where systemd is installed, its absence is a no
    linger = _yes_no(said.get("Linger", "")) or ("yes" if linger_file else "no" if systemd else "")
    return Logind(uid, systemd, value("RemoveIPC"), value("KillUserProcesses"), linger)


def _yes_no(value: str) -> str:
    if value in ("yes", "true", "1", "on"):
        return "yes"
    if value in ("no", "false", "0", "off"):
        return "no"
    return ""


#: The build table's columns.
COLUMNS = ("node", "where", "component", "version", "compiler", "build id", "sha256", "path")


@dataclass(frozen=True, slots=True)
class BuildRow:
    """One row of the build table: a build one node will load (build id and sha256 cut to 12 characters),
    or, with no component, a node whose builds could not be read and why (``note``)."""

    node: str
    place: str = ""
    component: str = ""
    version: str = ""
    compiler: str = ""
    build_id: str = ""
    sha256: str = ""
    path: str = ""
    note: str = ""

    @property
    def cells(self) -> tuple[str, ...]:
        return (
            self.node,
            self.place,
            self.component,
            self.version,
            self.compiler,
            self.build_id,
            self.sha256,
            self.path,
        )


def rows(node: str, builds: tuple[Build, ...], why: str = "") -> tuple[BuildRow, ...]:
    """A node's rows: each build, or one row saying why none was read."""
    if not builds:
        return (BuildRow(node, note=why or "no build read"),)
    return tuple(
        BuildRow(
            node,
            b.place,
            b.label,
            b.version or "?",
            b.compiler or "?",
            b.build_id[:12] or "?",
            b.sha256[:12] or "?",
            b.path,
        )
        for b in builds
    )


def lines(table: tuple[BuildRow, ...]) -> list[str]:
    """The table as aligned text, a header first; a node without builds is its name and why."""
    shown = [COLUMNS, *(r.cells for r in table if r.component)]
    widths = [max(len(c[i]) for c in shown) for i in range(len(COLUMNS))]

    def line(cells: tuple[str, ...]) -> str:
        return "  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip()

    header = [line(COLUMNS)] if len(shown) > 1 else []
    return header + [line(r.cells) if r.component else f"{r.node:<{widths[0]}}  {r.note}" for r in table]
