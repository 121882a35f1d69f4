"""Running a rendered playbook: the only module that changes anything on a node.

The commands are exactly those :func:`sparktui.core.playbooks.render` produced (and a dry run showed):
each runs on its node over that node's SSH connection, or on this machine for ``local`` steps, in order;
the first failure stops the run and the rollback steps run; every command becomes an
:class:`~sparktui.core.audit.AuditEntry`, appended to the audit log as it finishes. Read-only mode
refuses any playbook whose risk is not ``read-only`` before a single command runs.
"""

from __future__ import annotations

import asyncio
import json
import shlex
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from sparktui.core.audit import AuditEntry
from sparktui.core.playbooks import Command, Rendered
from sparktui.core.sources.base import SourceRefused, SourceUnavailable
from sparktui.core.sources.ssh import SshNode
from sparktui.core.text import decode

#: Called with (node, a piece of output) as it arrives.
Output = Callable[[str, str], None]
OUTPUT_LIMIT = 1 << 20


class ActionError(Exception):
    """The run was refused before anything ran (read-only mode, an unknown node); one line."""


class Runner(ABC):
    """Runs one command on one node and returns its exit code (None when it could not finish), calling
    ``output`` with what it prints (standard output and error together) as it comes."""

    @abstractmethod
    async def run(self, command: Command, output: Output) -> int | None: ...


class LocalRunner(Runner):
    async def run(self, command: Command, output: Output) -> int | None:
        process = await asyncio.create_subprocess_exec(
            "sh", "-c", command.command, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
        )
        assert process.stdout is not None
        while chunk := await process.stdout.read(65536):
            output(command.node, decode(chunk))
        return await process.wait()


class SshRunner(Runner):
    """Each node over its own SSH connection (``nodes`` maps node names to them); ``local`` steps here."""

    def __init__(self, nodes: Mapping[str, SshNode]) -> None:
        self.nodes = nodes
        self.local = LocalRunner()

    async def run(self, command: Command, output: Output) -> int | None:
        if command.node == "local":
            return await self.local.run(command, output)
        node = self.nodes.get(command.node)
        if node is None:
            raise ActionError(f"no way to reach node {command.node!r}: it is not in the cluster file")
        script = f"sh -c {shlex.quote('{ ' + command.command + chr(10) + '} 2>&1')}"
        try:
            async with node.session(script, f"{command.node}: {command.step}") as session:
                while chunk := await session.read():
                    output(command.node, decode(chunk))
                await session.ended()
                return session.process.exit_status
        except (SourceUnavailable, SourceRefused) as exc:
            output(command.node, f"\n[sparktui: {exc}]\n")
            return None


@dataclass
class AuditLog:
    """Append-only JSON lines, one per command that ran."""

    path: Path

    def add(self, entry: AuditEntry) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(entry.as_dict(), ensure_ascii=False) + "\n")


@dataclass
class Outcome:
    entries: list[AuditEntry] = field(default_factory=list)
    rolled_back: list[AuditEntry] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(e.exit_code == 0 for e in self.entries)


async def execute(
    rendered: Rendered,
    runner: Runner,
    *,
    readonly: bool = False,
    audit: AuditLog | None = None,
    output: Output = lambda node, text: None,
) -> Outcome:
    """Run the commands in order; on the first failure stop and run the rollback commands."""
    if readonly and rendered.playbook.risk != "read-only":
        raise ActionError(f"{rendered.playbook.id} is {rendered.playbook.risk}: refused in read-only mode")
    outcome = Outcome()
    for command in rendered.commands:
        entry = await _one(command, rendered, runner, output, audit)
        outcome.entries.append(entry)
        if entry.exit_code != 0:
            for step in rendered.rollback:
                outcome.rolled_back.append(await _one(step, rendered, runner, output, audit))
            break
    return outcome


async def _one(
    command: Command, rendered: Rendered, runner: Runner, output: Output, audit: AuditLog | None
) -> AuditEntry:
    started, clock = datetime.now(UTC), time.monotonic()
    printed: list[str] = []
    size = 0

    def keep(node: str, text: str) -> None:
        nonlocal size
        if size < OUTPUT_LIMIT:
            printed.append(text)
            size += len(text)
        output(node, text)

    code = await runner.run(command, keep)
    entry = AuditEntry(
        command.command,
        command.node,
        started,
        code,
        "".join(printed),
        time.monotonic() - clock,
        command.place,
        rendered.playbook.id,
        command.step,
    )
    if audit is not None:
        audit.add(entry)
    return entry
