"""The built-in playbooks, run with `sparktui play` and from the cockpit on the two spark test nodes (each its
own network namespace, sshd and Docker engine): they run, verify and roll back for real, and say so in the
audit log."""

from __future__ import annotations

import asyncio
import shlex
from pathlib import Path

import pytest

from sparktui.cli import main
from sparktui.core import cluster as config
from sparktui.core.audit import read_log
from sparktui.core.cluster import Deployment
from sparktui.core.dirs import state_dir
from sparktui.core.sources import bundle
from tests.servers.books import changed
from tests.servers.cockpit import WORLD_SIZE, link, roll_back, run, spark_cockpit, type_in
from tests.servers.sparks import ENGINE_IMAGE, IFACE, SparkNode, Sparks, audit, ray_run_options
from tests.tui.conftest import make_bundle
from tests.tui.test_play_screen import SIZE, open_playbook, shown
from tests.waiting import until

NODES = ["--node", "spark-a", "--node", "spark-b"]


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
    books = str(changed(tmp_path, "vllm-recreate-with-ray-backend", within=4))
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


def test_ray_start_cluster_stops_the_ray_it_started_when_gpus_are_missing(sparks: Sparks, tmp_path: Path) -> None:
    """Two GPUs are there and four are asked for: the verification fails, and the rollback stops the Ray this
    run started on each node."""
    for node in sparks:
        node.engine_container("vllm_node")
    given = ["--set", "container=vllm_node", "--set", f"iface={IFACE}", "--set", f"head_ip={sparks.head.address}"]
    books = str(changed(tmp_path, "ray-start-cluster", within=3))
    play = ["play", "ray-start-cluster", "--playbooks", books, *NODES, *given, "--set", "gpu_count=4", "--yes"]
    assert main(play) == 1
    steps = audit()
    assert ("spark-a", "verify", 1) in steps
    stopped = [(node, code) for node, step, code in steps if step == "Stop Ray where this run started it"]
    assert stopped == [("spark-a", 0), ("spark-b", 0)]
    for node in sparks:
        assert "raylet" not in node.run("docker exec vllm_node ps -o args").stdout


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


def switch(sparks: Sparks, tmp_path: Path, *extra: str) -> int:
    """switch-sglang-to-vllm from the SGLang containers ``sglang_node`` to the engine image; its exit code."""
    given = ["--set", "sglang_container=sglang_node", "--set", f"image={ENGINE_IMAGE}", "--set", f"hf_home={tmp_path}"]
    given += ["--set", f"iface={IFACE}", "--set", f"head_ip={sparks.head.address}"]
    given += ["--set", "serve=vllm serve org/model --tensor-parallel-size 2"]
    return main(["play", "switch-sglang-to-vllm", *NODES, *given, *extra, "--yes"])


def test_switch_to_vllm_rolls_back_to_sglang_when_a_step_fails(sparks: Sparks, tmp_path: Path) -> None:
    """No NVIDIA runtime here, so creating the vLLM container with --gpus all fails on each node: the rollback
    must leave SGLang running again as it was."""
    sglang = {}
    for node in sparks:
        sglang[node.name] = node.engine_container("sglang_node", ray=False).id
    assert switch(sparks, tmp_path) == 1
    for node in sparks:
        state = node.docker.api.inspect_container("sglang_node")
        assert state["Id"] == sglang[node.name] and state["State"]["Running"]
        assert [c["Names"][0] for c in node.docker.api.containers(all=True)] == ["/sglang_node"]
    steps = audit()
    assert ("spark-a", "Create the vLLM container with the node's own Spark environment", 125) in steps
    assert sum(step == "Start SGLang again with its own command" and code == 0 for _, step, code in steps) == 2


