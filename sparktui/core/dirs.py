"""Where sparktui finds its data and keeps its files: the built-in catalogue and playbooks, and the user's
configuration, state and cache folders (XDG, with ``$SPARKTUI_CONFIG_DIR`` overriding the first); and how
what it keeps for the user alone (the state folder, the spool, the audit log) is made private."""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path
from typing import TextIO

#: The modes of what sparktui keeps for the user alone, whatever the umask: logs and command output carry
#: tokens, host names and the commands run on the nodes.
DIR_MODE = 0o700
FILE_MODE = 0o600


def builtin(name: str) -> Path:
    """A data folder shipped with sparktui (``diagnostics`` or ``playbooks``): at the top of a checkout, or
    inside the installed package."""
    here = Path(__file__).resolve()
    for candidate in (here.parents[2] / name, here.parents[1] / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"the built-in {name}/ folder is missing from this installation")


def config_dir() -> Path:
    """What the user configures: ``$SPARKTUI_CONFIG_DIR``, else ``$XDG_CONFIG_HOME/sparktui``
    (``~/.config/sparktui``)."""
    if os.environ.get("SPARKTUI_CONFIG_DIR"):
        return Path(os.environ["SPARKTUI_CONFIG_DIR"])
    return _xdg("XDG_CONFIG_HOME", ".config")


def config_dirs() -> list[Path]:
    """Where a configuration file is looked for, in order: :func:`config_dir`, then the XDG folder when
    ``$SPARKTUI_CONFIG_DIR`` points elsewhere."""
    found = [config_dir(), _xdg("XDG_CONFIG_HOME", ".config")]
    return found[:1] if found[0] == found[1] else found


def state_dir() -> Path:
    """What sparktui keeps between runs (incidents, the audit log): ``$XDG_STATE_HOME/sparktui``."""
    return _xdg("XDG_STATE_HOME", ".local/state")


def cache_dir() -> Path:
    """What can be made again (compiled pattern databases): ``$XDG_CACHE_HOME/sparktui``."""
    return _xdg("XDG_CACHE_HOME", ".cache")


def _xdg(variable: str, default: str) -> Path:
    return Path(os.environ.get(variable) or str(Path.home() / default)) / "sparktui"


def private_dir(path: Path) -> int:
    """An open descriptor of the folder ``path``, given exactly :data:`DIR_MODE` (an earlier version's, or
    one made under a umask, may have another); the folders above it that are missing are made with that
    mode too, as the XDG base directory specification asks, and those that exist are left as they are."""
    missing = []
    folder = path
    while not os.path.lexists(folder):
        missing.append(folder)
        folder = folder.parent
    for folder in reversed(missing):
        with contextlib.suppress(FileExistsError):
            os.mkdir(folder, DIR_MODE)
        if folder != path:  # made here: a umask that took the owner's rights would stop what goes inside
            os.close(_private_fd(folder))
    return _private_fd(path)


def private_file(path: Path, *, append: bool = True) -> TextIO:
    """``path`` opened for writing (appending, or replacing what it held), made as :data:`FILE_MODE` when
    it is not there yet and given exactly that mode when it is."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC | (os.O_APPEND if append else os.O_TRUNC)
    fd = os.open(path, flags, FILE_MODE)
    _exactly(fd, FILE_MODE)
    return os.fdopen(fd, "a" if append else "w", encoding="utf-8", errors="replace")


def _private_fd(folder: Path) -> int:
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    _exactly(fd, DIR_MODE)
    return fd


def _exactly(fd: int, mode: int) -> None:
    """Give the file ``mode`` where it has another: one the umask narrowed at creation (never wider than
    ``mode``), or one made by something else (an earlier version, a folder given by a caller)."""
    if stat.S_IMODE(os.fstat(fd).st_mode) != mode:
        os.fchmod(fd, mode)
