"""Bringing this machine's py-spy, for one capture, to the places that have rank processes and no py-spy
(a node's host, a container on it), over the capture's own channel (SSH, then ``docker exec -i``), and taking
it away again. It goes to :data:`~sparktui.core.stacks.script.BROUGHT`, where the node script looks for a
py-spy it was brought; only to a node of this machine's architecture (py-spy is one static binary per
architecture). :func:`plan` is pure; the caller asks the user before :func:`commands` run.
"""

from __future__ import annotations

import platform
import shlex
import shutil
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from sparktui.core.remote.command import Command
from sparktui.core.stacks.script import BROUGHT

if TYPE_CHECKING:
    from sparktui.core.stacks.gather import NodeStacks

#: The folder the brought py-spy lives in, removed whole after the capture.
FOLDER = BROUGHT.removesuffix("/bin/py-spy")
STEP = "bring py-spy"
_PUT = f"mkdir -p {FOLDER}/bin && cat > {BROUGHT}.part && chmod 755 {BROUGHT}.part && mv -f {BROUGHT}.part {BROUGHT}"
_REMOVE = f"rm -rf {FOLDER}"


@dataclass(frozen=True, slots=True)
class Plan:
    """Where py-spy goes (node, place), and the places it cannot go, with why."""

    places: tuple[tuple[str, str], ...]
    refused: tuple[str, ...]

    def said(self, binary: Path) -> list[str]:
        """What the user is asked to allow, a line a place."""
        return [
            f"{node}: copy {binary} (this machine's, {platform.machine()}) to {BROUGHT}"
            + ("" if place == "host" else f" in container {place}")
            + ", dump the ranks, then remove it"
            for node, place in self.places
        ]


def local_binary() -> Path | None:
    """This machine's py-spy: beside this Python (the install's), else the PATH's."""
    beside = Path(sys.executable).parent / "py-spy"
    if beside.is_file():
        return beside
    on_path = shutil.which("py-spy")
    return Path(on_path) if on_path else None


def plan(found: Sequence[NodeStacks], arch: str | None = None) -> Plan:
    """The places of ``found`` with ranks and no py-spy, on nodes of ``arch`` (this machine's by default)."""
    arch = arch or platform.machine()
    places, refused = [], []
    for node in found:
        if not node.unspied:
            continue
        if node.arch != arch:
            refused.append(
                f"{node.node}: not brought: the node is {node.arch or 'of an unknown architecture'}, this machine's "
                f"py-spy is {arch} (sparktui play py-spy-stacks installs the node's own with pip)"
            )
            continue
        places += [(node.node, place) for place in node.unspied]
    return Plan(tuple(places), tuple(refused))


def commands(places: Sequence[tuple[str, str]], binary: bytes) -> tuple[list[Command], list[Command]]:
    """The commands that put ``binary`` in each place, and those that remove it again."""
    put, remove = [], []
    for node, place in places:
        put.append(Command(STEP, node, place, _in(place, _PUT), stdin=binary))
        remove.append(Command("remove the brought py-spy", node, place, _in(place, _REMOVE)))
    return put, remove


def _in(place: str, command: str) -> str:
    """``command`` on the host, or in the container ``place`` (its input passed on)."""
    return command if place == "host" else f"docker exec -i {shlex.quote(place)} sh -c {shlex.quote(command)}"
