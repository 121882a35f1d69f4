"""The real servers the tests on the two spark test nodes use (tests/servers)."""

from tests.servers.fixtures import docker_containers, docker_engine, spark_nodes, sparks, sshd_cluster, vllm_image

__all__ = ["docker_containers", "docker_engine", "spark_nodes", "sparks", "sshd_cluster", "vllm_image"]
