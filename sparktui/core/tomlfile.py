"""Reading a TOML file the way every sparktui file is read (errors become the caller's one-line error, and
:class:`Table` checks each key's type), and writing a string value into one."""

from __future__ import annotations

import os
import stat
import tomllib
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any


def read(path: Path, error: Callable[[str], Exception]) -> dict[str, Any]:
    """The parsed document; ``error(reason)`` is raised when the file cannot be read, is not a regular file (a
    folder, a FIFO that would block the read for ever, a device such as ``/dev/zero`` that never ends) or is
    not TOML, nesting too deep for the parser included."""
    try:
        text = _regular_text(path)
    except OSError as exc:
        raise error(f"cannot read: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise error(str(exc)) from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise error(f"not valid TOML: {exc}") from None
    except RecursionError:
        raise error("not valid TOML for sparktui: arrays or tables nested too deeply to read") from None


def present(path: Path) -> bool:
    """Whether a file sparktui looks for is there to be read: anything at ``path``, a folder, a FIFO or a
    broken link included, so that :func:`read` says what is wrong with it rather than it being passed over."""
    return path.exists() or path.is_symlink()


def _regular_text(path: Path) -> str:
    """The UTF-8 text of ``path``, opened without blocking so that a FIFO is refused rather than waited on."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise ValueError(f"cannot read: it is {_kind(mode)}, not a regular file")
    with os.fdopen(fd, "rb") as file:
        try:
            return file.read().decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ValueError(f"not valid TOML: {exc}") from None


def _kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
    ):
        if test(mode):
            return name
    return "something other than a file"


def string(value: str) -> str:
    """``value`` as a TOML basic string, quoted and escaped (control characters as ``\\uXXXX``)."""
    escaped = value.replace("\\", "\\\\").replace('"', '\\"')
    escaped = "".join(c if c.isprintable() else f"\\u{ord(c):04x}" for c in escaped)
    return f'"{escaped}"'


class Table:
    """Typed access to one table of a TOML document. Anything missing or mistyped raises ``error(key,
    reason)`` with the key's full name (``stages[2].any``), so every file sparktui reads is checked the
    same way and every message names the key and the reason."""

    def __init__(self, data: Mapping[str, Any], error: Callable[[str, str], Exception], prefix: str = "") -> None:
        self.data, self.error, self.prefix = data, error, prefix

    def fail(self, key: str, reason: str) -> Exception:
        """The error for ``key`` of this table."""
        return self.error(self.prefix + key, reason)

    def text(self, key: str, *, required: bool = True, empty: bool = False) -> str:
        """A string (``""`` when not required and absent); a required one may not be blank unless ``empty``."""
        value = self.data.get(key)
        if value is None and not required:
            return ""
        if not isinstance(value, str) or (not empty and not value.strip()):
            raise self.fail(key, "needs a non-empty string" if not empty else "needs a string")
        return value

    def texts(self, key: str, *, required: bool = True) -> list[str]:
        value = self.data.get(key)
        if value is None and not required:
            return []
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self.fail(key, "needs an array of strings")
        return list(value)

    def choice(self, key: str, choices: Sequence[str], *, default: str | None = None) -> str:
        """One of ``choices`` (``default`` when absent and there is one)."""
        value = self.data.get(key, default)
        if value not in choices:
            raise self.fail(key, f"{value!r} is not one of {', '.join(choices)}")
        return str(value)

    def flag(self, key: str, *, default: bool) -> bool:
        value = self.data.get(key, default)
        if not isinstance(value, bool):
            raise self.fail(key, "must be true or false")
        return value

    def seconds(self, key: str, *, default: float) -> float:
        """A positive number of seconds (``default`` when absent)."""
        return self.positive(key, default=default, unit="seconds")

    def positive(self, key: str, *, default: float, unit: str) -> float:
        """A positive number of ``unit`` (``default`` when absent)."""
        value = self.data.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
            raise self.fail(key, f"must be a positive number of {unit}")
        return float(value)

    def table(self, key: str, *, required: bool = True) -> Table:
        value = self.data.get(key)
        if value is None and not required:
            value = {}
        if not isinstance(value, dict):
            raise self.fail(key, "needs a table")
        return Table(value, self.error, f"{self.prefix}{key}.")

    def tables(self, key: str, *, required: bool = True) -> list[Table]:
        """An array of tables (``[[key]]``); at least one when required."""
        value = self.data.get(key)
        if value is None and not required:
            return []
        if not isinstance(value, list) or (required and not value) or not all(isinstance(v, dict) for v in value):
            raise self.fail(key, f"needs an array of [[{self.prefix}{key}]] tables")
        return [Table(v, self.error, f"{self.prefix}{key}[{i}].") for i, v in enumerate(value)]

    def known(self, keys: Sequence[str]) -> None:
        """Refuse a key that is not one of ``keys`` (a typo would otherwise be ignored)."""
        for key in self.data:
            if key not in keys:
                raise self.fail(key, f"unknown key ({', '.join(keys)})")
