"""``sparktui stacks`` inside a container, through the Docker engine: a real 2-rank gloo job (torch's CPU
build, bind-mounted into the test image with the libraries it needs) hung in new_group, dumped by the real
py-spy run with docker exec; with SYS_PTRACE the rank that never joined is named, without it the refusal is
one line with the fix. Without it py-spy reads the ranks all the same on this machine's kernel (no Yama, and
Docker's profile allows process_vm_readv from kernel 4.8 on), so the refusal is made by a seccomp profile that
denies ptrace and process_vm_readv, as Docker's own profile does on older kernels."""

from __future__ import annotations

import json
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from docker.models.containers import Container

from sparktui.cli import main
from sparktui.core.stacks.script import BROUGHT
from tests.servers.dockerd import PREFIX, DockerEngine
from tests.servers.fixtures import docker_engine
from tests.waiting import wait_until

from .jobs import PYTHON, SCENARIO, SLEEP_LINE

__all__ = ["docker_engine"]
PY_SPY = Path(sys.executable).parent / "py-spy"
VENV = PYTHON.parent.parent
#: What the job needs from this machine, read-only at the same paths: the C libraries (the dynamic loader
#: included), the interpreter, the venv with torch, the scenario and py-spy.
MOUNTS = {
    "/usr/lib": "/usr/lib",
    "/usr/lib64": "/lib64",
    str(Path(sys.base_prefix)): str(Path(sys.base_prefix)),
    str(VENV): str(VENV),
    str(SCENARIO.parent): "/scenario",
}
NO_PTRACE = {
    "defaultAction": "SCMP_ACT_ALLOW",
    "syscalls": [{"names": ["ptrace", "process_vm_readv"], "action": "SCMP_ACT_ERRNO", "errnoRet": 1}],
}
RANKS = (
    "for r in 0 1; do RANK=$r WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=29655 GLOO_SOCKET_IFNAME=lo "
    f"PYTHONUNBUFFERED=1 OMP_NUM_THREADS=1 {PYTHON} /scenario/scenario.py second-group & done; wait"
)


@contextmanager
def hung_job(engine: DockerEngine, ptrace: bool) -> Iterator[Container]:
    """The hung job in a container of its own: with SYS_PTRACE, or with ptrace denied by seccomp."""
    volumes = [f"{host}:{inside}:ro" for host, inside in MOUNTS.items()] + ["/usr/lib:/lib:ro"]
    container = engine.client.containers.run(
        engine.image,
        ["sh", "-c", RANKS],
        name=f"{PREFIX}stacks-{uuid.uuid4().hex[:8]}",
        detach=True,
        network_mode="none",
        volumes=volumes,
        cap_add=["SYS_PTRACE"] if ptrace else [],
        security_opt=[] if ptrace else [f"seccomp={json.dumps(NO_PTRACE)}"],
    )
    try:

        def in_place() -> bool:
            container.reload()
            assert container.status == "running", container.logs().decode()[-2000:]
            return container.logs().count(b"in place") == 2

        wait_until(in_place, 120, "both ranks in place in the container")
        yield container
    finally:
        container.remove(force=True)


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, Any]]:
    code = main(["stacks", "--json", "--samples", "2", "--interval", "0.5", "--py-spy", str(PY_SPY), *argv])
    return code, json.loads(capsys.readouterr().out)


@pytest.fixture
def engine(docker_engine: DockerEngine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> DockerEngine:
    monkeypatch.setenv("DOCKER_HOST", docker_engine.base_url)  # the docker command the gathering runs
    monkeypatch.chdir(tmp_path)
    return docker_engine


def test_ranks_in_a_container(engine: DockerEngine, capsys: pytest.CaptureFixture[str]) -> None:
    with hung_job(engine, ptrace=True) as container:
        code, result = run(["--container", container.name], capsys)
    assert code == 1, result
    g = next(g for g in result["groups"] if g["job"] == "127.0.0.1:29655")
    assert g["findings"][0] == (
        f"rank 1 on local/{container.name} is idle in application code, in serve_requests "
        f"(scenario.py:{SLEEP_LINE}) and never entered new_group, which rank 0 waits in"
    )
    assert {r["place"] for r in g["ranks"]} == {container.name}


def test_ptrace_refused_is_one_line(engine: DockerEngine, capsys: pytest.CaptureFixture[str]) -> None:
    with hung_job(engine, ptrace=False) as container:
        code, result = run(["--container", container.name], capsys)
    assert code == 2, result
    assert (
        f"local: ptrace refused in container {container.name}: py-spy cannot read the ranks; give the container "
        "SYS_PTRACE (docker run --cap-add SYS_PTRACE) or allow it on the host (sysctl kernel.yama.ptrace_scope=0, "
        "or run as root)"
    ) in result["problems"]


def test_py_spy_brought_into_a_container_and_taken_away(
    engine: DockerEngine, capsys: pytest.CaptureFixture[str]
) -> None:
    """A container without py-spy: this machine's is copied in through docker exec (after the --yes), the ranks
    are dumped with it, and it is removed again."""
    with hung_job(engine, ptrace=True) as container:
        argv = ["stacks", "--json", "--samples", "1", "--container", container.name]
        assert main(argv) == 2  # its ranks found, none dumped
        assert "py-spy is not installed in container" in capsys.readouterr().out
        code = main([*argv, "--bring-py-spy", "--yes"])
        captured = capsys.readouterr()
        result = json.loads(captured.out)
        assert code == 1, result
        g = next(g for g in result["groups"] if g["job"] == "127.0.0.1:29655")
        assert g["findings"][0].startswith(f"rank 1 on local/{container.name} is idle in application code")
        assert f"in container {container.name}, dump the ranks, then remove it" in " ".join(captured.err.split())
        left = container.exec_run(["sh", "-c", f"ls {BROUGHT} 2>&1"]).output.decode()
    assert "No such file" in left, left
