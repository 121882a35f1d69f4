"""OpenSSH ``sshd`` started by the tests: separate nodes on loopback addresses, generated keys, and a
client configuration that never touches the real ``~/.ssh``.

``node-a`` listens on 127.0.0.2 and ``node-b`` on 127.0.0.3; ``node-b`` (and every command run on it)
lives in a private mount namespace that also runs a real ``systemd-journald``, so journal sources read
a real journal without touching the host's. The fixtures that use this module are in ``conftest.py``.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import pytest

from sparktui.core.remote.ssh import SshNode
from tests.waiting import wait_until

SSHD = "/usr/sbin/sshd"
JOURNALD = "/lib/systemd/systemd-journald"
ADDRESSES = {"node-a": "127.0.0.2", "node-b": "127.0.0.3"}
UNREACHABLE = "127.0.0.9"

# What the test nodes' shells read: nothing of this machine's ~/.bashrc, which bash reads for every command
# sshd runs. A development machine's may start pyenv, whose rehash takes a lock shared by every session: a
# fifth of a second a command, and seconds of waiting when sessions overlap. The nodes' commands run as on
# a plain node, with sshd's own PATH.
PLAIN_SHELL = "[ ! -e /root/.bashrc ] || mount --bind /dev/null /root/.bashrc"
# node-b's, inside its own mount namespace: a private /run/systemd and /run/log, so this journald shares
# nothing with the host (no /dev/log, no journal files outside the tmpfs).
_JOURNAL_NAMESPACE = f"""
set -e
{PLAIN_SHELL}
mount -t tmpfs -o mode=755 tmpfs /run/systemd
mount -t tmpfs -o mode=755 tmpfs /run/log
mkdir -p /run/systemd/journal /run/systemd/journald.conf.d
printf '[Journal]\\nStorage=volatile\\nReadKMsg=no\\nForwardToSyslog=no\\nForwardToWall=no\\n' \
  > /run/systemd/journald.conf.d/sparktui-tests.conf
exec {JOURNALD}
"""


def free_port(address: str) -> int:
    with socket.socket() as s:
        s.bind((address, 0))
        return int(s.getsockname()[1])


def accepts(address: str, port: int) -> bool:
    try:
        with socket.create_connection((address, port), timeout=0.5) as s:
            return s.recv(4).startswith(b"SSH-")
    except OSError:
        return False


def keygen(path: Path, comment: str) -> Path:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(path)], check=True)
    return path


def children(pid: int) -> list[int]:
    """Every process descending from ``pid``."""
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        parents.setdefault(ppid, []).append(int(entry.name))
    found: list[int] = []
    todo = [pid]
    while todo:
        for child in parents.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def command_line(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


@dataclass
class Sshd:
    """One node: an ``sshd -D`` on ``address:port`` with its own host key."""

    alias: str
    address: str
    port: int
    host_key: Path
    config: Path
    log: Path
    namespace_of: int | None = None  # run inside the mount namespace of this process
    process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        command = [SSHD, "-D", "-e", "-f", str(self.config)]
        if self.namespace_of is not None:
            command = ["nsenter", f"--mount=/proc/{self.namespace_of}/ns/mnt", "--", *command]
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        wait_until(lambda: accepts(self.address, self.port) or self.process.poll() is not None, 15, "sshd")
        if self.process.poll() is not None:
            raise AssertionError(f"sshd for {self.alias} exited: {self.log.read_text()[-2000:]}")

    def sessions(self) -> list[int]:
        """The per-connection sshd processes (not the listener, not the commands they run)."""
        assert self.process is not None
        return [p for p in children(self.process.pid) if command_line(p).startswith(("sshd:", "sshd-session:"))]

    def kill_connections(self) -> int:
        """Cut every open connection, as a crashed per-connection sshd would."""
        pids = self.sessions()
        for pid in pids:
            _kill(pid, signal.SIGKILL)
        return len(pids)

    def freeze_connections(self) -> list[int]:
        """Stop the per-connection processes: the TCP connection stays open but nothing answers."""
        pids = self.sessions()
        for pid in pids:
            _kill(pid, signal.SIGSTOP)
        return pids

    def stop(self) -> None:
        if self.process is None:
            return
        self.kill_connections()
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.process = None

    def restart(self) -> None:
        self.stop()
        self.start()


def _kill(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, sig)


@dataclass
class Journal:
    """A real systemd-journald in a private mount namespace; ``node-b`` runs inside it."""

    process: subprocess.Popen[bytes]

    @property
    def socket(self) -> str:
        return f"/proc/{self.process.pid}/root/run/systemd/journal/socket"

    def write(self, unit: str, message: bytes) -> None:
        """Send one entry as a root service would, attributed to ``unit`` (``journalctl -u`` matches
        ``OBJECT_SYSTEMD_UNIT`` from uid 0). Binary-safe: the native protocol's length-prefixed form."""
        entry = b"OBJECT_SYSTEMD_UNIT=" + unit.encode() + b"\nMESSAGE\n"
        entry += len(message).to_bytes(8, "little") + message + b"\n"
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as s:
            s.sendto(entry, self.socket)

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(10)


