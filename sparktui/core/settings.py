"""The user's settings: how sparktui itself behaves on this machine, whatever the cluster (the cluster file
says what the cluster is). Looked up as ``$SPARKTUI_CONFIG_DIR/settings.toml``, then
``$XDG_CONFIG_HOME/sparktui/settings.toml`` (``~/.config/sparktui/settings.toml``); every key is optional::

    [spool]                  # the copy of every line a live session receives (incidents/ in the state folder)
    keep_days = 14           # incidents last written longer ago than this are removed when a new one starts
    keep_mb = 2048           # then the oldest, until all of them together take at most this many MiB

    [stacks]                 # every rank's stack, read with py-spy on the nodes (W on a stall finding)
    capture_on_critical_stall = false  # true: the cockpit captures once by itself when a critical stall is named
    py_spy = ""              # py-spy's path on the nodes ("": the PATH's, else the one py-spy-stacks brought)
    ras_port = 28028         # NCCL's RAS port on each node's loopback (NCCL_RAS_ADDR), asked once a capture; 0: never

    [liveness]               # the live watch of the cockpit and diagnose --follow: a hung rank named by itself
    enabled = true
    quiet_seconds = 10       # every log quiet this long while ranks run (or a GPU wedged): read the stacks
    idle_seconds = 60        # an idle server (every rank waiting together for work): read again at most this often
    rounds = 3               # dumps of each rank per read, round_seconds apart: stuck or slow but moving
    round_seconds = 0.5
    wedged_watts = 30        # a GPU at >= 90 % utilisation drawing less than this is wedged (GB10: 16-27 W)
    probe_seconds = 15       # how often the ranks and GPUs are looked at (alive, wedged) without a stack read

A file that cannot be used is rejected with one line naming the file, the key and the reason.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from pathlib import Path

from sparktui.core import dirs, tomlfile
from sparktui.core.errors import Invalid
from sparktui.core.tomlfile import Table

NAME = "settings.toml"


class SettingsError(Invalid):
    """The settings file names what is wrong, where, in one line."""


@dataclass(frozen=True, slots=True)
class SpoolSettings:
    """How much of the old incidents a new spool leaves: none older than ``keep_days``, and at most
    ``keep_mb`` MiB of them in all (the oldest go first)."""

    keep_days: float = 14.0
    keep_mb: float = 2048.0

    @property
    def keep_seconds(self) -> float:
        return self.keep_days * 86400

    @property
    def keep_bytes(self) -> int:
        return int(self.keep_mb * (1 << 20))


@dataclass(frozen=True, slots=True)
class StacksSettings:
    """The cockpit's capture of every rank's stack: whether it runs once by itself when a critical stall is
    named (off unless asked for), the py-spy on the nodes, and the port NCCL's RAS answers on (0: not asked)."""

    capture_on_critical_stall: bool = False
    py_spy: str = ""
    ras_port: int = 28028


@dataclass(frozen=True, slots=True)
class LivenessSettings:
    """The live watch: when it reads every rank's stack by itself, and how."""

    enabled: bool = True
    quiet_seconds: float = 10.0
    idle_seconds: float = 60.0
    rounds: int = 3
    round_seconds: float = 0.5
    wedged_watts: float = 30.0
    probe_seconds: float = 15.0


@dataclass(frozen=True, slots=True)
class Settings:
    """The user's settings file read (every default where there is none)."""

    path: Path | None = None  # None: no settings file, every default
    spool: SpoolSettings = field(default_factory=SpoolSettings)
    stacks: StacksSettings = field(default_factory=StacksSettings)
    liveness: LivenessSettings = field(default_factory=LivenessSettings)


def find() -> Path | None:
    return next((p for p in (d / NAME for d in dirs.config_dirs()) if tomlfile.present(p)), None)


def load(path: Path | None = None) -> Settings:
    """The settings in ``path`` (default: the first settings file found; none gives the defaults)."""
    path = path or find()
    if path is None:
        return Settings()
    doc = Table(
        tomlfile.read(path, lambda reason: SettingsError(f"{path}: {reason}")),
        lambda key, reason: SettingsError(f"{path}: {key}: {reason}"),
    )
    doc.known(("spool", "stacks", "liveness"))
    spool = doc.table("spool", required=False)
    spool.known(("keep_days", "keep_mb"))
    default = SpoolSettings()
    stacks = doc.table("stacks", required=False)
    stacks.known(("capture_on_critical_stall", "py_spy", "ras_port"))
    ras_port = stacks.data.get("ras_port", StacksSettings().ras_port)
    if isinstance(ras_port, bool) or not isinstance(ras_port, int) or not 0 <= ras_port <= 65535:
        raise stacks.fail("ras_port", "must be a TCP port (1 to 65535), or 0 not to ask NCCL's RAS")
    live = doc.table("liveness", required=False)
    live.known(tuple(f.name for f in fields(LivenessSettings)))
    given = LivenessSettings()
    rounds = live.positive("rounds", default=given.rounds, unit="dumps")
    if rounds != int(rounds) or rounds < 2:
        raise live.fail("rounds", "a whole number, 2 or more (two dumps tell a stuck rank from a moving one)")
    return Settings(
        path,
        SpoolSettings(
            spool.positive("keep_days", default=default.keep_days, unit="days"),
            spool.positive("keep_mb", default=default.keep_mb, unit="MiB"),
        ),
        StacksSettings(
            stacks.flag("capture_on_critical_stall", default=False),
            stacks.text("py_spy", required=False, empty=True),
            ras_port,
        ),
        LivenessSettings(
            live.flag("enabled", default=given.enabled),
            live.positive("quiet_seconds", default=given.quiet_seconds, unit="seconds"),
            live.positive("idle_seconds", default=given.idle_seconds, unit="seconds"),
            int(rounds),
            live.positive("round_seconds", default=given.round_seconds, unit="seconds"),
            live.positive("wedged_watts", default=given.wedged_watts, unit="watts"),
            live.positive("probe_seconds", default=given.probe_seconds, unit="seconds"),
        ),
    )
