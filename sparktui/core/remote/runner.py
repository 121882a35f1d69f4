"""Running one command on one node: over the node's SSH connection, or on this machine for ``local``; and
fetching a URL from a node. Nothing here decides whether a command should run (that is
:mod:`sparktui.core.remedy.actions`); this is only how it runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import signal
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Protocol
from urllib.parse import urlsplit

import asyncssh

from sparktui.core.address import ssh_address
from sparktui.core.audit import AuditEntry, AuditLog
from sparktui.core.errors import Refused, Unavailable
from sparktui.core.lines import LineSplitter
from sparktui.core.remote.command import Command
from sparktui.core.remote.ssh import SshNode
from sparktui.core.text import decode, display

#: Called with (node, one line of output, without its newline) as each line arrives.
Output = Callable[[str, str], None]
#: A line of output longer than this (a progress bar redrawn with \r) is shown in pieces as it grows.
LINE_LIMIT = 8192
#: Characters of a command's output kept for the audit log (the rest is shown, not kept).
OUTPUT_LIMIT = 1 << 20


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

    @abstractmethod
    async def connect(self, node: str, host: str, port: int) -> tuple[_StreamReader, _Writer]:
        """A TCP connection that ``node`` itself opens to ``host:port`` (``localhost`` is the node); raises
        :class:`OSError` or :class:`Unavailable` when there is none."""


class LocalRunner(Runner):
    """Runs a command on this machine, in a process group of its own so that stopping it stops what it started."""

    async def run(self, command: Command, output: Output) -> int | None:
        process = await asyncio.create_subprocess_exec(
            "sh",
            "-c",
            command.command,
            stdin=asyncio.subprocess.PIPE if command.stdin else None,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,  # its own process group, so stopping it stops what it started
        )
        assert process.stdout is not None
        lines = LineSplitter(limit=LINE_LIMIT)
        try:
            if command.stdin:
                assert process.stdin is not None
                process.stdin.write(command.stdin)
                await process.stdin.drain()
                process.stdin.close()
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

    async def connect(self, node: str, host: str, port: int) -> tuple[_StreamReader, _Writer]:
        return await asyncio.open_connection(host, port)


class SshRunner(Runner):
    """Each node over its own SSH connection (``nodes`` maps node names to them); ``local`` steps here."""

    def __init__(self, nodes: Mapping[str, SshNode]) -> None:
        self.nodes = nodes
        self.local = LocalRunner()

    @classmethod
    def to(cls, targets: Mapping[str, str], *, trust_new_host_key: bool = False) -> SshRunner:
        """A runner for nodes named by ``targets`` (name -> ``[user@]host[:port]`` or a ~/.ssh/config alias; an
        empty target is this machine, run as "local"); connections open on first use. Raises :class:`Refused`
        for a target that is no address."""
        nodes = {}
        for name, target in targets.items():
            if not target:
                continue
            try:
                user, host, port = ssh_address(target)
            except ValueError as exc:
                raise Refused(str(exc)) from None
            nodes[name] = SshNode(host, user=user, port=port, name=name, trust_new_host_key=trust_new_host_key)
        return cls(nodes)

    async def close(self) -> None:
        for node in self.nodes.values():
            await node.close()

    async def run(self, command: Command, output: Output) -> int | None:
        if command.node == "local":
            return await self.local.run(command, output)
        node = self.nodes.get(command.node)
        if node is None:
            raise Refused(f"no way to reach node {command.node!r}: it is not in the cluster file")
        script = f"sh -c {shlex.quote('{ ' + command.command + chr(10) + '} 2>&1')}"
        try:
            async with node.session(script, f"{command.node}: {command.step}", stdin=command.stdin) as session:
                lines = LineSplitter(limit=LINE_LIMIT)
                while chunk := await session.read():
                    _emit(command.node, lines.feed(chunk), output)
                _emit(command.node, lines.rest(), output)
                await session.ended()
                return session.process.exit_status
        except (Unavailable, Refused) as exc:
            output(command.node, f"[sparktui: {exc}]")
            return None

    async def fetch(self, node: str, url: str) -> str:
        if node == "local":
            return await self.local.fetch(node, url)
        host, port, path = split_url(url)
        ssh = self.nodes.get(node)
        if ssh is None:
            raise Refused(f"no way to reach node {node!r}: it is not in the cluster file")
        try:
            reader, writer = await ssh.open_tcp(host, port)
        except (Unavailable, Refused) as exc:
            return str(exc)
        return await http_status(reader, writer, host, port, path)

    async def connect(self, node: str, host: str, port: int) -> tuple[_StreamReader, _Writer]:
        if node == "local":
            return await self.local.connect(node, host, port)
        ssh = self.nodes.get(node)
        if ssh is None:
            raise Refused(f"no way to reach node {node!r}: it is not in the cluster file")
        return await ssh.open_tcp(host, port)


class Captured:
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


async def recorded(
    runner: Runner, command: Command, output: Output, audit: AuditLog | None, playbook: str = ""
) -> AuditEntry:
    """Run ``command``, its output passed on to ``output`` as it comes; what the audit log keeps of it (a
    command sent an input says how much), added to ``audit`` when given."""
    started, clock = datetime.now(UTC), time.monotonic()
    printed = Captured(output)
    code = await runner.run(command, printed.line)
    said = command.command + (f"  # input: {len(command.stdin)} bytes" if command.stdin else "")
    seconds = time.monotonic() - clock
    entry = AuditEntry(
        said, command.node, started, code, printed.text(), seconds, command.place, playbook, command.step
    )
    if audit is not None:
        audit.add(entry)
    return entry


def _emit(node: str, lines: list[str], output: Output) -> None:
    for line in lines:
        output(node, line)


def split_url(url: str) -> tuple[str, int, str]:
    """Host, port and path of an ``http://`` URL."""
    parts = urlsplit(url)
    if parts.scheme != "http" or not parts.hostname:
        raise Refused(f"{url}: only http:// URLs can be checked")
    return parts.hostname, parts.port or 80, (parts.path or "/") + (f"?{parts.query}" if parts.query else "")


class _Reader(Protocol):
    async def readline(self) -> bytes: ...


class _StreamReader(_Reader, Protocol):
    async def readexactly(self, n: int, /) -> bytes: ...
    async def read(self, n: int = -1, /) -> bytes: ...


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
