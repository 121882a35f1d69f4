"""From the arguments a user gives to sources: log files, directories of them and incident bundles (read
once), and live sources (local paths followed, ``ssh://``, ``docker://``, ``ray://``, and a server's
``/metrics`` read every few seconds: ``metrics://host:port`` or ``http://host:port/metrics``).

One :class:`Opener` per session, so every source on one SSH node shares that node's connection.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple
from urllib.parse import unquote, urlsplit

from sparktui.core.errors import Invalid, Refused, Unavailable
from sparktui.core.sources.base import Cursor, LiveSource, SourceGroup
from sparktui.core.sources.bundle import BundleError, is_bundle
from sparktui.core.sources.bundle import load as load_bundle
from sparktui.core.sources.descriptors import make_room
from sparktui.core.sources.files import STDIN, FileRead, FileSource, looks_binary, stdin, unique_names
from sparktui.core.sources.follow import FollowedFile

if TYPE_CHECKING:  # imported when an ssh:// source is opened, not at start-up
    from sparktui.core.remote.ssh import SshNode

#: Looks at followed files a session may take per second, in all: a session on a directory of thousands
#: of logs looks at each of them less often (every file once every POLL_SECONDS, at most this many a second)
#: rather than spend a core polling files that do not grow.
POLLS_PER_SECOND = 1000
_CONTAINER = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
_UNIT = re.compile(r"[A-Za-z0-9:_.@\\-]+")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def file_sources(arguments: Iterable[str]) -> tuple[list[FileSource], list[str]]:
    """Expand the command-line arguments into file sources; returns the sources and one-line problems
    (a missing path, an unreadable directory, binary files skipped inside a directory). A directory with a
    ``bundle.toml`` is read as the bundle's logs, with the nodes its manifest names."""
    sources: list[FileSource] = []
    problems: list[str] = []
    for arg in arguments:
        path = Path(arg)
        if arg == STDIN:
            sources.append(stdin())
        elif is_bundle(path):
            try:
                loaded = load_bundle(path)
            except BundleError as exc:
                problems.append(str(exc))
                continue
            sources += [FileSource(s.path, s.name, s.node) for s in loaded.sources]
        elif path.is_dir():
            try:
                files = sorted(p for p in path.rglob("*") if p.is_file() and not p.name.startswith("."))
            except OSError as exc:
                problems.append(f"{arg}: cannot list directory: {exc.strerror or exc}")
                continue
            for file in files:
                if looks_binary(file):
                    problems.append(f"{file}: skipped, not a text log")
                    continue
                sources.append(FileSource(file, str(file.relative_to(path))))
        elif path.exists():
            sources.append(FileSource(path, path.name))
        else:
            problems.append(f"{arg}: {_missing(path)}")
    return unique_names(sources), problems


def _missing(path: Path) -> str:
    """Why ``path``, which does not exist as far as ``exists`` can tell, cannot be read: the system's reason (a
    symbolic link loop, a folder that may not be looked into), not always "no such file"."""
    try:
        path.stat()
    except OSError as exc:
        why = exc.strerror or str(exc)
        return why[:1].lower() + why[1:]
    return "no such file or directory"  # made meanwhile


class UriError(Invalid):
    """A source argument that names nothing usable; the message is one line."""


class Opener:
    """Turns arguments into sources; ``trust_new_host_key`` is the explicit choice to record host keys
    seen for the first time (a changed key is refused all the same)."""

    def __init__(self, *, trust_new_host_key: bool = False) -> None:
        self.trust_new_host_key = trust_new_host_key
        self._nodes: dict[tuple[str | None, str, int | None], SshNode] = {}

    def open(self, arguments: list[str]) -> list[LiveSource | SourceGroup]:
        sources: list[LiveSource | SourceGroup] = []
        local = iter(_local([arg for arg in arguments if scheme(arg) is None]))
        for arg in arguments:
            kind = scheme(arg)
            if kind is None:
                sources += next(local)
            else:
                sources.append(kind.follow(self, arg))
        followed = [s for s in sources if isinstance(s, FollowedFile)]
        for source in followed:
            source.poll = max(source.poll, len(followed) / POLLS_PER_SECOND)
        make_room(sum(isinstance(s, LiveSource) for s in sources))  # a descriptor each, a followed file's kept
        return sources

    def node_for(self, uri: SshUri) -> SshNode:
        """The session's connection to the node ``uri`` names (one per user, host and port)."""
        from sparktui.core.remote.ssh import SshNode

        key = (uri.user, uri.host, uri.port)
        node = self._nodes.get(key)
        if node is None:
            node = self._nodes[key] = SshNode(
                uri.host, user=uri.user, port=uri.port, trust_new_host_key=self.trust_new_host_key
            )
        return node