class SshClient:
    """The client side of test nodes: their ``ssh_config`` and ``known_hosts``, never the real ``~/.ssh``."""

    ssh_config: Path
    known_hosts: Path
    made: list[SshNode]
    first: ClassVar[str]  # the node ``node()`` reaches when none is named

    def node(self, host: str | None = None, **options: Any) -> SshNode:
        """An :class:`SshNode` that reads only these files (no agent, no real ``~/.ssh``)."""
        options.setdefault("config", [self.ssh_config])
        options.setdefault("known_hosts", self.known_hosts)
        options.setdefault("agent", False)
        node = SshNode(host or self.first, **options)
        self.made.append(node)
        return node

    def home_for(self, home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
        """Make ``home`` the HOME of sparktui under test, its ``~/.ssh`` reaching these nodes by their names."""
        (home / ".ssh").mkdir(parents=True, mode=0o700)
        shutil.copy(self.ssh_config, home / ".ssh" / "config")
        shutil.copy(self.known_hosts, home / ".ssh" / "known_hosts")
        monkeypatch.setenv("HOME", str(home))
        monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)
        return home


@dataclass
class SshdCluster(SshClient):
    """The test nodes, the keys and the client files that reach them."""

    root: Path
    nodes: dict[str, Sshd]
    journal: Journal
    user_key: Path
    refused_key: Path
    known_hosts: Path
    ssh_config: Path
    closed_port: int
    made: list[SshNode] = field(default_factory=list)
    plain: subprocess.Popen[bytes] | None = None  # holds node-a's mount namespace
    first: ClassVar[str] = "node-a"

    def __getitem__(self, alias: str) -> Sshd:
        return self.nodes[alias]

    def known_hosts_line(self, alias: str, key_of: str | None = None) -> str:
        """The ``known_hosts`` entry for ``alias``, with the host key of ``key_of`` (a wrong key) if given."""
        node = self.nodes[alias]
        key = self.nodes[key_of or alias].host_key.with_suffix(".pub").read_text().split()[:2]
        return f"[{node.address}]:{node.port} {' '.join(key)}\n"


def sshd_config(listen: list[str], host_key: Path, authorized_keys: Path, *more: str) -> str:
    """An ``sshd_config`` for a test node: key logins only, as root, listening on ``listen``
    (``address:port`` each), with ``more`` lines after."""
    lines = [f"ListenAddress {where}" for where in listen]
    lines += [f"HostKey {host_key}", f"AuthorizedKeysFile {authorized_keys}", "PidFile none"]
    lines += ["PermitRootLogin prohibit-password", "PubkeyAuthentication yes", "PasswordAuthentication no"]
    lines += ["KbdInteractiveAuthentication no", "UsePAM no", "StrictModes no", *more]
    return "\n".join(lines) + "\n"


