"""Live sources named on the command line: local paths today; ``ssh://``, ``docker://`` and ``ray://``
resolve to their own source modules."""

from __future__ import annotations

from pathlib import Path

from sparktui.core.sources.base import LiveSource
from sparktui.core.sources.discover import discover
from sparktui.core.sources.follow import FollowedFile


class UriError(ValueError):
    """A source argument that names nothing usable; the message is one line."""


def open_live(arguments: list[str]) -> list[LiveSource]:
    sources: list[LiveSource] = []
    for arg in arguments:
        scheme = arg.split("://", 1)[0] if "://" in arg else ""
        if scheme:
            raise UriError(f"{arg}: {scheme}:// sources are not available in this version")
        path = Path(arg)
        if path.is_dir():
            found, _problems = discover([arg])
            sources += [FollowedFile(s.path, s.name, s.node) for s in found]
        else:
            # A file that does not exist yet is followed once it appears, as `tail -F` does.
            sources.append(FollowedFile(path, path.name))
    return sources
