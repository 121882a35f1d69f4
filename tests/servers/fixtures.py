"""The real servers the tests start and stop: OpenSSH servers on loopback, a Docker engine, the two spark
test nodes and a vLLM server on the CPU. Session fixtures, shared through the conftest of each folder of
tests that needs them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.servers.dockerd import Containers, DockerEngine, start_engine, stop_engine
from tests.servers.sparks import Sparks, start_sparks, stop_sparks
from tests.servers.sshd import SshdCluster, start_cluster, stop_cluster
from tests.servers.vllm import NoVllm, VllmServer
from tests.servers.vllm import start as start_vllm
from tests.servers.vllm import stop as stop_vllm
from tests.servers.vllm_image import VLLM_IMAGE, build_vllm_image


@pytest.fixture(scope="session")
def sshd_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SshdCluster]:
    """OpenSSH servers on 127.0.0.2 (node-a) and 127.0.0.3 (node-b, with a real journald), started and
    stopped by the tests, with their own keys, known_hosts and client config."""
    cluster = start_cluster(Path(tmp_path_factory.mktemp("sshd")))
    try:
        yield cluster
    finally:
        stop_cluster(cluster)


@pytest.fixture(scope="session")
def docker_engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DockerEngine]:
    engine = start_engine(tmp_path_factory.mktemp("dockerd"))
    try:
        yield engine
    finally:
        stop_engine(engine)


@pytest.fixture
def docker_containers(docker_engine: DockerEngine, tmp_path: Path) -> Iterator[Containers]:
    control = tmp_path / "control"
    control.mkdir()
    containers = Containers(docker_engine, control)
    try:
        yield containers
    finally:
        containers.remove_all()


@pytest.fixture(scope="session")
def spark_nodes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sparks]:
    """Two DGX-Spark-like nodes, ``spark-a`` (head) and ``spark-b``, each a network namespace with its own
    sshd (port 22 on its address on ``enp1s0f1np1``) and Docker engine; see sparks.py."""
    sparks = start_sparks(Path(tmp_path_factory.mktemp("sparks")))
    try:
        yield sparks
    finally:
        stop_sparks(sparks)


@pytest.fixture
def sparks(spark_nodes: Sparks, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Sparks]:
    """The spark nodes, reached with this test's own home (SSH client files, state and config folders);
    every container and extra image is removed from them afterwards."""
    spark_nodes.home_for(tmp_path / "home", monkeypatch)
    try:
        yield spark_nodes
    finally:
        spark_nodes.reset()


@pytest.fixture(scope="session")
def vllm_image(spark_nodes: Sparks) -> str:
    """The engine image holding the real vLLM CPU build (vllm_image.py), imported into the head node's
    engine once for the tests that ask for it (about a minute) and kept there by ``sparks``' reset."""
    assert spark_nodes.head.daemon is not None
    try:
        build_vllm_image(spark_nodes.head.daemon.base_url, VLLM_IMAGE)
    except NoVllm as exc:
        pytest.fail(str(exc), pytrace=False)
    spark_nodes.kept.add(VLLM_IMAGE)
    return VLLM_IMAGE


@pytest.fixture(scope="session")
def vllm_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VllmServer]:
    """``vllm serve`` of vLLM's CPU build with a tiny local model on 127.0.0.1 (see vllm.py), started once for
    the tests that ask for it and stopped after them."""
    try:
        server = start_vllm(tmp_path_factory.mktemp("vllm"))
    except NoVllm as exc:
        pytest.fail(str(exc), pytrace=False)
    try:
        yield server
    finally:
        stop_vllm(server)