def _ssh(opener: Opener, arg: str) -> LiveSource | SourceGroup:
    from sparktui.core.sources import ssh

    try:
        uri = parse_ssh_uri(arg)
    except ValueError as exc:
        raise UriError(str(exc)) from None
    node = opener.node_for(uri)
    if uri.kind == "file":
        return ssh.SshFileSource(node, uri.target)
    if uri.kind == "journal":
        return ssh.SshJournalSource(node, uri.target)
    if uri.kind == "ray":
        return _SshRay(arg, node)
    if uri.kind == "metrics":
        from sparktui.core.sources.metrics import MetricsSource

        # the node's own localhost, through its SSH connection: the server need not listen beyond it
        url = f"http://localhost:{uri.target}/metrics"
        return MetricsSource(url, name=arg, node=node.name, connect=node.open_tcp)
    return SshContainer(arg, node, uri.target)


class _SshRay(SourceGroup):
    """The Ray logs of a node's session directory (``logs``), over SSH; listed again every
    :data:`~sparktui.core.sources.ssh.RAY_RELIST_SECONDS` for the files that appear later (a job's workers')."""

    def __init__(self, name: str, node: SshNode, logs: str | None = None) -> None:
        from sparktui.core.sources import ssh

        self.name, self.node, self.logs = name, node, logs or ssh.RAY_LOGS
        self._listed: set[str] = set()

    async def expand(self) -> list[LiveSource]:
        from sparktui.core.sources import ssh

        found: list[LiveSource] = list(await ssh.ray_session_sources(self.node, self.logs))
        self._listed.update(s.name for s in found)
        return found

    async def later(self) -> AsyncIterator[LiveSource]:
        """Each log that a listing finds and none before it did, followed from its start; a listing that fails
        waits for the next turn (the sources found say what is wrong meanwhile)."""
        from sparktui.core.sources import ssh

        while True:
            await asyncio.sleep(ssh.RAY_RELIST_SECONDS)
            try:
                found = await ssh.ray_session_sources(self.node, self.logs)
            except (Unavailable, Refused):
                continue
            for source in found:
                if source.name not in self._listed:
                    self._listed.add(source.name)
                    yield source


class SshContainer(SourceGroup):
    """A container on a node, read with the Docker SDK through the node's forwarded Docker socket; followed,
    or read once (``follow=False``) from ``start`` (a cursor of the container's logs) on."""

    def __init__(
        self, name: str, node: SshNode, container: str, *, follow: bool = True, start: Cursor | None = None
    ) -> None:
        self.name, self.node, self.container = name, node, container
        self.follow, self.start = follow, start
        self.finite = not follow

    async def expand(self) -> list[LiveSource]:
        from sparktui.core.remote.docker import SOCKET, node_engine
        from sparktui.core.sources import docker

        socket = await self.node.forward_unix(SOCKET)
        return [
            docker.DockerSource(
                self.container,
                base_url=f"unix://{socket}",
                name=self.name,
                node=self.node.name,
                engine=node_engine(self.node.name),
                follow=self.follow,
                start=self.start,
            )
        ]


def _docker(_opener: Opener, arg: str) -> LiveSource:
    from sparktui.core.sources import docker

    container = arg.split("://", 1)[1].strip("/")
    if not container or "/" in container:
        raise UriError(f"{arg}: expected docker://<container name or id>")
    return docker.DockerSource(container, name=arg)


