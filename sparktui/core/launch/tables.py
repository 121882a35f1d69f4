"""The engines' command lines as data: ``diagnostics/launch/*.toml`` (see ``diagnostics/README.md``), read the
way every sparktui file is read (:mod:`sparktui.core.tomlfile`: a broken file is one line naming the file, the
key and the reason). ``vllm.toml`` and ``sglang.toml`` say, for the pre-launch reader, which flags take no
value and which flags give the settings it reads; ``sglang-to-vllm.toml`` is the translator's table, read by
:mod:`.sglang_to_vllm`. Each file is read once, on first use.

The launch folder is read here rather than by :mod:`sparktui.core.catalogue`: the readers sit below the
catalogue (the inventory's pre-launch check imports them), and a translation needs no signatures.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path

from sparktui.core import dirs, tomlfile
from sparktui.core.errors import Invalid
from sparktui.core.tomlfile import Table

#: The settings the pre-launch reader reads, each under the flags that give it in an engine's table.
SETTINGS = ("model", "tp", "pp", "dp", "nnodes", "node_rank", "executor", "port", "host")


class TableError(Invalid):
    """A launch table that cannot be used: the file, the key and why."""

    def __init__(self, path: Path, key: str, reason: str) -> None:
        super().__init__(f"{path}: {key}: {reason}" if key else f"{path}: {reason}")


@dataclass(frozen=True, slots=True)
class Cli:
    """What the pre-launch reader knows of one engine's command line without the engine's own parser."""

    engine: str
    default_port: int
    switches: frozenset[str]  # switches not spelt with one of the prefixes
    prefixes: tuple[str, ...]  # a flag spelt with one of these takes no value ...
    valued: frozenset[str]  # ... unless it is one of these
    settings: dict[str, tuple[str, ...]]  # each setting and its flags, the first named in messages

    def is_switch(self, flag: str) -> bool:
        """Whether ``flag`` takes no value, as far as this table knows."""
        return flag in self.switches or (flag.startswith(self.prefixes) and flag not in self.valued)


def folder() -> Path:
    return dirs.builtin("diagnostics") / "launch"


def read(name: str) -> Table:
    """The top table of ``diagnostics/launch/NAME.toml``."""
    path = folder() / f"{name}.toml"
    data = tomlfile.read(path, lambda reason: TableError(path, "", reason))
    return Table(data, lambda key, reason: TableError(path, key, reason))


@cache
def cli(engine: str) -> Cli:
    """The command-line table of ``engine`` (``vllm`` or ``sglang``)."""
    doc = read(engine)
    doc.known(("engine", "default_port", "switches", "settings", "examples"))
    if doc.text("engine") != engine:
        raise doc.fail("engine", f"must be {engine!r}, as the file is named")
    port = doc.data.get("default_port")
    if not isinstance(port, int) or not 0 < port < 65536:
        raise doc.fail("default_port", "needs a port number")
    switches = doc.table("switches")
    switches.known(("names", "prefixes", "valued"))
    settings = doc.table("settings")
    settings.known(SETTINGS)
    given = {name: tuple(settings.texts(name)) for name in SETTINGS if name in settings.data}
    for name, flags in given.items():
        if not flags:
            raise settings.fail(name, "needs at least one flag")
    if "model" not in given:
        raise settings.fail("model", "needs the flags that give the model")
    doc.tables("examples")  # checked by the tests, which read them with the reader
    return Cli(
        engine,
        port,
        frozenset(switches.texts("names")),
        tuple(switches.texts("prefixes", required=False)),
        frozenset(switches.texts("valued", required=False)),
        given,
    )
