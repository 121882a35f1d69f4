"""The real servers the remediation tests run playbooks on (tests/servers)."""

from tests.servers.fixtures import docker_containers, docker_engine, spark_nodes, sparks, sshd_cluster, vllm_image

__all__ = ["docker_containers", "docker_engine", "spark_nodes", "sparks", "sshd_cluster", "vllm_image"]
