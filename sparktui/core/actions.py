"""Running a rendered playbook: the only module that changes anything on a node.

The commands are exactly those :func:`sparktui.core.playbooks.render` produced (and a dry run showed):
each runs on its node over that node's SSH connection, or on this machine for ``local`` steps, in order;
the first failure stops the run and the rollback steps run; every command becomes an
:class:`~sparktui.core.audit.AuditEntry`, appended to the audit log as it finishes. Read-only mode
refuses any playbook whose risk is not ``read-only`` before a single command runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import signal
import time
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Protocol
from urllib.parse import urlsplit

import asyncssh

from sparktui.core.audit import AuditEntry, AuditLog
from sparktui.core.lines import LineSplitter
from sparktui.core.playbooks import Command, Rendered
from sparktui.core.sources.base import SourceRefused, SourceUnavailable
from sparktui.core.sources.ssh import SshNode, split_target
from sparktui.core.text import decode, display
from sparktui.core.verify import Verdict, run_check

#: Called with (node, one line of output, without its newline) as each line arrives.
Output = Callable[[str, str], None]
#: The most of one command's output an audit entry keeps.
OUTPUT_LIMIT = 1 << 20
#: A line of output longer than this (a progress bar redrawn with \r) is shown in pieces as it grows.
LINE_LIMIT = 8192


class ActionError(Exception):
    """The run was refused before anything ran (read-only mode, an unknown node); one line."""


class Runner(ABC):
    """Reaches the nodes: runs one command on one node, and fetches a URL from a node."""

    @abstractmethod
    async def run(self, command: Command, output: Output) -> int | None:
        """Run ``command`` and return its exit code (None when it could not finish), calling ``output`` with
        what it prints (standard output and error together) as it comes."""

    @abstractmethod
    async def fetch(self, node: str, url: str) -> str:
        """GET ``url`` from ``node`` (``localhost`` there is the node) and return the HTTP status code, or
        why there is none (``connection refused``...)."""


class LocalRunner(Runner):
    async def run(self, command: Command, output: Output) -> int | None:
        process = await asyncio.create_subprocess_exec(
            "sh",
            "-c",
            command.command,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,  # its own process group, so stopping it stops what it started
        )
        assert process.stdout is not None
        lines = LineSplitter(limit=LINE_LIMIT)
        try:
            while chunk := await process.stdout.read(65536):
                _emit(command.node, lines.feed(chunk), output)
            _emit(command.node, lines.rest(), output)
            return await process.wait()
        finally:
            if process.returncode is None:  # cancelled (a check that has seen enough): stop it all
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                await process.wait()

    async def fetch(self, node: str, url: str) -> str:
        host, port, path = split_url(url)
        try:
            reader, writer = await asyncio.open_connection(host, port)
        except OSError as exc:
            return _why(exc)
        return await http_status(reader, writer, host, port, path)


class SshRunner(Runner):
    """Each node over its own SSH connection (``nodes`` maps node names to them); ``local`` steps here."""

    def __init__(self, nodes: Mapping[str, SshNode]) -> None:
        self.nodes = nodes
        self.local = LocalRunner()

    @classmethod
    def to(cls, targets: Mapping[str, str]) -> SshRunner:
        """A runner for nodes named by ``targets`` (name -> ``[user@]host[:port]`` or a ~/.ssh/config alias);
        connections open on first use."""
        nodes = {}
        for name, target in targets.items():
            try:
                user, host, port = split_target(target)
            except ValueError as exc:
                raise ActionError(str(exc)) from None
            nodes[name] = SshNode(host, user=user, port=port, name=name)
        return cls(nodes)

    async def close(self) -> None:
        for node in self.nodes.values():
            await node.close()

    async def run(self, command: Command, output: Output) -> int | None:
        if command.node == "local":
            return await self.local.run(command, output)
        node = self.nodes.get(command.node)
        if node is None:
            raise ActionError(f"no way to reach node {command.node!r}: it is not in the cluster file")
        script = f"sh -c {shlex.quote('{ ' + command.command + chr(10) + '} 2>&1')}"
        try:
            async with node.session(script, f"{command.node}: {command.step}") as session:
                lines = LineSplitter(limit=LINE_LIMIT)
                while chunk := await session.read():
                    _emit(command.node, lines.feed(chunk), output)
                _emit(command.node, lines.rest(), output)
                await session.ended()
                return session.process.exit_status
        except (SourceUnavailable, SourceRefused) as exc:
            output(command.node, f"[sparktui: {exc}]")
            return None

    async def fetch(self, node: str, url: str) -> str:
        if node == "local":
            return await self.local.fetch(node, url)
        host, port, path = split_url(url)
        ssh = self.nodes.get(node)
        if ssh is None:
            raise ActionError(f"no way to reach node {node!r}: it is not in the cluster file")
        try:
            reader, writer = await ssh.open_tcp(host, port)
        except (SourceUnavailable, SourceRefused) as exc:
            return str(exc)
        return await http_status(reader, writer, host, port, path)


def _emit(node: str, lines: list[str], output: Output) -> None:
    for line in lines:
        output(node, line)


def split_url(url: str) -> tuple[str, int, str]:
    """Host, port and path of an ``http://`` URL."""
    parts = urlsplit(url)
    if parts.scheme != "http" or not parts.hostname:
        raise ActionError(f"{url}: only http:// URLs can be checked")
    return parts.hostname, parts.port or 80, (parts.path or "/") + (f"?{parts.query}" if parts.query else "")


