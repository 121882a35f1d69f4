"""The real servers the serving tests talk to (tests/servers): vLLM's CPU build, and sshd on loopback."""

from tests.servers.fixtures import sshd_cluster, vllm_server

__all__ = ["sshd_cluster", "vllm_server"]