def _ray(_opener: Opener, arg: str) -> SourceGroup:
    """``ray://head[:port]`` (every alive node's important logs) or ``ray://head[:port]/GLOB`` (the files
    whose names match), followed."""
    return _ray_logs(arg, follow=True)


def _ray_once(arg: str) -> SourceGroup:
    """A ``ray://`` argument's logs read once, to their end, through Ray's log API."""
    return _ray_logs(arg, follow=False)


def _ray_logs(arg: str, *, follow: bool) -> SourceGroup:
    from sparktui.core.sources import ray

    address, glob = ray_uri(arg)
    return ray.RayLogs(address, glob, follow=follow)


def ray_uri(arg: str) -> tuple[str, str | None]:
    """The head's address and the glob (None for the default files) of a ``ray://head[:port][/GLOB]``
    argument; :class:`UriError` for an address that cannot be a Ray head."""
    from sparktui.core.sources import ray

    address, _, glob = arg.split("://", 1)[1].partition("/")
    try:
        ray.parse_address(address)
    except Refused as exc:
        raise UriError(str(exc)) from None
    return address, glob or None


def _metrics(_opener: Opener, arg: str) -> LiveSource:
    """A server's ``/metrics``, read from this machine every few seconds; its node is the URL's host."""
    from sparktui.core.sources.metrics import MetricsSource, metrics_url

    try:
        return MetricsSource(metrics_url(arg), name=arg)
    except Refused as exc:
        raise UriError(str(exc)) from None


class Scheme(NamedTuple):
    """A kind of source named by its ``scheme://``: how a session opens it to follow it, and how ``diagnose``
    reads it once without ``--follow`` (None: it can only be followed)."""

    follow: Callable[[Opener, str], LiveSource | SourceGroup]
    once: Callable[[str], SourceGroup] | None = None


#: Every kind of source argument but a path: a new kind is a row here.
SCHEMES: dict[str, Scheme] = {
    "ssh": Scheme(_ssh),
    "docker": Scheme(_docker),
    "ray": Scheme(_ray, once=_ray_once),
    "metrics": Scheme(_metrics),
    "http": Scheme(_metrics),
}


def scheme(arg: str) -> Scheme | None:
    """The kind of source ``arg`` names by its ``scheme://`` (None for a path); :class:`UriError` for a
    scheme no source has."""
    if "://" not in arg:
        return None
    name = arg.split("://", 1)[0]
    kind = SCHEMES.get(name)
    if kind is None:
        raise UriError(f"{arg}: unknown kind of source {name}:// ({', '.join(SCHEMES)} or a path)")
    return kind


def _local(arguments: list[str]) -> list[list[LiveSource]]:
    """Each path's sources, followed like ``tail -F``, named and placed on nodes as the files of one
    ``diagnose`` are (:func:`unique_names`, across every path given); a compressed file or a stream (stdin, a
    pipe, a FIFO) is read once, as ``diagnose`` reads it, since neither grows at its end."""
    found: list[list[FileSource]] = []
    for arg in arguments:
        path = Path(arg)
        if arg == STDIN or path.is_dir() or path.exists():
            found.append(file_sources([arg])[0])
        else:  # a file that does not exist yet is followed once it appears, as `tail -F` does
            found.append([FileSource(path, path.name)])
    named = iter(unique_names([s for each in found for s in each]))
    return [
        [FileRead(s) if s.compressed or s.stream else FollowedFile(s.path, s.name, s.node) for s in named_sources]
        for named_sources in ([next(named) for _ in each] for each in found)
    ]


