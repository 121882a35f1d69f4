"""The names a machine goes by in its own logs, from what ``uname -n`` prints there."""

from __future__ import annotations

import re

_HOST_NAME = re.compile(r"[A-Za-z0-9_][\w.-]{0,252}")


def machine_names(uname: str) -> frozenset[str]:
    """``uname -n``'s name and its first label (which NCCL prints); none for what is not a host name."""
    name = uname.strip()
    return frozenset({name, name.split(".")[0]}) if _HOST_NAME.fullmatch(name) else frozenset()
