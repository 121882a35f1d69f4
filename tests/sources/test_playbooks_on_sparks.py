"""The built-in playbooks, run with `sparktui play` on the two spark test nodes (each its own network
namespace, sshd and Docker engine): they run, verify and roll back for real, and say so in the audit log."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from sparktui.cli import main
from sparktui.config import Cluster, Deployment, Node
from sparktui.core import bundle
from sparktui.core import catalogue as cat
from sparktui.core.audit import read_log
from sparktui.core.playbooks import builtin_dir
from sparktui.core.spool import state_dir
from sparktui.tui.app import Session, SparkApp
from tests.sources.sparks import ENGINE_IMAGE, IFACE, Sparks
from tests.tui.conftest import make_bundle
from tests.tui.test_play_screen import SIZE, open_playbook, shown, until

NODES = ["--node", "spark-a", "--node", "spark-b"]


@pytest.fixture
def sparks(spark_nodes: Sparks, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Sparks]:
    spark_nodes.home_for(tmp_path / "home", monkeypatch)
    try:
        yield spark_nodes
    finally:
        spark_nodes.reset()


def audit() -> list[tuple[str, str, int | None]]:
    return [(e.node, e.step, e.exit_code) for e in read_log(state_dir() / "audit.jsonl")]


def quick(tmp_path: Path, playbook: str, within: int) -> str:
    """A copy of a built-in playbook whose verification gives up after ``within`` seconds."""
    folder = tmp_path / "books"
    folder.mkdir(exist_ok=True)
    text = (builtin_dir() / f"{playbook}.toml").read_text()
    (folder / f"{playbook}.toml").write_text(text.replace("within = 1800", f"within = {within}"))
    return str(folder)


def test_recreate_puts_the_flag_in_the_containers_command(sparks: Sparks) -> None:
    head = sparks.head
    head.engine_container("vllm_node", ["vllm", "serve", "org/model", "--port", "18080"], ray=False)
    given = ["--set", "container=vllm_node", "--set", "port=18080"]
    assert main(["play", "vllm-recreate-with-ray-backend", *NODES, *given, "--yes"]) == 0

    new = head.docker.api.inspect_container("vllm_node")
    assert new["Config"]["Cmd"] == [
        "vllm",
        "serve",
        "org/model",
        "--port",
        "18080",
        "--distributed-executor-backend",
        "ray",
    ]
    assert new["State"]["Running"] and new["HostConfig"]["NetworkMode"] == "host"
    assert (
        new["HostConfig"]["ShmSize"]
        == head.docker.api.inspect_container("vllm_node-before-sparktui")["HostConfig"]["ShmSize"]
    )
    assert ("spark-a", "verify", 0) in audit()


def test_failed_verification_brings_the_old_container_back(sparks: Sparks, tmp_path: Path) -> None:
    head = sparks.head
    old = head.engine_container("vllm_node", ["vllm", "serve", "org/model", "--port", "18081"], ray=False)
    books = quick(tmp_path, "vllm-recreate-with-ray-backend", 4)
    given = ["--set", "container=vllm_node", "--set", "port=18082"]  # nothing will answer there
    assert main(["play", "vllm-recreate-with-ray-backend", "--playbooks", books, *NODES, *given, "--yes"]) == 1

    back = head.docker.api.inspect_container("vllm_node")
    assert back["Id"] == old.id
    assert "--distributed-executor-backend" not in back["Config"]["Cmd"]
    names = [c["Names"][0] for c in head.docker.api.containers(all=True)]
    assert names == ["/vllm_node"]
    steps = audit()
    assert ("spark-a", "verify", 1) in steps and ("spark-a", "Put the old container back", 0) in steps


def ray_start_cluster(sparks: Sparks) -> int:
    """A Ray container on each node, then ray-start-cluster over them; its exit code."""
    for node in sparks:
        node.engine_container("vllm_node")
    given = ["--set", "container=vllm_node", "--set", f"iface={IFACE}", "--set", f"head_ip={sparks.head.address}"]
    return main(["play", "ray-start-cluster", *NODES, *given, "--yes"])


def test_ray_start_cluster_joins_the_worker_and_counts_the_gpus(sparks: Sparks) -> None:
    assert ray_start_cluster(sparks) == 0
    assert ("spark-a", "verify", 0) in audit()
    joined = sparks.head.run("docker exec vllm_node ray status").stdout
    assert joined.count(" node_") == 2


def test_copy_image_streams_it_to_the_node_that_lacks_it(sparks: Sparks) -> None:
    head, worker = sparks.head, sparks.workers[0]
    head.docker.api.tag(ENGINE_IMAGE, "sparktui-test/only-on-a", "1")
    image = "sparktui-test/only-on-a:1"
    assert (
        main(
            [
                "play",
                "copy-image-to-nodes",
                *NODES,
                "--set",
                f"image={image}",
                "--set",
                f"source={head.address}",
                "--yes",
            ]
        )
        == 0
    )
    assert worker.docker.api.inspect_image(image)["Id"] == head.docker.api.inspect_image(image)["Id"]


def test_switch_to_vllm_rolls_back_to_sglang_when_a_step_fails(sparks: Sparks, tmp_path: Path) -> None:
    """No NVIDIA runtime here, so creating the vLLM container with --gpus all fails on each node: the rollback
    must leave SGLang running again as it was."""
    sglang = {}
    for node in sparks:
        sglang[node.name] = node.engine_container("sglang_node", ray=False).id
    given = [
        "--set",
        "sglang_container=sglang_node",
        "--set",
        f"image={ENGINE_IMAGE}",
        "--set",
        f"hf_home={tmp_path}",
        "--set",
        f"iface={IFACE}",
        "--set",
        f"head_ip={sparks.head.address}",
        "--set",
        "serve=vllm serve org/model --tensor-parallel-size 2",
    ]
    assert main(["play", "switch-sglang-to-vllm", *NODES, *given, "--yes"]) == 1
    for node in sparks:
        state = node.docker.api.inspect_container("sglang_node")
        assert state["Id"] == sglang[node.name] and state["State"]["Running"]
        assert [c["Names"][0] for c in node.docker.api.containers(all=True)] == ["/sglang_node"]
    steps = audit()
    assert ("spark-a", "Create the vLLM container with the node's own Spark environment", 125) in steps
    assert sum(step == "Start SGLang again with its own command" and code == 0 for _, step, code in steps) == 2


async def test_from_the_cockpit_the_recreate_reads_the_container_then_runs(sparks: Sparks, tmp_path: Path) -> None:
    """The cockpit reads the container on spark-a before showing the docker run it will use, runs it on `r`
    `y`, and the verification decides."""
    head = sparks.head
    head.engine_container("vllm_node", ["vllm", "serve", "org/model"], ray=False)
    line = "ValueError: World size (2) is larger than the number of available GPUs (1) in this node."
    loaded = bundle.load(make_bundle(tmp_path / "bundle", {"server.log": line + "\n"}))
    nodes = tuple(Node(n.name, n.name, "head" if n is head else "worker") for n in sparks)
    cluster = Cluster(tmp_path / "sparktui.toml", nodes, Deployment(containers=("vllm_node",)))
    app = SparkApp(Session("t", loaded, speed=0), cat.load(), export_dir=tmp_path, cluster=cluster)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_playbook(pilot, app, "vllm-world-size-exceeds-local-gpus", "B")
        await until(pilot, lambda: "docker run -d --name vllm_node" in shown(screen), 30)
        assert "vllm serve org/model --distributed-executor-backend ray" in shown(screen)
        await pilot.press("r", "y")
        await until(pilot, lambda: screen.phase == "finished", 60)
        assert "Succeeded, verified: GET http://localhost:8000/health: 200" in shown(screen)
    assert head.docker.api.inspect_container("vllm_node")["Config"]["Cmd"][-2:] == [
        "--distributed-executor-backend",
        "ray",
    ]


def test_add_ray_backend_relaunches_serve_inside_the_ray_container(sparks: Sparks) -> None:
    """NVIDIA's run_cluster.sh layout: Ray runs in the containers, vllm serve is started with docker exec."""
    assert ray_start_cluster(sparks) == 0
    serve = "vllm serve org/model --tensor-parallel-size 2"
    given = ["--set", "container=vllm_node", "--set", f"serve={serve}", "--set", "port=18083"]
    assert main(["play", "vllm-add-ray-backend", *NODES, *given, "--yes"]) == 0
    assert ("spark-a", "verify", 0) in audit()
    running = sparks.head.run("docker exec vllm_node ps -o args").stdout
    assert "--distributed-executor-backend ray --port 18083" in running