def ssh_targets(arguments: Iterable[str]) -> dict[str, str]:
    """The nodes the ``ssh://`` arguments read from, by the name their sources give them (the host), each as
    ``[user@]host[:port]``, and this machine (``local``, target "") where a path or a ``docker://`` container
    is read here beside them: where a capture of the stacks goes, and the live watch looks, when no cluster
    file names the nodes (none: no ``ssh://`` argument). Arguments that are no usable ``ssh://`` address are
    left to the opening of the sources to refuse."""
    found: dict[str, str] = {}
    arguments = list(arguments)
    for arg in arguments:
        if not arg.startswith("ssh://"):
            continue
        try:
            uri = parse_ssh_uri(arg)
        except ValueError:
            continue
        host = f"[{uri.host}]" if ":" in uri.host else uri.host
        user = f"{uri.user}@" if uri.user else ""
        port = f":{uri.port}" if uri.port is not None else ""
        found.setdefault(uri.host, f"{user}{host}{port}")
    if found and any("://" not in arg or arg.startswith("docker://") for arg in arguments):
        found.setdefault("local", "")
    return found


class SshUri(NamedTuple):
    """An ``ssh://`` source argument taken apart: who, which host and port, and what to read there."""

    user: str | None
    host: str
    port: int | None
    kind: str  # "file", "docker", "journal", "ray" or "metrics"
    target: str  # the path, the container, the unit, the port; "" for ray


def parse_ssh_uri(uri: str) -> SshUri:
    """Split ``ssh://[user@]host[:port]/path/to/file``, ``ssh://host/docker/<container>``,
    ``ssh://host/journal/<unit>``, ``ssh://host/ray`` or ``ssh://host/metrics/<port>``. A file whose path
    starts with ``/docker/``, ``/journal/``, ``/metrics/`` or is ``/ray`` is written with a double slash
    (``ssh://host//docker/x.log``). Percent escapes are decoded. Raises :class:`ValueError` with a one-line
    message."""
    parts = urlsplit(uri)
    shown = repr(uri if len(uri) <= 200 else uri[:200] + "…")
    if parts.scheme != "ssh":
        raise ValueError(f"{shown}: not an ssh:// address")
    if parts.query or parts.fragment or uri.endswith(("?", "#")):
        raise ValueError(f"{shown}: '?' and '#' are not allowed (write %3F and %23 in a path)")
    try:
        port = parts.port
    except ValueError:
        raise ValueError(f"{shown}: the port must be a number from 1 to 65535") from None
    if port == 0:
        raise ValueError(f"{shown}: the port must be a number from 1 to 65535")
    if parts.password is not None:
        raise ValueError(f"{shown}: passwords are not accepted in addresses; use a key or the agent")
    host = parts.hostname
    if not host:
        raise ValueError(f"{shown}: no host")
    try:
        host.encode("idna")  # what the connection will need: no control, direction or other format characters
    except UnicodeError:
        raise ValueError(f"{shown}: {host!r} is not a host name (letters, digits, '-' and '.')") from None
    user = unquote(parts.username) if parts.username else None
    path = unquote(parts.path)
    if _CONTROL.search(path) or (user and _CONTROL.search(user)):
        raise ValueError(f"{shown}: control characters are not allowed")
    if path.startswith("//"):
        return SshUri(user, host, port, "file", path[1:])
    kind, _, rest = path[1:].partition("/")
    if kind == "ray":
        if rest:
            raise ValueError(f"{shown}: ssh://host/ray takes nothing after it")
        return SshUri(user, host, port, "ray", "")
    if kind == "docker":
        if not _CONTAINER.fullmatch(rest):
            raise ValueError(f"{shown}: expected ssh://host/docker/<container name or id>")
        return SshUri(user, host, port, "docker", rest)
    if kind == "journal":
        if not _UNIT.fullmatch(rest):
            raise ValueError(f"{shown}: expected ssh://host/journal/<systemd unit>")
        return SshUri(user, host, port, "journal", rest)
    if kind == "metrics":
        if not (rest.isdecimal() and 0 < int(rest) < 65536):
            raise ValueError(f"{shown}: expected ssh://host/metrics/<port> (the server's port on the node, 8000)")
        return SshUri(user, host, port, "metrics", str(int(rest)))
    if path in ("", "/") or path.endswith("/"):
        raise ValueError(f"{shown}: name a file, /docker/<container>, /journal/<unit>, /ray or /metrics/<port>")
    return SshUri(user, host, port, "file", path)