def private_mounts(script: str, *args: str, **popen: Any) -> subprocess.Popen[bytes]:
    """A mount namespace of its own, set up by the shell ``script`` (``$0``... are ``args``), which ends by
    ``exec``-ing what holds the namespace: processes started in it (``nsenter --mount``) see its mounts.
    ``popen`` goes to :class:`subprocess.Popen` (where its output goes)."""
    command = ["unshare", "--mount", "--propagation", "private", "--", "sh", "-c", script, *args]
    return subprocess.Popen(command, **popen)


def plain_namespace(setup: str = "", *args: str) -> subprocess.Popen[bytes]:
    """A mount namespace held by a sleeping process, where root's ``~/.bashrc`` reads as empty
    (:data:`PLAIN_SHELL`), set up further by the shell lines ``setup`` (``$0``... are ``args``): an sshd run
    in it (:attr:`Sshd.namespace_of`) runs its commands as a plain node would."""
    holder = private_mounts(f"set -e\n{PLAIN_SHELL}\n{setup}\nexec sleep infinity", *args)
    wait_until(
        lambda: command_line(holder.pid).startswith("sleep") or holder.poll() is not None, 15, "a mount namespace"
    )
    if holder.poll() is not None:
        raise RuntimeError("cannot make a mount namespace (unshare --mount)")
    return holder


def start_cluster(root: Path) -> SshdCluster:
    root.chmod(0o700)
    Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # sshd's privilege separation directory
    user_key = keygen(root / "id_user", "sparktui-tests")
    refused_key = keygen(root / "id_refused", "sparktui-tests-refused")
    (root / "authorized_keys").write_text(user_key.with_suffix(".pub").read_text())
    nodes: dict[str, Sshd] = {}
    for alias, address in ADDRESSES.items():
        port = free_port(address)
        config = root / f"sshd_config.{alias}"
        host_key = keygen(root / f"host_key_{alias}", alias)
        config.write_text(sshd_config([f"{address}:{port}"], host_key, root / "authorized_keys", "LogLevel VERBOSE"))
        nodes[alias] = Sshd(
            alias,
            address,
            port,
            host_key,
            config,
            root / f"sshd.{alias}.log",
            namespace_of=None,
        )
    known_hosts = root / "known_hosts"
    ssh_config = root / "ssh_config"
    closed_port = free_port(UNREACHABLE)
    common = f"  User root\n  UserKnownHostsFile {known_hosts}\n"
    ssh_config.write_text(
        "".join(
            f"Host {alias}\n  HostName {n.address}\n  Port {n.port}\n{common}  IdentityFile {user_key}\n"
            for alias, n in nodes.items()
        )
        + f"Host node-b-via-a\n  HostName {nodes['node-b'].address}\n  Port {nodes['node-b'].port}\n"
        f"{common}  IdentityFile {user_key}\n  ProxyJump node-a\n"
        f"Host node-a-refused\n  HostName {nodes['node-a'].address}\n  Port {nodes['node-a'].port}\n"
        f"{common}  IdentityFile {refused_key}\n"
        f"Host down\n  HostName {UNREACHABLE}\n  Port {closed_port}\n{common}  IdentityFile {user_key}\n"
    )
    journal = Journal(
        private_mounts(_JOURNAL_NAMESPACE, stdout=subprocess.DEVNULL, stderr=(root / "journald.log").open("wb"))
    )
    cluster = SshdCluster(root, nodes, journal, user_key, refused_key, known_hosts, ssh_config, closed_port)
    known_hosts.write_text("".join(cluster.known_hosts_line(alias) for alias in nodes))
    try:
        journald = journal.process
        wait_until(lambda: os.path.exists(journal.socket) or journald.poll() is not None, 15, "journald")
        if journald.poll() is not None:
            raise AssertionError(f"journald exited: {(root / 'journald.log').read_text()}")
        nodes["node-b"].namespace_of = journald.pid
        cluster.plain = plain_namespace()
        nodes["node-a"].namespace_of = cluster.plain.pid
        for node in nodes.values():
            node.start()
    except BaseException:
        stop_cluster(cluster)
        raise
    return cluster


def stop_cluster(cluster: SshdCluster) -> None:
    for node in cluster.nodes.values():
        node.stop()
    cluster.journal.stop()
    if cluster.plain is not None:
        cluster.plain.kill()
        cluster.plain.wait()
