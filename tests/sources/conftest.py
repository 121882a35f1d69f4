"""The real servers the source tests talk to (tests/servers)."""

from collections.abc import AsyncIterator

import pytest

from tests.servers.fixtures import docker_containers, docker_engine, sshd_cluster
from tests.servers.sshd import SshdCluster

__all__ = ["cluster", "docker_containers", "docker_engine", "sshd_cluster"]


@pytest.fixture
async def cluster(sshd_cluster: SshdCluster) -> AsyncIterator[SshdCluster]:
    """The shared servers, with every node a test made closed afterwards (and all sshd running)."""
    yield sshd_cluster
    for node in sshd_cluster.made:
        await node.close()
    sshd_cluster.made.clear()
    for sshd in sshd_cluster.nodes.values():
        if sshd.process is None or sshd.process.poll() is not None:
            sshd.start()