def test_switch_to_vllm_brings_vllm_up_on_ray_in_place_of_sglang(sparks: Sparks, tmp_path: Path) -> None:
    """With docker options this machine can honour (no GPU: Ray counts one per node; this machine's Python,
    with Ray, mounted), the vLLM containers come up with the Spark environment, form the Ray cluster, and
    serve answers a completion."""
    for node in sparks:
        node.engine_container("sglang_node", ray=False)
    options = ["--ulimit", f"memlock={memlock_limit(sparks.head)}", *ray_run_options()[2:]]  # host network given
    assert switch(sparks, tmp_path, "--set", f"docker_options={shlex.join(options)}", "--set", "port=18088") == 0
    assert ("spark-a", "verify", 0) in audit()
    for node in sparks:
        assert not node.docker.api.inspect_container("sglang_node")["State"]["Running"]
        new = node.docker.api.inspect_container("vllm_node")
        assert new["HostConfig"]["IpcMode"] == "host" and new["HostConfig"]["NetworkMode"] == "host"
        assert {f"VLLM_HOST_IP={node.address}", f"NCCL_SOCKET_IFNAME={IFACE}"} <= set(new["Config"]["Env"])
    assert sparks.head.run("docker exec vllm_node ray status").stdout.count(" node_") == 2
    assert (
        "--distributed-executor-backend ray --port 18088" in sparks.head.run("docker exec vllm_node ps -o args").stdout
    )


async def test_from_the_cockpit_the_recreate_reads_the_container_then_runs(sparks: Sparks, tmp_path: Path) -> None:
    """The cockpit reads the container on spark-a before showing the docker run it will use, runs it on `r`
    `y`, and the verification decides."""
    head = sparks.head
    head.engine_container("vllm_node", ["vllm", "serve", "org/model"], ray=False)
    app = spark_cockpit(sparks, tmp_path, {"server.log": WORLD_SIZE})
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_playbook(pilot, app, "vllm-world-size-exceeds-local-gpus", "B")
        await until(lambda: "docker run -d --name vllm_node" in shown(screen), 30, "the command shown")
        assert "vllm serve org/model --distributed-executor-backend ray" in shown(screen)
        assert "Succeeded, verified: completion from http://localhost:8000: ready: 8 tokens in " in await run(
            pilot, screen, 60
        )
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


def memlock_limit(node: SparkNode) -> int:
    """The hard locked-memory limit on the node, in bytes: a container may have up to that without the
    privilege to raise limits, which this machine's Docker lacks."""
    return int(node.run("ulimit -H -l").stdout) * 1024


def test_shm_recreates_each_nodes_container_with_ipc_host(sparks: Sparks) -> None:
    before = {}
    for node in sparks:
        node.engine_container("vllm_node")
        before[node.name] = node.docker.api.inspect_container("vllm_node")
    limit = memlock_limit(sparks.head)
    given = ["--set", "container=vllm_node", "--set", f"memlock={limit}"]
    assert main(["play", "docker-shm-ipc-host", *NODES, *given, "--yes"]) == 0
    for node in sparks:
        new = node.docker.api.inspect_container("vllm_node")
        old = before[node.name]
        assert new["HostConfig"]["IpcMode"] == "host" and new["State"]["Running"]
        assert {"Name": "memlock", "Soft": limit, "Hard": limit} in new["HostConfig"]["Ulimits"]
        assert sorted(new["Config"]["Env"]) == sorted(old["Config"]["Env"])  # Docker keeps no order
        for key in ("Cmd", "Image"):
            assert new["Config"][key] == old["Config"][key]
        assert sorted(new["HostConfig"]["Binds"]) == sorted(old["HostConfig"]["Binds"])
        kept = node.docker.api.inspect_container("vllm_node-before-sparktui")
        assert kept["Id"] == old["Id"] and not kept["State"]["Running"]
    assert [step for _, step, code in audit() if code != 0] == []


def test_shm_puts_every_old_container_back_when_docker_refuses_the_limit(sparks: Sparks) -> None:
    """Docker here may not raise limits, so memlock=-1 (NVIDIA's setting) fails on the head after both nodes'
    containers were renamed and stopped: the rollback must bring both back as they were."""
    assert memlock_limit(sparks.head) < 2**40, "this machine's Docker may raise limits: the test needs one that may not"
    old = {node.name: node.engine_container("vllm_node", ray=False).id for node in sparks}
    assert main(["play", "docker-shm-ipc-host", *NODES, "--set", "container=vllm_node", "--yes"]) == 1
    for node in sparks:
        back = node.docker.api.inspect_container("vllm_node")
        assert back["Id"] == old[node.name] and back["State"]["Running"]
        assert [c["Names"][0] for c in node.docker.api.containers(all=True)] == ["/vllm_node"]
    assert ("spark-a", "Create it again with --ipc host and the memlock limit", 125) in audit()


