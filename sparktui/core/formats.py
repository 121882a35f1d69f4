"""The line formats, as data: what launchers and collectors put in front of a line
(``diagnostics/formats/prefixes.toml``) and which program wrote what is left (``diagnostics/formats/programs.toml``),
each with the examples it is checked against. :mod:`sparktui.core.classify` applies them."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import regex

from sparktui.core import tomlfile
from sparktui.core.dirs import builtin
from sparktui.core.errors import Invalid
from sparktui.core.tomlfile import Table


class FormatError(Invalid):
    """A format file that cannot be used; the message is one line naming the file and the key."""


@dataclass(frozen=True, slots=True)
class Prefix:
    """One kind of prefix (``prefixes.toml``) and the examples it is checked against."""

    id: str
    pattern: regex.Pattern[str]
    needs_any: tuple[str, ...] = ()
    examples: tuple[dict[str, str], ...] = ()


#: What a format's ``prefixed`` may name: conditions on what the line's prefixes said.
PREFIXED = ("ray-process", "through-ray", "process-with-pid")


@dataclass(frozen=True, slots=True)
class Format:
    """One program's own line format (``programs.toml``): when it applies and what it makes of a line."""

    id: str
    program: str
    layer: str
    pattern: regex.Pattern[str] | None = None
    words: re.Pattern[str] | None = None
    prefixed: tuple[str, ...] = ()
    stripped: bool = False
    level: str = ""
    levels: Mapping[str, str] = field(default_factory=dict)
    error_if: str = ""
    tagged: bool = False
    process: str = ""
    examples: tuple[dict[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class Programs:
    """``programs.toml``: every program a line may be filed under with the pane that shows it, and the formats
    in the order they are tried."""

    panes: Mapping[str, str]
    formats: tuple[Format, ...]


def _table(path: Path) -> Table:
    return Table(
        tomlfile.read(path, lambda reason: FormatError(f"{path}: {reason}")),
        lambda key, reason: FormatError(f"{path}: {key}: {reason}"),
    )


def _compile(table: Table, key: str) -> regex.Pattern[str]:
    try:
        return regex.compile(table.text(key))
    except regex.error as exc:
        raise table.fail(key, f"not a regular expression: {exc}") from None


def _examples(table: Table) -> tuple[dict[str, str], ...]:
    return tuple({k: str(v) for k, v in example.data.items()} for example in table.tables("examples", required=False))


def load_prefixes(path: Path | None = None) -> tuple[Prefix, ...]:
    """The prefixes of ``path`` (``prefixes.toml`` by default), in the order they are tried."""
    doc = _table(path or builtin("diagnostics") / "formats" / "prefixes.toml")
    doc.known(("prefixes",))
    found = []
    for prefix in doc.tables("prefixes"):
        prefix.known(("id", "what", "pattern", "requires", "examples"))
        prefix.text("what")
        requires = tuple(prefix.texts("requires", required=False))
        found.append(Prefix(prefix.text("id"), _compile(prefix, "pattern"), requires, _examples(prefix)))
    return tuple(found)


_FORMAT_KEYS = (
    "id",
    "program",
    "layer",
    "what",
    "pattern",
    "words",
    "prefixed",
    "stripped",
    "level",
    "levels",
    "error_if",
    "tagged",
    "process",
    "examples",
)


def load_programs(path: Path | None = None) -> Programs:
    """The programs and formats of ``path`` (``programs.toml`` by default)."""
    doc = _table(path or builtin("diagnostics") / "formats" / "programs.toml")
    doc.known(("programs", "formats"))
    panes: dict[str, str] = {}
    for entry in doc.tables("programs"):
        entry.known(("name", "pane"))
        panes[entry.text("name")] = entry.text("pane")
    formats = []
    for entry in doc.tables("formats"):
        entry.known(_FORMAT_KEYS)
        entry.text("what")
        program = entry.choice("program", tuple(panes))
        words = entry.texts("words", required=False)
        prefixed = tuple(entry.texts("prefixed", required=False))
        for condition in prefixed:
            if condition not in PREFIXED:
                raise entry.fail("prefixed", f"{condition!r} is not one of {', '.join(PREFIXED)}")
        pattern = _compile(entry, "pattern") if "pattern" in entry.data else None
        if pattern is None and not words and not prefixed:
            raise entry.fail("pattern", "a format needs a pattern, words or prefixed")
        levels = entry.table("levels", required=False)
        formats.append(
            Format(
                entry.text("id"),
                program,
                entry.text("layer"),
                pattern,
                re.compile("|".join(map(re.escape, words))) if words else None,
                prefixed,
                entry.flag("stripped", default=False),
                entry.text("level", required=False),
                {letter: levels.text(letter) for letter in levels.data},
                entry.text("error_if", required=False),
                entry.flag("tagged", default=False),
                entry.text("process", required=False),
                _examples(entry),
            )
        )
    return Programs(panes, tuple(formats))
