"""Where sparktui finds its data and keeps its files: the built-in catalogue and playbooks, and the user's
configuration, state and cache folders (XDG, with ``$SPARKTUI_CONFIG_DIR`` overriding the first)."""

from __future__ import annotations

import os
from pathlib import Path


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
