"""Reaching a node over SSH: one asyncssh connection per node, shared by every stream, command and
forwarded socket that sparktui opens there.

:class:`SshNode` owns the connection: opened on first use, shared by every session, opened again on the
next use after it dropped. It reads ``~/.ssh/config`` (Host aliases, User, Port, IdentityFile, ProxyJump),
uses the agent and sends keepalives, and checks the host key against ``known_hosts``: an unknown or changed
key is refused with a message saying how to trust it, and only ``trust_new_host_key=True`` records a new key
(never a changed one).

Every remote command is wrapped so that it ends when its channel closes or the connection drops (a watcher
reads the channel's stdin and kills the command at end of input), so no ``tail -F`` or ``journalctl -f`` is
left behind on a node.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shlex
import shutil
import socket
import tempfile
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import asyncssh

from sparktui.core.errors import Refused, Unavailable
from sparktui.core.remote.names import machine_names
from sparktui.core.text import decode

log = logging.getLogger(__name__)

CHUNK = 1 << 16
GLOBAL_KNOWN_HOSTS = Path("/etc/ssh/ssh_known_hosts")

#: Seconds the machine has to say its name once connected.
NAME_TIMEOUT = 5.0
#: Seconds a closed session's command has to end on the node (sshd counts the session until then).
CLOSE_WAIT = 5.0

# Every remote command runs as ``sh -c '<this> exec <command>'`` (whatever the login shell): a watcher
# holds the channel's stdin and kills the command (which replaced sh, so it is $$) when input ends, that
# is when the channel closes or the connection drops.
UNTIL_CLOSED = "exec 3<&0; { cat <&3; kill $$; } >/dev/null 2>&1 & exec 3<&-; exec "


class SshNode:
    """One machine reached over SSH, and the connection every source on it shares.

    ``host`` is a name or a ``~/.ssh/config`` alias; ``user`` and ``port`` override the config.
    ``config`` lists OpenSSH config files (default ``~/.ssh/config``); ``known_hosts`` is the file host
    keys are checked against and new ones recorded in (default ``~/.ssh/known_hosts``; the system's
    ``/etc/ssh/ssh_known_hosts`` is read too); ``client_keys`` replaces the config's IdentityFile;
    ``agent`` is ``True`` for the config's IdentityAgent or ``SSH_AUTH_SOCK``, ``False`` for none, or a
    socket path. Jump hosts (ProxyJump) are reached with what the config says for them.

    Raises :class:`Refused` for an unknown or changed host key, a refused authentication or an
    unusable configuration, :class:`Unavailable` when the node cannot be reached or the connection
    drops. When sshd refuses another session on the connection (its MaxSessions, 10 by default), a
    further connection is opened for the sessions beyond, and closed when they end.
    """

    def __init__(
        self,
        host: str,
        *,
        user: str | None = None,
        port: int | None = None,
        name: str | None = None,
        config: Sequence[str | Path] | None = None,
        known_hosts: str | Path | None = None,
        client_keys: Sequence[str | Path] | None = None,
        agent: bool | str = True,
        trust_new_host_key: bool = False,
        keepalive_interval: float = 15.0,
        connect_timeout: float = 10.0,
    ) -> None:
        self.host = host
        self.name = name or host
        self.user = user
        self.port = port
        self.config = [str(p) for p in config] if config is not None else None
        self.known_hosts = Path(known_hosts) if known_hosts is not None else Path.home() / ".ssh" / "known_hosts"
        self.client_keys = [str(p) for p in client_keys] if client_keys is not None else None
        self.agent = agent
        self.trust_new_host_key = trust_new_host_key
        self.keepalive_interval = keepalive_interval
        self.connect_timeout = connect_timeout
        self._links: list[_Link] = []
        self._lock = asyncio.Lock()
        self._forwards: dict[str, tuple[asyncio.Server, str]] = {}
        self._forward_dir: str | None = None
        #: The machine's own names (``uname -n`` and its first label, which NCCL prints), once connected.
        self.names: frozenset[str] = frozenset()

    def __repr__(self) -> str:
        return f"SshNode({self.name!r})"

    # -- the connection ------------------------------------------------------------------------

    async def connection(self) -> asyncssh.SSHClientConnection:
        """The node's connection, opened on first use and again after it dropped."""
        return (await self._link(with_room=False)).conn

    async def _link(self, with_room: bool) -> _Link:
        async with self._lock:
            self._links = [link for link in self._links if not link.conn.is_closed()]
            for link in self._links:
                if not (with_room and link.full):
                    return link
            link = _Link(await self._connect())
            self._links.append(link)
            return link

    async def _connect(self) -> asyncssh.SSHClientConnection:
        client = _Client(self, self._read_known_hosts())
        options: dict[str, Any] = {
            "known_hosts": client.known,
            "keepalive_interval": self.keepalive_interval,
            "connect_timeout": self.connect_timeout,
        }
        if self.user is not None:
            options["username"] = self.user
        if self.port is not None:
            options["port"] = self.port
        if self.config is not None:
            options["config"] = self.config
        if self.client_keys is not None:
            options["client_keys"] = self.client_keys
        if self.agent is not True:
            options["agent_path"] = self.agent or None
        try:
            conn, _ = await asyncssh.create_connection(lambda: client, self.host, **options)
        except asyncssh.HostKeyNotVerifiable as exc:
            raise Refused(client.problem or f"{self.name}: {exc.reason}") from None
        except asyncssh.PermissionDenied:
            raise Refused(
                f"{self.name}: authentication refused: no key offered (IdentityFile, agent) is accepted by {self.host}"
            ) from None
        except (asyncssh.KeyImportError, asyncssh.KeyEncryptionError, asyncssh.ConfigParseError) as exc:
            raise Refused(f"{self.name}: unusable SSH configuration or key: {exc}") from None
        except UnicodeError:  # the host cannot be encoded for the resolver (IDNA): control or direction characters
            raise Refused(f"{self.host!r} is not a host name (letters, digits, '-' and '.')") from None
        except socket.gaierror as exc:
            if exc.errno == socket.EAI_AGAIN:
                raise Unavailable(f"{self.name}: cannot resolve {self.host} now: {exc.strerror}") from None
            raise Refused(f"{self.name}: unknown host {self.host}: {exc.strerror}") from None
        except (FileNotFoundError, PermissionError) as exc:
            raise Refused(f"{self.name}: cannot read {exc.filename}: {exc.strerror}") from None
        except (OSError, asyncssh.Error, TimeoutError) as exc:
            raise Unavailable(f"{self.name}: cannot connect to {self.host}: {_reason(exc)}") from None
        if client.new_key is not None:
            self._record(client.new_key, client.key_host)
        if not self.names:
            self.names = await _names(conn)
        return conn

    def _read_known_hosts(self) -> asyncssh.SSHKnownHosts:
        text = ""
        try:
            text += self.known_hosts.read_text(errors="replace")
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise Refused(f"{self.name}: cannot read {self.known_hosts}: {exc.strerror}") from None
        with contextlib.suppress(OSError):
            text += "\n" + GLOBAL_KNOWN_HOSTS.read_text(errors="replace")
        try:
            return asyncssh.import_known_hosts(text)
        except (ValueError, asyncssh.KeyImportError) as exc:
            raise Refused(f"{self.name}: unreadable known_hosts ({self.known_hosts}): {exc}") from None

    def _record(self, key: asyncssh.SSHKey, entry: str) -> None:
        algorithm, data = key.export_public_key("openssh").decode().split()[:2]
        self.known_hosts.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(self.known_hosts, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        with os.fdopen(fd, "a") as fh:
            fh.write(f"{entry} {algorithm} {data}\n")
        log.warning(
            "%s: trusted the new host key of %s (%s) and recorded it in %s",
            self.name,
            entry,
            key.get_fingerprint(),
            self.known_hosts,
        )

    # -- commands ------------------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def session(self, command: str, what: str, *, stdin: bytes = b"") -> AsyncIterator[_Session]:
        """Run ``command`` (one simple command for the shell to exec: quote what it takes from elsewhere)
        in a session of its own; it ends when the block is left. ``what`` names the caller in errors. With
        ``stdin``, the command reads it, then its end, and is not watched for the channel's close (the watch
        reads the same input): a command that ends at the end of its input."""
        watched = "" if stdin else UNTIL_CLOSED
        while True:
            link = await self._link(with_room=True)
            link.sessions += 1
            try:
                process = await link.conn.create_process(f"sh -c {shlex.quote(watched + command)}", encoding=None)
                if stdin:
                    process.stdin.write(stdin)
                    process.stdin.write_eof()
            except asyncssh.ChannelOpenError as exc:
                link.sessions -= 1
                if link.sessions == 0:
                    raise Unavailable(f"{what}: {self.name} refused a session: {exc.reason}") from None
                link.full = True  # sshd's MaxSessions: the next try takes another connection
                continue
            except (OSError, asyncssh.Error) as exc:
                link.sessions -= 1
                raise Unavailable(f"{what}: connection to {self.name} lost: {_reason(exc)}") from None
            break
        try:
            yield _Session(self, link, process, what)
        finally:
            with contextlib.suppress(OSError, asyncssh.Error):
                process.stdin.write_eof()  # sshd keeps the command's stdin open until told: the watcher's cue
            process.close()
            try:
                # sshd counts the session against MaxSessions until its command has gone: a session opened
                # before then may be refused, so the count here follows sshd's.
                with contextlib.suppress(OSError, asyncssh.Error, TimeoutError):
                    await asyncio.wait_for(process.wait_closed(), CLOSE_WAIT)
            finally:
                link.sessions -= 1
            link.full = False
            if link.sessions == 0 and link in self._links[1:]:  # an extra connection no longer needed
                self._links.remove(link)
                link.conn.close()

    async def run(self, command: str, what: str) -> bytes:
        """Run ``command`` to its end and return its output. A failure raises :class:`Unavailable`
        (:class:`Refused` when the command cannot run at all) with its first line on stderr."""
        async with self.session(command, what) as s:
            chunks = []
            while chunk := await s.read():
                chunks.append(chunk)
            error = await s.ended()
            if s.process.exit_status == 0:
                return b"".join(chunks)
            raise error

    # -- forwarding ----------------------------------------------------------------------------

    async def forward_unix(self, remote: str) -> str:
        """A local unix socket path whose connections reach the unix socket ``remote`` on the node.

        Each local connection goes over the node's connection as it is at that moment (reopened if it
        dropped), so the path stays valid across reconnects; a local connection made while the node is
        unreachable is closed at once."""
        await self.connection()
        if remote not in self._forwards:
            if self._forward_dir is None:
                self._forward_dir = tempfile.mkdtemp(prefix="sparktui-ssh-")
            path = os.path.join(self._forward_dir, f"{len(self._forwards)}.sock")

            async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
                try:
                    await self._pipe(remote, reader, writer)
                except asyncio.CancelledError:
                    # The session ends while a connection is open: the end of this connection, not an error.
                    # (Python 3.11's stream server asks a cancelled task for its exception, which prints a
                    # traceback: it must not end cancelled.)
                    writer.close()

            self._forwards[remote] = (await asyncio.start_unix_server(pipe, path), path)
        return self._forwards[remote][1]

    async def _pipe(self, remote: str, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            far_reader, far_writer = await self._open_unix(remote)
        except (Unavailable, Refused, OSError, asyncssh.Error) as exc:
            # The client (the Docker SDK) sees its connection closed, and its source says so, with its retries.
            log.debug("%s: cannot forward to %s: %s", self.name, remote, exc)
            writer.close()
            return
        try:
            await asyncio.gather(_copy(reader, far_writer), _copy(far_reader, writer))
        finally:
            far_writer.close()
            writer.close()

    async def _open_unix(self, remote: str) -> tuple[asyncssh.SSHReader[bytes], asyncssh.SSHWriter[bytes]]:
        conn = await self.connection()
        try:
            return await conn.open_unix_connection(remote)
        except (OSError, asyncssh.Error) as exc:
            if not conn.is_closed():
                raise Unavailable(f"{self.name}: cannot reach {remote}: {_reason(exc)}") from None
        return await (await self.connection()).open_unix_connection(remote)  # it had just dropped: once more

    async def open_tcp(self, host: str, port: int) -> tuple[asyncssh.SSHReader[bytes], asyncssh.SSHWriter[bytes]]:
        """A TCP connection the node itself makes to ``host:port`` (so ``localhost`` is the node)."""
        conn = await self.connection()
        try:
            return await conn.open_connection(host, port, encoding=None)
        except (OSError, asyncssh.Error) as exc:
            raise Unavailable(f"{self.name}: cannot reach {host}:{port}: {_reason(exc)}") from None

    async def close(self) -> None:
        """Close the connections and the forwarded sockets."""
        for server, _ in self._forwards.values():
            server.close()
        self._forwards.clear()
        if self._forward_dir is not None:
            shutil.rmtree(self._forward_dir, ignore_errors=True)
            self._forward_dir = None
        links, self._links = self._links, []
        for link in links:
            link.conn.close()
        for link in links:
            await link.conn.wait_closed()


@dataclass(eq=False, slots=True)
class _Link:
    conn: asyncssh.SSHClientConnection
    sessions: int = 0
    full: bool = False


class _Client(asyncssh.SSHClient):
    """Host key checks beyond a plain match: tells a changed key from an unknown one, and accepts a new
    key (never a changed one) when the node allows it."""

    def __init__(self, node: SshNode, known: asyncssh.SSHKnownHosts) -> None:
        super().__init__()
        self.node = node
        self.known = known
        self.problem: str | None = None
        self.new_key: asyncssh.SSHKey | None = None
        self.key_host = ""

    def validate_host_public_key(self, host: str, addr: str, port: int, key: asyncssh.SSHKey) -> bool:
        entry = host if port == 22 else f"[{host}]:{port}"
        node, path = self.node.name, self.node.known_hosts
        trusted, ca_keys, *_ = self.known.match(host, addr, None if port == 22 else port)
        if trusted or ca_keys:
            self.problem = (
                f"{node}: the host key of {entry} has CHANGED (now {key.get_fingerprint()}): the node was "
                f"reinstalled or someone is in the way; if you know it is the former, remove the old key with "
                f"`ssh-keygen -R {shlex.quote(entry)} -f {shlex.quote(str(path))}` and connect again"
            )
            return False
        if not self.node.trust_new_host_key:
            self.problem = (
                f"{node}: the host key of {entry} ({key.get_fingerprint()}) is not in {path}; check the "
                f"fingerprint, then add it with `ssh-keyscan -p {port} {shlex.quote(host)} >> "
                f"{shlex.quote(str(path))}`, or connect once with --trust-new-host-key (sparktui SOURCE..., "
                "diagnose --follow and discover take it)"
            )
            return False
        self.new_key, self.key_host = key, entry
        return True


class _Session:
    """A remote command started by :meth:`SshNode.session`, read with connection errors translated."""

    def __init__(self, node: SshNode, link: _Link, process: asyncssh.SSHClientProcess[bytes], what: str) -> None:
        self.node = node
        self.link = link
        self.process = process
        self.what = what

    async def read(self) -> bytes:
        """The next output, ``b""`` at the end."""
        try:
            return await self.process.stdout.read(CHUNK)
        except (OSError, asyncssh.Error) as exc:
            raise Unavailable(f"{self.what}: connection to {self.node.name} lost: {_reason(exc)}") from None

    async def readline(self) -> bytes:
        try:
            return await self.process.stdout.readline()
        except (OSError, asyncssh.Error) as exc:
            raise Unavailable(f"{self.what}: connection to {self.node.name} lost: {_reason(exc)}") from None

    async def ended(self, detail: str = "") -> Unavailable | Refused:
        """Why the output ended: the connection dropped, the command could not run, or it stopped."""
        if self.link.conn.is_closed():
            return Unavailable(f"{self.what}: connection to {self.node.name} lost")
        try:
            await asyncio.wait_for(self.process.wait_closed(), 10)
            errors = await asyncio.wait_for(self.process.stderr.read(), 1)
        except (OSError, asyncssh.Error, TimeoutError):
            return Unavailable(f"{self.what}: connection to {self.node.name} lost")
        if self.link.conn.is_closed() and self.process.exit_status is None:
            return Unavailable(f"{self.what}: connection to {self.node.name} lost")
        reason = next((line for line in decode(errors).splitlines() if line.strip()), "") or detail
        status = self.process.exit_status
        if status in (126, 127):
            return Refused(f"{self.what}: cannot run the command on {self.node.name}: {reason}")
        ended = f"{self.what}: the command on {self.node.name} ended (exit {status})"
        return Unavailable(f"{ended}: {reason}" if reason else ended)


class _Reader(Protocol):
    async def read(self, n: int = -1) -> bytes: ...


class _Writer(Protocol):
    def write(self, data: bytes) -> None: ...

    async def drain(self) -> None: ...

    def write_eof(self) -> None: ...

    def close(self) -> None: ...


async def _copy(reader: _Reader, writer: _Writer) -> None:
    """Copy until end of input; when either end fails (the SSH connection dropped), close the writer so
    the other side sees it too, instead of waiting forever on a half that will never speak again."""
    try:
        while data := await reader.read(CHUNK):
            writer.write(data)
            await writer.drain()
        writer.write_eof()
    except (OSError, asyncssh.Error):
        with contextlib.suppress(OSError, asyncssh.Error):
            writer.close()


async def _names(conn: asyncssh.SSHClientConnection) -> frozenset[str]:
    """The names the machine goes by in its own logs; none where it does not say them in time."""
    try:
        done = await asyncio.wait_for(conn.run("uname -n", check=False), NAME_TIMEOUT)
    except (OSError, asyncssh.Error, TimeoutError):
        return frozenset()
    out = done.stdout
    return machine_names(out.decode(errors="replace") if isinstance(out, bytes) else str(out or ""))


def _reason(exc: BaseException) -> str:
    if isinstance(exc, asyncssh.Error):
        return exc.reason
    if isinstance(exc, OSError) and exc.errno:
        return os.strerror(exc.errno)
    return str(exc) or type(exc).__name__
