"""Reading a TOML file the way every sparktui file is read (errors become the caller's one-line error), and
writing a string value into one."""

from __future__ import annotations

import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any


def read(path: Path, error: Callable[[str], Exception]) -> dict[str, Any]:
    """The parsed document; ``error(reason)`` is raised when the file cannot be read or is not TOML."""
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise error(f"cannot read: {exc.strerror or exc}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise error(f"not valid TOML: {exc}") from None


def string(value: str) -> str:
    """``value`` as a TOML basic string, quoted and escaped (control characters as ``\\uXXXX``)."""
    escaped = value.replace("\\", "\\\\").replace('"', '\\"')
    escaped = "".join(c if c.isprintable() else f"\\u{ord(c):04x}" for c in escaped)
    return f'"{escaped}"'
