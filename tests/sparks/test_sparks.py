"""The spark test nodes: each reached over SSH under its own name, with its own engine and interface,
each reaching the other without a prompt, the engine stand-in serving only as a Ray launch, and nothing
left behind when they stop."""

from __future__ import annotations

import secrets
import shlex
import subprocess
import urllib.request
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.servers.dockerd import IMAGE
from tests.servers.sparks import (
    ENGINE_IMAGE,
    IFACE,
    NODES,
    PREFIX,
    Sparks,
    leftovers,
    remove_leftovers,
    start_sparks,
    stop_sparks,
)
from tests.waiting import wait_until


@pytest.fixture
async def sparks(spark_nodes: Sparks) -> AsyncIterator[Sparks]:
    """The shared nodes; afterwards the SSH connections a test opened are closed and the nodes reset."""
    yield spark_nodes
    for ssh in spark_nodes.made:
        await ssh.close()
    spark_nodes.made.clear()
    spark_nodes.reset()


def name() -> str:
    return f"{PREFIX}{secrets.token_hex(4)}"


async def ssh(sparks: Sparks, host: str, command: str) -> str:
    """Output of a shell ``command`` run over SSH on ``host`` (SshNode runs one program: wrap it in sh)."""
    return (await sparks.node(host).run(f"sh -c {shlex.quote(command)}", command)).decode()


def http_get(url: str) -> tuple[int, bytes]:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(url, timeout=5) as response:
        return response.status, response.read()


async def test_each_node_answers_over_ssh_with_its_name_and_address(sparks: Sparks) -> None:
    for node in sparks:
        host, addr = (await ssh(sparks, node.name, f"hostname; ip -4 -br addr show dev {IFACE}")).splitlines()
        assert host == node.name
        assert addr.split()[0].startswith(IFACE) and addr.split()[2] == f"{node.address}/24"
    assert [n.name for n in sparks] == list(NODES) and sparks.head.name == "spark-a"
    assert [n.address for n in sparks] == [str(sparks.subnet[1]), str(sparks.subnet[2])]


async def test_docker_over_ssh_is_the_nodes_own_engine(sparks: Sparks) -> None:
    container = name()
    sparks.head.docker.containers.create(IMAGE, ["sleep", "1000"], name=container)
    seen = {}
    for node in sparks:
        seen[node.name] = await ssh(sparks, node.name, "docker ps -a --format '{{.Names}}'")
        assert await ssh(sparks, node.name, "docker info --format '{{.Name}}'") == f"{node.name}\n"
    assert container in seen["spark-a"].split()
    assert container not in seen["spark-b"]


def test_host_network_containers_see_the_nodes_interface(sparks: Sparks) -> None:
    for node in sparks:
        assert f"{node.address}/24" in node.run(f"ip -4 -br addr show dev {IFACE}").stdout
        out = node.docker.containers.run(IMAGE, ["ip", "-4", "addr", "show", IFACE], network_mode="host", remove=True)
        assert f"inet {node.address}/24" in out.decode()


def real_ssh_dir() -> list[tuple[str, float]] | None:
    home = Path("/root/.ssh")
    return sorted((p.name, p.stat().st_mtime) for p in home.iterdir()) if home.exists() else None


def test_nodes_reach_each_other_over_ssh_without_a_prompt(sparks: Sparks) -> None:
    a, b = sparks.head, sparks["spark-b"]
    before = real_ssh_dir()
    a.docker.images.get(ENGINE_IMAGE).tag("sparktui-test/copied", "1")
    want = a.docker.images.get("sparktui-test/copied:1").id
    # What copy-image-to-nodes runs on the node that lacks the image.
    b.run(f"ssh -o BatchMode=yes {a.address} docker save sparktui-test/copied:1 | docker load")
    assert b.docker.images.get("sparktui-test/copied:1").id == want
    assert b.run("ssh -o BatchMode=yes spark-a hostname").stdout == "spark-a\n"
    assert a.run(f"ssh -o BatchMode=yes {b.address} hostname").stdout == "spark-b\n"
    assert real_ssh_dir() == before  # the nodes' /root/.ssh is the test's, not this machine's


def test_the_engine_stand_in_serves_only_with_the_ray_executor(sparks: Sparks) -> None:
    node = sparks.head
    refused = node.docker.containers.run(
        ENGINE_IMAGE, ["vllm", "serve", "m", "--tensor-parallel-size", "2"], network_mode="host", detach=True
    )
    assert refused.wait(timeout=30)["StatusCode"] == 1
    assert "needs the Ray executor" in refused.logs().decode()
    serving = node.docker.containers.run(
        ENGINE_IMAGE,
        ["vllm", "serve", "m", "--distributed-executor-backend", "ray", "--port", "8011"],
        network_mode="host",
        detach=True,
    )
    wait_until(lambda: b"Application startup complete." in serving.logs(), 15, "the stand-in to serve")
    assert http_get(f"http://{node.address}:8011/health")[0] == 200
    with pytest.raises(OSError):
        http_get(f"http://{sparks['spark-b'].address}:8011/health")  # served on spark-a only


def test_stopping_leaves_nothing_and_leftovers_of_a_dead_run_are_removed(
    spark_nodes: Sparks, tmp_path_factory: pytest.TempPathFactory
) -> None:
    other = start_sparks(tmp_path_factory.mktemp("sparks"))  # beside the session's: another subnet, other names
    assert other.subnet != spark_nodes.subnet
    stop_sparks(other)  # fails itself if anything is left; and to be sure:
    assert leftovers(other) == []
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True).stdout
    assert not {node.namespace for node in other} & set(listed.split())
    # A run whose test process is gone (no such PID): the next start removes what it left.
    mark = secrets.token_hex(3)
    dead, veth = f"{PREFIX}4999999-1-{mark}", f"spt{mark}a"
    subprocess.run(["ip", "netns", "add", f"{dead}-spark-a"], check=True)
    subprocess.run(
        ["ip", "link", "add", veth, "type", "veth", "peer", "name", IFACE, "netns", f"{dead}-spark-a"], check=True
    )
    subprocess.run(["ip", "link", "set", veth, "alias", dead], check=True)
    remove_leftovers()
    assert not [x for x in leftovers() if mark in x]
    assert spark_nodes.head.run("hostname").stdout == "spark-a\n"  # a live run is left alone


def test_real_ray_forms_a_cluster_across_the_nodes(sparks: Sparks) -> None:
    """What ray-start-cluster runs: a head on spark-a and a worker on spark-b, each in an engine container
    on the node's own address; the head sees both nodes and their (counted) GPUs."""
    pytest.importorskip("ray")
    a, b = sparks.head, sparks["spark-b"]
    for node in sparks:
        node.engine_container()
    assert b.engine_container("no_ray", ray=False).exec_run(["ray", "--version"]).exit_code == 127
    a.run(f"docker exec vllm_node ray start --head --port=6379 --node-ip-address={a.address} --disable-usage-stats")
    b.run(f"docker exec vllm_node ray start --address={a.address}:6379 --node-ip-address={b.address}")

    def status() -> str:
        return a.run("docker exec vllm_node ray status", check=False).stdout

    wait_until(lambda: status().count(" node_") == 2, 60, "both nodes in the Ray cluster")
    assert "0.0/2.0 GPU" in status()
