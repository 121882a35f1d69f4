"""From source arguments to live sources: local paths, ``ssh://``, ``docker://`` and ``ray://``.

One :class:`Opener` per session, so every source on one SSH node shares that node's connection.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from sparktui.core.errors import Refused
from sparktui.core.sources.base import LiveSource, SourceGroup
from sparktui.core.sources.discover import discover
from sparktui.core.sources.follow import FollowedFile

if TYPE_CHECKING:  # imported when an ssh:// source is opened, not at start-up
    from sparktui.core.remote.ssh import SshNode


class UriError(ValueError):
    """A source argument that names nothing usable; the message is one line."""


class Opener:
    """Turns arguments into sources; ``trust_new_host_key`` is the explicit choice to record host keys
    seen for the first time (a changed key is refused all the same)."""

    def __init__(self, *, trust_new_host_key: bool = False) -> None:
        self.trust_new_host_key = trust_new_host_key
        self._nodes: dict[tuple[str | None, str, int | None], SshNode] = {}

    def open(self, arguments: list[str]) -> list[LiveSource | SourceGroup]:
        sources: list[LiveSource | SourceGroup] = []
        for arg in arguments:
            scheme = arg.split("://", 1)[0] if "://" in arg else ""
            if scheme == "ssh":
                sources.append(self._ssh(arg))
            elif scheme == "docker":
                sources.append(_docker(arg))
            elif scheme == "ray":
                sources.append(_ray(arg))
            elif scheme:
                raise UriError(f"{arg}: unknown kind of source {scheme}:// (ssh, docker, ray or a path)")
            else:
                sources += _local(arg)
        return sources

    def _ssh(self, arg: str) -> LiveSource | SourceGroup:
        from sparktui.core.remote.ssh import SshNode
        from sparktui.core.sources import ssh

        try:
            uri = ssh.parse_ssh_uri(arg)
        except ValueError as exc:
            raise UriError(str(exc)) from None
        key = (uri.user, uri.host, uri.port)
        node = self._nodes.get(key)
        if node is None:
            node = self._nodes[key] = SshNode(
                uri.host, user=uri.user, port=uri.port, trust_new_host_key=self.trust_new_host_key
            )
        if uri.kind == "file":
            return ssh.SshFileSource(node, uri.target)
        if uri.kind == "journal":
            return ssh.SshJournalSource(node, uri.target)
        if uri.kind == "ray":
            return _SshRay(arg, node)
        return _SshDocker(arg, node, uri.target)


class _SshRay(SourceGroup):
    def __init__(self, name: str, node: SshNode) -> None:
        self.name, self.node = name, node

    async def expand(self) -> list[LiveSource]:
        from sparktui.core.sources import ssh

        return list(await ssh.ray_session_sources(self.node))


class _SshDocker(SourceGroup):
    """A container on a node, read with the Docker SDK through the node's forwarded Docker socket."""

    def __init__(self, name: str, node: SshNode, container: str) -> None:
        self.name, self.node, self.container = name, node, container

    async def expand(self) -> list[LiveSource]:
        from sparktui.core.remote.docker import SOCKET
        from sparktui.core.sources import docker

        socket = await self.node.forward_unix(SOCKET)
        return [docker.DockerSource(self.container, base_url=f"unix://{socket}", name=self.name, node=self.node.name)]


def _docker(arg: str) -> LiveSource:
    from sparktui.core.sources import docker

    container = arg.split("://", 1)[1].strip("/")
    if not container or "/" in container:
        raise UriError(f"{arg}: expected docker://<container name or id>")
    return docker.DockerSource(container, name=arg)


def _ray(arg: str) -> SourceGroup:
    """``ray://head[:port]`` (every alive node's important logs) or ``ray://head[:port]/GLOB`` (the files
    whose names match)."""
    from sparktui.core.sources import ray

    address, _, glob = arg.split("://", 1)[1].partition("/")
    try:
        ray.parse_address(address)
    except Refused as exc:
        raise UriError(str(exc)) from None
    return ray.RayLogs(address, glob or None)


def _local(arg: str) -> list[LiveSource]:
    path = Path(arg)
    if path.is_dir():
        found, _problems = discover([arg])
        return [FollowedFile(s.path, s.name, s.node) for s in found]
    # A file that does not exist yet is followed once it appears, as `tail -F` does.
    return [FollowedFile(path, path.name)]