def test_a_leftover_from_an_earlier_run_stops_it_before_any_change(
    sparks: Sparks, capsys: pytest.CaptureFixture[str]
) -> None:
    head = sparks.head
    running = head.engine_container("vllm_node", ray=False)
    head.engine_container("vllm_node-before-sparktui", ray=False)
    sparks.workers[0].engine_container("vllm_node", ray=False)
    assert main(["play", "docker-shm-ipc-host", *NODES, "--set", "container=vllm_node", "--yes"]) == 1
    out = capsys.readouterr().out
    assert "exists from an earlier run: remove it first" in out
    assert "Failed before changing anything (only checks ran)" in out
    assert head.docker.api.inspect_container("vllm_node")["Id"] == running.id
    assert len(head.docker.api.containers()) == 2  # both still running: no rollback renamed anything


def pin(sparks: Sparks, serve: str, *extra: str) -> int:
    given = ["--set", "container=vllm_node", "--set", f"iface={IFACE}", "--set", "hca="]
    given += ["--set", f"head_ip={sparks.head.address}", "--set", f"serve={serve}"]
    return main(["play", "pin-nccl-interfaces", *NODES, *given, *extra, "--yes"])


def test_pin_interfaces_restarts_ray_and_serve_with_them(sparks: Sparks) -> None:
    assert ray_start_cluster(sparks) == 0
    assert pin(sparks, "vllm serve org/model --tensor-parallel-size 2", "--set", "port=18084") == 0
    assert ("spark-a", "verify", 0) in audit()
    assert sparks.head.run("docker exec vllm_node ray status").stdout.count(" node_") == 2
    for node in sparks:  # the node's raylet (Ray's own process, in the container) runs with the pins
        raylets = r"for p in $(pgrep raylet); do tr '\000' '\n' < /proc/$p/environ 2>/dev/null; done; true"
        environ = node.run(raylets).stdout.splitlines()
        assert f"NCCL_SOCKET_IFNAME={IFACE}" in environ and f"GLOO_SOCKET_IFNAME={IFACE}" in environ
        assert f"VLLM_HOST_IP={node.address}" in environ
    serve = sparks.head.run("tr '\\000' '\\n' < /proc/$(pgrep -o -f 'vllm serve')/environ").stdout
    assert f"NCCL_SOCKET_IFNAME={IFACE}" in serve.splitlines()


def test_pin_interfaces_stops_a_server_that_never_generates(sparks: Sparks, tmp_path: Path) -> None:
    assert ray_start_cluster(sparks) == 0
    books = str(changed(tmp_path, "pin-nccl-interfaces", within=3))
    serve = "vllm serve org/stalled"  # it answers /health, and a completion with no token
    assert pin(sparks, serve, "--playbooks", books, "--set", "port=18085") == 1
    steps = audit()
    assert ("spark-a", "verify", 1) in steps
    verify = [e for e in read_log(state_dir() / "audit.jsonl") if e.step == "verify"][-1]
    assert "no token within" in verify.output
    assert ("spark-a", "Stop the relaunched vllm serve (SIGINT, SIGKILL after 60 s)", 0) in steps
    assert sparks.head.run("pgrep -f 'vllm[ ]serve'", check=False).returncode == 1


def test_lower_memory_relaunches_serve_with_the_limits(sparks: Sparks) -> None:
    head = sparks.head
    head.engine_container("vllm_node", ray=False)
    serve = "vllm serve org/model --distributed-executor-backend ray"
    head.run(f"docker exec -d vllm_node {serve} --port 18086")
    given = ["--set", "container=vllm_node", "--set", f"serve={serve}", "--set", "max_model_len=4096"]
    assert main(["play", "vllm-lower-memory", *NODES, *given, "--set", "port=18087", "--yes"]) == 0
    assert ("spark-a", "verify", 0) in audit()
    running = head.run("docker exec vllm_node ps -o args").stdout
    assert "--gpu-memory-utilization 0.7 --max-model-len 4096 --port 18087" in running
    assert "--port 18086" not in running  # the first server was stopped