class _Reader(Protocol):
    async def readline(self) -> bytes: ...


class _Writer(Protocol):
    def write(self, data: bytes) -> None: ...
    async def drain(self) -> None: ...
    def close(self) -> None: ...


async def http_status(reader: _Reader, writer: _Writer, host: str, port: int, path: str) -> str:
    """Send one GET and return the status code of the answer (or why there is none); closes the stream."""
    try:
        writer.write(f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nConnection: close\r\n\r\n".encode())
        await writer.drain()
        line = await asyncio.wait_for(reader.readline(), timeout=30)
    except (OSError, asyncssh.Error, TimeoutError) as exc:
        return _why(exc)
    finally:
        writer.close()
    parts = line.split()
    if len(parts) >= 2 and parts[0].startswith(b"HTTP/") and parts[1].isdigit():
        return parts[1].decode()
    return "no HTTP answer" if not line else f"not HTTP: {display(decode(line[:80]))}"


def _why(exc: BaseException) -> str:
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused"
    if isinstance(exc, TimeoutError):
        return "no answer within 30 s"
    return str(exc) or type(exc).__name__


@dataclass
class Outcome:
    entries: list[AuditEntry] = field(default_factory=list)  # the steps, then the verification
    verdict: Verdict | None = None  # None when a step failed before the check
    rolled_back: list[AuditEntry] = field(default_factory=list)
    changed: bool = False  # whether a command that changes something ran (only checks: nothing to undo)

    @property
    def ok(self) -> bool:
        return all(e.exit_code == 0 for e in self.entries)

    @property
    def failure(self) -> str:
        """One line: what went wrong, or "" when nothing did."""
        if self.verdict is not None and not self.verdict.passed:
            return f"verification failed: {self.verdict.note}"
        for entry in self.entries:
            if entry.exit_code != 0:
                return f"{entry.node}: {entry.step}: {entry.outcome}"
        return ""


#: Asked, with what went wrong, whether to run the rollback now; None runs it without asking.
OfferRollback = Callable[[Outcome], Awaitable[bool]]


async def execute(
    rendered: Rendered,
    runner: Runner,
    *,
    readonly: bool = False,
    audit: AuditLog | None = None,
    output: Output = lambda node, text: None,
    offer_rollback: OfferRollback | None = None,
) -> Outcome:
    """Run the commands in order, then the verification; on the first failure (or a failed verification)
    stop, and run the rollback commands (after asking ``offer_rollback``, when given) unless every command
    that ran was one that changes nothing."""
    if readonly and rendered.playbook.risk != "read-only":
        raise ActionError(f"{rendered.playbook.id} is {rendered.playbook.risk}: refused in read-only mode")
    outcome = Outcome()
    for command in rendered.commands:
        outcome.changed = outcome.changed or command.changes
        entry = await _one(command, rendered, runner, output, audit)
        outcome.entries.append(entry)
        if entry.exit_code != 0:
            break
    else:
        outcome.verdict = await _verify(rendered, runner, output, audit, outcome)
    if outcome.ok or not rendered.rollback or not outcome.changed:
        return outcome
    if offer_rollback is None or await offer_rollback(outcome):
        for step in rendered.rollback:
            outcome.rolled_back.append(await _one(step, rendered, runner, output, audit))
    return outcome


async def _verify(
    rendered: Rendered, runner: Runner, output: Output, audit: AuditLog | None, outcome: Outcome
) -> Verdict:
    check = rendered.check
    started, clock = datetime.now(UTC), time.monotonic()
    printed = _Captured(output)
    output(check.node, f"[verify] {check.describe()}")
    verdict = await run_check(check, runner, printed.line)
    output(check.node, f"[verify] {'passed' if verdict.passed else 'FAILED'}: {verdict.note}")
    if check.kind != "none":
        entry = AuditEntry(
            check.describe(),
            check.node,
            started,
            0 if verdict.passed else 1,
            printed.text() + verdict.note + "\n",
            time.monotonic() - clock,
            "host",
            rendered.playbook.id,
            "verify",
        )
        outcome.entries.append(entry)
        if audit is not None:
            audit.add(entry)
    return verdict


class _Captured:
    """Passes each line on to ``output`` and keeps the first :data:`OUTPUT_LIMIT` characters for the audit."""

    def __init__(self, output: Output) -> None:
        self.output = output
        self.kept: list[str] = []
        self.size = 0

    def line(self, node: str, line: str) -> None:
        if self.size < OUTPUT_LIMIT:
            self.kept.append(line)
            self.size += len(line) + 1
        self.output(node, line)

    def text(self) -> str:
        return "".join(f"{line}\n" for line in self.kept)


async def _one(
    command: Command, rendered: Rendered, runner: Runner, output: Output, audit: AuditLog | None
) -> AuditEntry:
    started, clock = datetime.now(UTC), time.monotonic()
    printed = _Captured(output)
    code = await runner.run(command, printed.line)
    entry = AuditEntry(
        command.command,
        command.node,
        started,
        code,
        printed.text(),
        time.monotonic() - clock,
        command.place,
        rendered.playbook.id,
        command.step,
    )
    if audit is not None:
        audit.add(entry)
    return entry
