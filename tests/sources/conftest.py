"""The real servers the source tests talk to (tests/servers)."""

from tests.servers.fixtures import docker_containers, docker_engine, sshd_cluster

__all__ = ["docker_containers", "docker_engine", "sshd_cluster"]
