"""The ``docker run`` written from ``docker inspect`` creates, on a real engine, a container whose settings
equal the original's: the same flow a playbook runs (rename the old one, run the written command)."""

from __future__ import annotations

import json
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sparktui.core.launch.docker_run import docker_run
from tests.servers.dockerd import PREFIX, DockerEngine

COMPARED = {
    "Config": ("Env", "Labels", "Entrypoint", "Cmd", "WorkingDir", "User", "Image", "Tty", "OpenStdin"),
    "HostConfig": (
        "NetworkMode",
        "IpcMode",
        "PidMode",
        "Binds",
        "Mounts",
        "Tmpfs",
        "Ulimits",
        "ShmSize",
        "RestartPolicy",
        "CapAdd",
        "CapDrop",
        "Privileged",
        "DeviceRequests",
        "ExtraHosts",
        "Sysctls",
        "Memory",
        "NanoCpus",
        "Init",
    ),
}


def docker(engine: DockerEngine, *args: str) -> str:
    done = subprocess.run(["docker", "-H", engine.base_url, *args], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, f"docker {' '.join(args)}: {done.stderr}"
    return done.stdout


def inspect(engine: DockerEngine, name: str) -> dict[str, Any]:
    found: list[dict[str, Any]] = json.loads(docker(engine, "inspect", name))
    return found[0]


def settings(container: dict[str, Any]) -> dict[str, Any]:
    """The compared settings, the environment sorted (Docker does not always keep its order)."""
    found = {f"{part}.{key}": container[part].get(key) for part, keys in COMPARED.items() for key in keys}
    found["Config.Env"] = sorted(found["Config.Env"] or ())
    return found


@pytest.fixture
def name(docker_engine: DockerEngine) -> Iterator[str]:
    made = f"{PREFIX}recreate-{uuid.uuid4().hex[:8]}"
    yield made
    for leftover in (made, f"{made}-before-sparktui"):
        subprocess.run(["docker", "-H", docker_engine.base_url, "rm", "-f", leftover], capture_output=True)


@pytest.mark.parametrize(
    "flags",
    [
        pytest.param(
            [
                "--network=none",
                "-e",
                "A=1",
                "-e",
                "SPACED=two words; $(and more)",
                "--label",
                "sparktui.test=yes",
                "--ulimit",
                "memlock=-1:-1",
                "--ulimit",
                "stack=67108864:67108864",
                "--shm-size=1g",
                "--restart=unless-stopped",
                "--workdir=/tmp",
                "--cap-add=SYS_PTRACE",
                "--tmpfs=/scratch:size=10m",
                "--add-host=spark-b:10.0.0.2",
                "--memory=512m",
                "--cpus=1.5",
                "--init",
                "--entrypoint=sh",
                "IMAGE",
                "-c",
                "exec sleep 1000",
            ],
            id="entrypoint-and-limits",
        ),
        pytest.param(
            ["--network=host", "--ipc=host", "--privileged", "IMAGE", "vllm", "serve", "org/model", "--port", "8000"],
            id="host-network-ipc",
        ),
        pytest.param(["--network=none", "--gpus=all", "IMAGE", "sleep", "1000"], id="all-gpus"),
        pytest.param(["--network=none", "--gpus", '"device=0,1"', "IMAGE", "sleep", "1000"], id="some-gpus"),
    ],
)
def test_written_command_recreates_the_same_settings(
    docker_engine: DockerEngine, name: str, flags: list[str], tmp_path: Path
) -> None:
    mount = tmp_path / "data"
    mount.mkdir()
    flags = [docker_engine.image if f == "IMAGE" else f for f in flags]
    docker(docker_engine, "create", "--name", name, "-v", f"{mount}:/data:ro", *flags)
    before = inspect(docker_engine, name)
    image = json.loads(docker(docker_engine, "image", "inspect", before["Config"]["Image"]))[0]
    written = docker_run(before, image)
    assert written.argv[:5] == ("docker", "run", "-d", "--name", name)
    assert written.image == docker_engine.image
    assert written.argv[len(written.options) + 1 :] == written.command
    assert written.notes == ()

    docker(docker_engine, "rename", name, f"{name}-before-sparktui")
    create = ["create", *written.argv[3:]]  # the same command, created rather than started: no GPU here
    docker(docker_engine, *create)
    after = inspect(docker_engine, name)
    assert settings(after) == settings(before)


def test_not_a_container() -> None:
    with pytest.raises(ValueError, match="not the docker inspect output"):
        docker_run({"RepoTags": ["x"]})
