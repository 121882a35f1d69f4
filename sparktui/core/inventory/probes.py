"""What is read on a node before a playbook can be shown: a container's settings, through ``docker inspect``
run with the playbook's own runner (read-only commands, audited like every other), turned into the
``docker run`` that creates the container again and its parts."""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable
from typing import Any

from sparktui.core.launch.docker_run import Recreate, RecreateError, docker_run
from sparktui.core.remote.command import Command
from sparktui.core.remote.runner import Runner
from sparktui.core.text import display


class ProbeError(Exception):
    """A probe could not find its value on a node; one line."""


#: What each probe takes from the ``docker run`` that creates the container again.
PARTS: dict[str, Callable[[Recreate], str]] = {
    "probe:docker-run": lambda r: r.line,
    "probe:docker-run-options": lambda r: shlex.join(r.options),
    "probe:docker-run-image": lambda r: shlex.quote(r.image),
    "probe:docker-run-command": lambda r: shlex.join(r.command),
}


async def container(runner: Runner, node: str, name: str) -> Recreate:
    """The ``docker run`` that creates container ``name`` on ``node`` again, from ``docker inspect`` of it
    and of its image."""
    inspected = await _json(runner, node, f"docker inspect --type container -- {shlex.quote(name)}")
    image = await _json(runner, node, f"docker image inspect -- {shlex.quote(str(inspected.get('Image')))}")
    try:
        return docker_run(inspected, image)
    except RecreateError as exc:
        raise ProbeError(f"{node}: {exc}") from None


async def _json(runner: Runner, node: str, command: str) -> dict[str, Any]:
    printed: list[str] = []
    code = await runner.run(Command("probe", node, "host", command), lambda n, line: printed.append(line))
    text = "\n".join(printed)
    if code != 0:
        first = next((line for line in text.splitlines() if line.strip()), f"exit {code}")
        raise ProbeError(f"{node}: `{command}` failed: {display(first)}")
    try:
        found = json.loads(text)
    except ValueError:
        raise ProbeError(f"{node}: `{command}` did not print JSON") from None
    if not isinstance(found, list) or not found or not isinstance(found[0], dict):
        raise ProbeError(f"{node}: `{command}` found nothing")
    return found[0]
