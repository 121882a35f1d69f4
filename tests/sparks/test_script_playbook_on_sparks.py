"""vllm-script-add-ray-backend on the spark test nodes: it edits a launch script in spark-a's /root, runs it
again and sends it a completion; a failed check puts the old script back; a path with shell metacharacters stays
one word."""

from __future__ import annotations

import shlex
from collections.abc import Iterator
from pathlib import Path

import docker
import pytest

from sparktui.cli import main
from sparktui.core.cluster import Deployment
from tests.servers.books import changed
from tests.servers.cockpit import WORLD_SIZE, run, spark_cockpit, type_in
from tests.servers.sparks import ENGINE_IMAGE, SparkNode, Sparks, audit
from tests.tui.test_play_screen import SIZE, log_lines, open_playbook, shown
from tests.waiting import wait_until

BOOK = "vllm-script-add-ray-backend"
NODES = ["--node", "spark-a", "--node", "spark-b"]


def launch(port: int, options: str = "") -> str:
    """A launch script as users write them: the old container removed, vllm serve's arguments on two lines."""
    return (
        "#!/bin/bash\n"
        "docker rm -f vllm_serve >/dev/null 2>&1\n"
        f"docker run -d --name vllm_serve --network host {ENGINE_IMAGE} vllm serve \\\n"
        f"  org/model --port {port}{options}\n"
    )


@pytest.fixture
def folder(sparks: Sparks) -> Iterator[str]:
    """A fresh folder in spark-a's /root for the test's script (the nodes' /root outlives a test)."""
    made = sparks.head.run("mktemp -d /root/script-test-XXXXXX").stdout.strip()
    try:
        yield made
    finally:
        sparks.head.run(f"rm -rf {shlex.quote(made)}")


def write(node: SparkNode, path: str, text: str) -> None:
    node.run(f"printf %s {shlex.quote(text)} > {shlex.quote(path)} && chmod 755 {shlex.quote(path)}")


def read(node: SparkNode, path: str) -> str:
    return node.run(f"cat {shlex.quote(path)}").stdout


def command_of(node: SparkNode, container: str) -> list[str]:
    """The container's command (Cmd), or none while it does not exist."""
    try:
        return list(node.docker.api.inspect_container(container)["Config"]["Cmd"])
    except docker.errors.NotFound:
        return []


def test_the_flag_goes_right_after_vllm_serve_and_the_server_answers(sparks: Sparks, folder: str) -> None:
    head, script = sparks.head, f"{folder}/launch.sh"
    old = launch(18090)
    write(head, script, old)
    head.run(f"bash {script}")
    wait_until(
        lambda: head.docker.api.inspect_container("vllm_serve")["State"]["Status"] == "exited",
        15,
        "the launch without the Ray executor to fail",
    )
    given = ["--set", f"script={script}", "--set", "port=18090"]
    assert main(["play", BOOK, *NODES, *given, "--yes"]) == 0

    assert ("spark-a", "verify", 0) in audit()
    assert read(head, script) == old.replace("vllm serve \\", "vllm serve --distributed-executor-backend ray \\")
    assert read(head, f"{script}.before-sparktui") == old
    assert head.run(f"stat -c %a {script}").stdout.strip() == "755"
    assert command_of(head, "vllm_serve") == [
        "vllm",
        "serve",
        "--distributed-executor-backend",
        "ray",
        "org/model",
        "--port",
        "18090",
    ]


def test_an_existing_backend_becomes_ray(sparks: Sparks, folder: str) -> None:
    head, script = sparks.head, f"{folder}/launch.sh"
    write(head, script, launch(18091, " --distributed-executor-backend mp"))
    assert main(["play", BOOK, *NODES, "--set", f"script={script}", "--set", "port=18091", "--yes"]) == 0
    assert read(head, script) == launch(18091, " --distributed-executor-backend ray")
    assert command_of(head, "vllm_serve")[-2:] == ["--distributed-executor-backend", "ray"]


def test_a_failed_check_puts_the_old_script_back_and_runs_it(sparks: Sparks, folder: str, tmp_path: Path) -> None:
    head, script = sparks.head, f"{folder}/launch.sh"
    old = launch(18092)
    write(head, script, old)
    given = ["--set", f"script={script}", "--set", "port=18093"]  # nothing will answer there
    assert main(["play", BOOK, "--playbooks", str(changed(tmp_path, BOOK, within=4)), *NODES, *given, "--yes"]) == 1

    assert read(head, script) == old
    assert head.run(f"ls {folder}").stdout.split() == ["launch.sh", "launch.sh.log"]
    steps = audit()
    assert ("spark-a", "verify", 1) in steps
    assert ("spark-a", "Stop the relaunched vllm serve (SIGINT, SIGKILL after 60 s)", 0) in steps
    assert ("spark-a", "Put the old script back and run it", 0) in steps
    wait_until(
        lambda: command_of(head, "vllm_serve") == ["vllm", "serve", "org/model", "--port", "18092"],
        15,
        "the old script's container",
    )


def test_a_backup_left_by_an_earlier_run_is_refused_and_kept(sparks: Sparks, folder: str) -> None:
    head, script = sparks.head, f"{folder}/launch.sh"
    write(head, script, launch(18094))
    write(head, f"{script}.before-sparktui", "the earlier run's copy\n")
    assert main(["play", BOOK, *NODES, "--set", f"script={script}", "--set", "port=18094", "--yes"]) == 1
    assert read(head, script) == launch(18094)
    assert read(head, f"{script}.before-sparktui") == "the earlier run's copy\n"
    assert command_of(head, "vllm_serve") == []


def test_a_path_with_shell_metacharacters_stays_one_word(sparks: Sparks, folder: str) -> None:
    head = sparks.head
    script = f"{folder}/it's; touch pwned $(touch pwned2) `touch pwned3`.sh"
    write(head, script, launch(18095))
    assert main(["play", BOOK, *NODES, "--set", f"script={script}", "--set", "port=18095", "--yes"]) == 0
    assert "--distributed-executor-backend ray" in read(head, script)
    assert not head.run(f"ls -d /root/pwned* {shlex.quote(folder)}/pwned*", check=False).stdout


async def test_from_the_cockpit_the_script_named_in_the_cluster_file_is_edited(
    sparks: Sparks, folder: str, tmp_path: Path
) -> None:
    """The cluster file names the launch script: the screen shows the run and its check, and the script now
    launches vllm serve with the Ray backend."""
    head, script = sparks.head, f"{folder}/launch.sh"
    write(head, script, launch(18099))
    deployment = Deployment(containers=("vllm_serve",), launch_script=script)
    app = spark_cockpit(sparks, tmp_path, {"server.log": WORLD_SIZE}, deployment=deployment)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_playbook(pilot, app, "vllm-world-size-exceeds-local-gpus", "L")
        assert f"mktemp {script}.sparktui-XXXXXX" in shown(screen)
        await type_in(pilot, screen, {"port": "18099"})
        assert "Succeeded, verified: completion from http://localhost:18099: ready: 8 tokens in " in await run(
            pilot, screen, 120
        )
        assert any("+docker run -d --name vllm_serve --network host" in line for line in log_lines(screen))
    assert command_of(head, "vllm_serve")[2:4] == ["--distributed-executor-backend", "ray"]
