"""The unit a runner runs: one command for one node, as rendered from a playbook."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Command:
    """One command for one node, exactly as it would run there (``local`` for the machine of sparktui), and
    what it reads on its standard input (``b""``: nothing is sent)."""

    step: str
    node: str
    place: str
    command: str
    changes: bool = True
    stdin: bytes = b""