def test_hang_evidence_lands_in_the_incident_and_its_report(
    sparks: Sparks, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for node in sparks:
        node.engine_container("vllm_node", ["vllm", "serve", "org/model", "--distributed-executor-backend", "ray"])
    incident = make_bundle(tmp_path / "incident")
    assert (
        main(
            [
                "play",
                "capture-hang-evidence",
                *NODES,
                "--set",
                "container=vllm_node",
                "--incident",
                str(incident),
                "--yes",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "py-spy is not installed in this container" in out and "=== pid " in out
    for node in sparks:
        conf = node.run("docker exec vllm_node cat /etc/nccl.conf").stdout.splitlines()  # no passwd entry
        assert conf == ["NCCL_DEBUG=INFO", "NCCL_DEBUG_SUBSYS=INIT,NET"]
    steps = [e.step for e in read_log(incident / bundle.AUDIT)]
    assert steps.count("Stacks and NCCL environment of every engine rank (py-spy dump)") == 2
    report = tmp_path / "report"
    main(["diagnose", str(incident), "--report", str(report), "--quiet"])
    text = "\n".join(p.read_text() for p in report.rglob("*.md"))
    assert "Turn on NCCL INIT,NET logging for the next start" in text


def test_hang_evidence_rolls_back_where_the_conf_cannot_be_written(sparks: Sparks) -> None:
    head, worker = sparks.head, sparks.workers[0]
    worker.engine_container("vllm_node", ray=False)
    head.engine_container("vllm_node", ray=False, read_only=True)  # nothing in it can be written
    assert main(["play", "capture-hang-evidence", *NODES, "--set", "container=vllm_node", "--yes"]) == 1
    steps = audit()
    assert ("spark-a", "Turn on NCCL INIT,NET logging for the next start (~/.nccl.conf in the container)", 1) in steps
    assert sum(step == "Remove the NCCL debug lines again" and code == 0 for _, step, code in steps) == 2
    assert worker.run("docker exec vllm_node cat /etc/nccl.conf", check=False).stdout == ""


async def test_from_the_cockpit_a_failed_shm_recreate_is_rolled_back_on_b(sparks: Sparks, tmp_path: Path) -> None:
    """The cockpit shows each node's docker run with --ipc host before it runs; memlock=-1, which this
    machine's Docker may not set, fails on the head after both containers were renamed: `b` puts them back."""
    old = {node.name: node.engine_container("vllm_node", ray=False).id for node in sparks}
    warn = "spark-a:412:530 [0] misc/shmutils.cc:72 NCCL WARN Error: failed to extend /dev/shm/nccl-cW to 9637892 bytes"
    app = spark_cockpit(sparks, tmp_path, {"nccl-shm.log": warn + "\n"})
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_playbook(pilot, app, "nccl-dev-shm-too-small", "s")
        await until(lambda: "docker run -d --name vllm_node" in shown(screen), 30, "the command shown")
        ran = "--name vllm_node --init --shm-size 536870912b --network host --ipc host --ulimit memlock=-1"
        assert shown(screen).count(ran) == 2
        assert "Create it again with --ipc host and the memlock limit: exit 125" in await run(pilot, screen, 60)
        assert screen.phase == "offering"
        await pilot.press("b")
        await until(lambda: screen.phase == "finished", 60, "the playbook finished")
        assert "Failed, rolled back" in shown(screen)
    for node in sparks:
        back = node.docker.api.inspect_container("vllm_node")
        assert back["Id"] == old[node.name] and back["State"]["Running"]


async def test_from_the_cockpit_hang_evidence_is_exported_with_the_incident(sparks: Sparks, tmp_path: Path) -> None:
    for node in sparks:
        node.engine_container("vllm_node", ["vllm", "serve", "org/model", "--distributed-executor-backend", "ray"])
    app = spark_cockpit(sparks, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_playbook(pilot, app, "nccl-second-communicator-not-joined", "d")
        assert "Succeeded: every command exited 0" in await run(pilot, screen, 60)
        await pilot.press("escape", "escape", "x")
        await until(lambda: any(tmp_path.glob("sparktui-report-*/*.md")), 30, "the report")
    (report,) = tmp_path.glob("sparktui-report-*/*.md")
    assert "Turn on NCCL INIT,NET logging for the next start" in report.read_text()
    for node in sparks:
        assert "NCCL_DEBUG=INFO" in node.run("docker exec vllm_node cat /etc/nccl.conf").stdout


async def test_from_the_cockpit_pin_interfaces_runs_with_the_values_typed_in(sparks: Sparks, tmp_path: Path) -> None:
    """pin-nccl-interfaces asks for the interface and the head's address, which no log gives: `e` takes them,
    then it runs on the Ray cluster and answers a completion."""
    assert await asyncio.to_thread(ray_start_cluster, sparks) == 0  # play runs its own event loop
    launch = Deployment(containers=("vllm_node",), launch="vllm serve org/model --tensor-parallel-size 2")
    app = spark_cockpit(sparks, tmp_path, deployment=launch)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_playbook(pilot, app, "nccl-second-communicator-not-joined", "l")
        assert "no value for iface" in shown(screen)
        await type_in(pilot, screen, {"iface": IFACE, "head_ip": sparks.head.address, "hca": "", "port": "18089"})
        assert "Succeeded, verified: completion from http://localhost:18089: ready: 8 tokens in " in await run(
            pilot, screen, 120
        )


def test_discover_finds_the_link_the_nodes_share(sparks: Sparks, tmp_path: Path) -> None:
    out = tmp_path / "sparktui.toml"
    assert main(["discover", "spark-a", "spark-b", "--output", str(out)]) == 0
    assert config.load(out).network == link(sparks)


@pytest.mark.parametrize(
    ("playbook", "serve", "more"),
    [
        ("vllm-add-ray-backend", "vllm serve org/model --tensor-parallel-size 2", "port=18100"),
        ("vllm-lower-memory", "vllm serve org/model --distributed-executor-backend ray", "max_model_len=4096"),
    ],
)
def test_a_relaunch_that_never_answers_is_stopped(
    sparks: Sparks, tmp_path: Path, playbook: str, serve: str, more: str
) -> None:
    """The relaunched server listens on 127.0.0.2, the check asks 127.0.0.1: the rollback stops it."""
    assert ray_start_cluster(sparks) == 0
    given = ["--set", "container=vllm_node", "--set", f"serve={serve} --host 127.0.0.2", "--set", more]
    books = str(changed(tmp_path, playbook, within=3))
    assert main(["play", playbook, "--playbooks", books, *NODES, *given, "--yes"]) == 1
    steps = audit()
    assert ("spark-a", "verify", 1) in steps
    assert ("spark-a", "Stop the relaunched vllm serve (SIGINT, SIGKILL after 60 s)", 0) in steps
    assert "vllm serve" not in sparks.head.run("docker exec vllm_node ps -o args").stdout


RAY_NOT_RUNNING = "ConnectionError: Could not find any running Ray instance. Please specify the one to connect to by setting `--address` flag or `RAY_ADDRESS` environment variable."  # noqa: E501
NO_KV_MEMORY = "ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine."  # noqa: E501
SGLANG = Deployment(  # what the cluster file says of an SGLang deployment
    engine="sglang",
    containers=("sglang_node",),
    launch="python3 -m sglang.launch_server --model-path org/model --tp 2 --nnodes 2 --node-rank 0"
    " --dist-init-addr 10.0.0.1:5000 --host 0.0.0.0 --trust-remote-code",
)


async def test_from_the_cockpit_ray_starts_with_the_cluster_files_network(sparks: Sparks, tmp_path: Path) -> None:
    """The interface and the head's address come from the cluster file's [network]: nothing to type."""
    for node in sparks:
        node.engine_container("vllm_node")
    app = spark_cockpit(sparks, tmp_path, {"driver.log": RAY_NOT_RUNNING + "\n"}, network=link(sparks))
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_playbook(pilot, app, "ray-no-running-instance", "r")
        assert f"ray start --head --port=6379 --node-ip-address={sparks.head.address}" in shown(screen)
        assert "Succeeded, verified" in await run(pilot, screen, 120)
    assert sparks.head.run("docker exec vllm_node ray status").stdout.count(" node_") == 2


async def test_from_the_cockpit_serve_is_relaunched_with_the_ray_backend(sparks: Sparks, tmp_path: Path) -> None:
    assert await asyncio.to_thread(ray_start_cluster, sparks) == 0
    launch = Deployment(containers=("vllm_node",), launch="vllm serve org/model --tensor-parallel-size 2")
    app = spark_cockpit(sparks, tmp_path, {"server.log": WORLD_SIZE}, deployment=launch)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_playbook(pilot, app, "vllm-world-size-exceeds-local-gpus", "b")
        await type_in(pilot, screen, {"port": "18096"})
        assert "Succeeded, verified: completion from http://localhost:18096: ready: 8 tokens in " in await run(
            pilot, screen, 120
        )
    running = sparks.head.run("docker exec vllm_node ps -o args").stdout
    assert "--distributed-executor-backend ray --port 18096" in running


async def test_from_the_cockpit_lower_memory_relaunches_then_b_stops_it(sparks: Sparks, tmp_path: Path) -> None:
    """The relaunch listens where the check does not ask, so the verification fails; `b` stops it."""
    sparks.head.engine_container("vllm_node", ray=False)
    serve = "vllm serve org/model --distributed-executor-backend ray --host 127.0.0.2"
    books = [changed(tmp_path, "vllm-lower-memory", within=3)]
    launch = Deployment(containers=("vllm_node",), launch=serve)
    app = spark_cockpit(sparks, tmp_path, {"server.log": NO_KV_MEMORY + "\n"}, deployment=launch, books=books)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_playbook(pilot, app, "vllm-no-memory-for-kv-cache", "o")
        await type_in(pilot, screen, {"max_model_len": "4096", "port": "18097"})
        assert "--gpu-memory-utilization 0.7 --max-model-len 4096 --port 18097" in shown(screen)
        assert "spark-a: cannot reach localhost:18097: Connection refused" in await run(pilot, screen, 60)
        assert "Failed, rolled back" in await roll_back(pilot, screen, 90)
    assert sparks.head.run("pgrep -f 'vllm[ ]serve'", check=False).returncode == 1


async def test_from_the_cockpit_sglang_is_switched_to_vllm_from_its_launch(sparks: Sparks, tmp_path: Path) -> None:
    """The cluster file says SGLang and gives its launch: the screen shows the vLLM launch translated from
    it, and the run brings vLLM up on Ray in place of SGLang."""
    for node in sparks:
        node.engine_container("sglang_node", ray=False)
    app = spark_cockpit(sparks, tmp_path, deployment=SGLANG, network=link(sparks))
    options = ["--ulimit", f"memlock={memlock_limit(sparks.head)}", *ray_run_options()[2:]]
    typed = {"image": ENGINE_IMAGE, "hf_home": str(tmp_path), "docker_options": shlex.join(options), "port": "18098"}
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_playbook(pilot, app, "nccl-second-communicator-not-joined", "v")
        await type_in(pilot, screen, typed)
        assert "vllm serve org/model --tensor-parallel-size 2" in shown(screen)
        assert "Succeeded, verified: completion from http://localhost:18098: ready: 8 tokens in " in await run(
            pilot, screen, 180
        )
    for node in sparks:
        assert not node.docker.api.inspect_container("sglang_node")["State"]["Running"]
        assert node.docker.api.inspect_container("vllm_node")["State"]["Running"]
    assert sparks.head.run("docker exec vllm_node ray status").stdout.count(" node_") == 2


async def test_from_the_cockpit_b_brings_sglang_back_when_vllm_cannot_start(sparks: Sparks, tmp_path: Path) -> None:
    """With the default --gpus all, which this machine cannot honour, creating the vLLM container fails."""
    sglang = {node.name: node.engine_container("sglang_node", ray=False).id for node in sparks}
    app = spark_cockpit(sparks, tmp_path, deployment=SGLANG, network=link(sparks))
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_playbook(pilot, app, "nccl-second-communicator-not-joined", "v")
        await type_in(pilot, screen, {"image": ENGINE_IMAGE, "hf_home": str(tmp_path)})
        assert "Create the vLLM container with the node's own Spark environment: exit 125" in await run(
            pilot, screen, 120
        )
        assert "Failed, rolled back" in await roll_back(pilot, screen, 120)
    for node in sparks:
        state = node.docker.api.inspect_container("sglang_node")
        assert state["Id"] == sglang[node.name] and state["State"]["Running"]
