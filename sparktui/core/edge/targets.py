"""What a node's scan reads: its Ray logs, and the files and containers the cluster file names for it.

A :class:`Target` is one log on one node, named and placed as the pulled source of the same log is, so that
the findings of an edge scan are those of the pulled logs:

- a file of the node's Ray log folder (``ray``), as the ``ray://`` source lists it;
- a path on the node (``file``), from a node's ``ssh://host/path`` source in the cluster file, named as that
  source is (``host:path``) and, as over SSH, knowing the machine's own names;
- a container (``container``), from the deployment's ``containers``, named as the cockpit names it
  (``ssh://<node's ssh>/docker/<container>``) and read through the node's own Docker engine.

Which Ray node is which node of the cluster file, :func:`match_nodes` decides: Ray names a node by its IP
address unless told otherwise, the cluster file by a name and an SSH address. :func:`cluster_logs` lists
what the cluster file names for a node; a source of another kind (a journal unit, a node's ``/metrics``) is
not a file or a container and is not read on the node.
"""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from sparktui.core.cluster import Cluster, Node
from sparktui.core.sources.open import SshUri, parse_ssh_uri

RAY, FILE, CONTAINER = "ray", "file", "container"


@dataclass(frozen=True, slots=True)
class Target:
    """One log a node's scan reads: ``where`` is a file name in its Ray log folder (``ray``), a path
    (``file``) or a container's name (``container``)."""

    name: str
    node: str
    kind: str
    where: str

    @property
    def streamed(self) -> bool:
        """Read as a stream of lines (a container's logs), not in blocks of a file."""
        return self.kind == CONTAINER


@dataclass(frozen=True, slots=True)
class ClusterLog:
    """A log the cluster file names for a node: the source argument that pulls it, and its target."""

    uri: str
    ssh: SshUri
    target: Target


def cluster_logs(cluster: Cluster, node: Node) -> tuple[list[ClusterLog], list[str]]:
    """The files and containers the cluster file names for ``node``, and its sources of other kinds."""
    found: list[ClusterLog] = []
    others: list[str] = []
    for uri in cluster.containers_of(node) + list(node.sources):
        try:
            ssh = parse_ssh_uri(uri)
        except ValueError:
            others.append(uri)
            continue
        if ssh.kind == "file":
            found.append(ClusterLog(uri, ssh, Target(f"{ssh.host}:{ssh.target}", ssh.host, FILE, ssh.target)))
        elif ssh.kind == "docker":
            found.append(ClusterLog(uri, ssh, Target(uri, ssh.host, CONTAINER, ssh.target)))
        else:
            others.append(uri)
    return found, others


def addresses(host: str) -> set[str]:
    """The IP addresses ``host`` resolves to here (none where it does not resolve)."""
    try:
        return {str(info[4][0]) for info in socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)}
    except (OSError, UnicodeError):
        return set()


def match_nodes(
    ray_nodes: Iterable[str], cluster: Cluster, resolve: Callable[[str], set[str]] = addresses
) -> dict[str, Node]:
    """Ray node name -> the cluster file's node on that machine: the Ray name is the node's name, the host
    of its ``ssh``, or an address that host resolves to. A cluster node matching no Ray node is left out."""
    names = set(ray_nodes)
    matched: dict[str, Node] = {}
    for node in cluster.nodes:
        host = node.address.host
        candidates = {node.name, host} | resolve(host)
        ray_name = next((n for n in sorted(names) if n in candidates), None)
        if ray_name is not None and ray_name not in matched:
            matched[ray_name] = node
    return matched
