"""ray-install-in-image, played on the spark test nodes, which cannot reach PyPI: given a wheelhouse through
``pip_options`` it installs a real Ray into each engine container's Python; its rollback uninstalls Ray where
it installed it; and without a wheelhouse pip's failure stops the run with a line that says what to give.

Each container's ``python3`` is a venv of this machine's Python without Ray (writable, at /venv, first on
PATH); the wheelhouse holds this machine's Ray and what it needs, packed again as wheels (wheelhouse.py)."""

from __future__ import annotations

import shutil
import venv
from pathlib import Path

import pytest
from docker.models.containers import Container

from sparktui.cli import main
from sparktui.core.audit import AuditEntry, read_log
from sparktui.core.dirs import state_dir
from sparktui.core.remedy import playbook as pb
from tests.servers import wheelhouse
from tests.servers.cockpit import roll_back, run, spark_cockpit, type_in
from tests.servers.sparks import ENGINE_IMAGE, PATH, SparkNode, Sparks, ray_volumes
from tests.tui.test_play_screen import SIZE, open_playbook, shown

BOOK = "ray-install-in-image"
PLAY = ["play", BOOK, "--node", "spark-a", "--node", "spark-b", "--set", "container=vllm_node", "--yes"]
VENV, WHEELS, MARKER = "/venv", "/wheels", "/tmp/.sparktui-installed-ray"
# --no-compile: pip leaves the .pyc files to Python, which halves the time an install takes here.
OFFLINE = ["--set", f"pip_options=--no-index --find-links {WHEELS} --no-compile"]
INSTALL, CHECK = (step.title for step in pb.load_all()[BOOK].steps[1:])
(UNINSTALL,) = (step.title for step in pb.load_all()[BOOK].rollback)


@pytest.fixture(scope="session")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Ray with the ``default`` extra and everything it needs, as wheels in one folder."""
    folder = tmp_path_factory.mktemp("wheels")
    wheelhouse.build("ray[default]", folder)
    return folder


@pytest.fixture(scope="session")
def bare_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A venv of this machine's Python with pip and nothing else, made once (copied for each container)."""
    path = tmp_path_factory.mktemp("venv") / "venv"
    venv.create(path, with_pip=True)
    return path


def engine(node: SparkNode, python: Path, wheels: Path | None = None) -> Container:
    """The node's engine container ``vllm_node``, whose ``python3`` is the venv ``python`` (at /venv), with
    the wheelhouse at /wheels if given."""
    # ray_volumes: this machine's Python (the venv's interpreter; its own site-packages stay out of the venv)
    volumes = {**ray_volumes(), str(python): {"bind": VENV, "mode": "rw"}}
    if wheels is not None:
        volumes[str(wheels)] = {"bind": WHEELS, "mode": "ro"}
    return node.docker.containers.run(
        ENGINE_IMAGE,
        ["sleep", "infinity"],
        name="vllm_node",
        detach=True,
        network_mode="host",
        volumes=volumes,
        environment={"PATH": f"{VENV}/bin:{PATH}"},
    )


def engines(sparks: Sparks, bare_venv: Path, tmp_path: Path, wheels: dict[str, Path]) -> list[Container]:
    """An engine container on each node, each with a copy of the bare venv, and the wheelhouse where given."""
    made = []
    for node in sparks:
        python = shutil.copytree(bare_venv, tmp_path / f"venv-{node.name}", symlinks=True)
        made.append(engine(node, python, wheels.get(node.name)))
    return made


def inside(container: Container, command: str) -> tuple[int | None, str]:
    """Exit code and output of a shell command in ``container``."""
    done = container.exec_run(["sh", "-c", command])
    assert isinstance(done.output, bytes)
    return done.exit_code, done.output.decode()


def ray_installed(container: Container) -> bool:
    """Whether the container's pip lists Ray."""
    return inside(container, "python3 -m pip show ray")[0] == 0


def ran(step: str) -> list[AuditEntry]:
    """The audit log's entries of ``step``, in the order they ran."""
    return [e for e in read_log(state_dir() / "audit.jsonl") if e.step == step]


def codes(entries: list[AuditEntry]) -> list[tuple[str, int | None]]:
    return [(e.node, e.exit_code) for e in entries]


def test_air_gapped_nodes_install_ray_from_the_wheelhouse_given_in_pip_options(
    sparks: Sparks, bare_venv: Path, wheels: Path, tmp_path: Path
) -> None:
    containers = engines(sparks, bare_venv, tmp_path, {node.name: wheels for node in sparks})
    assert not any(ray_installed(c) for c in containers)

    assert main([*PLAY, *OFFLINE]) == 0
    checked = ran(CHECK)  # `ray --version` and the import, in each container
    assert codes(checked) == [("spark-a", 0), ("spark-b", 0)]
    for entry in checked:
        assert entry.output.startswith("ray, version ")
        assert f"{VENV}/lib/" in entry.output
    for container in containers:
        assert inside(container, f"command -v ray && ls {MARKER}") == (0, f"{VENV}/bin/ray\n{MARKER}\n")


def test_the_rollback_uninstalls_ray_where_the_playbook_installed_it(
    sparks: Sparks, bare_venv: Path, wheels: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """spark-a installs from its wheelhouse; spark-b has none, so its install fails and the rollback runs on
    both: it uninstalls Ray on spark-a and leaves spark-b as it was."""
    head, worker = engines(sparks, bare_venv, tmp_path, {"spark-a": wheels})

    assert main([*PLAY, *OFFLINE]) == 1
    out = capsys.readouterr().out
    assert f"Location '{WHEELS}' is ignored" in out  # pip, on spark-b
    assert codes(ran(INSTALL)) == [("spark-a", 0), ("spark-b", 1)]
    on_head, on_worker = ran(UNINSTALL)
    assert (on_head.node, on_head.exit_code, on_worker.node, on_worker.exit_code) == ("spark-a", 0, "spark-b", 0)
    assert "Successfully uninstalled ray" in on_head.output
    assert "Ray was not installed by sparktui here" in on_worker.output
    for container in (head, worker):
        assert not ray_installed(container)
        assert inside(container, f"ls {MARKER}")[0] != 0


def test_without_pypi_pip_fails_the_run_and_says_what_to_give(
    sparks: Sparks, bare_venv: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    containers = engines(sparks, bare_venv, tmp_path, {})

    assert main(PLAY) == 1
    out = capsys.readouterr().out
    assert "Failed to establish a new connection" in out  # pip's own lines: PyPI cannot be reached
    assert "No matching distribution found for ray[default]>=2.9" in out
    assert "without PyPI, give pip_options (--no-index --find-links DIR, or --index-url URL)" in out
    assert codes(ran(INSTALL)) == [("spark-a", 1)]  # the run stopped there
    rollback = ran(UNINSTALL)
    assert codes(rollback) == [("spark-a", 0), ("spark-b", 0)]
    assert all("Ray was not installed by sparktui here" in e.output for e in rollback)
    assert not any(ray_installed(c) for c in containers)


RAY_NOT_INSTALLED = "ValueError: Failed to import Ray, please install Ray with `pip install ray`."


async def test_from_the_cockpit_ray_is_installed_with_the_pip_options_typed_in(
    sparks: Sparks, bare_venv: Path, wheels: Path, tmp_path: Path
) -> None:
    containers = engines(sparks, bare_venv, tmp_path, {node.name: wheels for node in sparks})
    app = spark_cockpit(sparks, tmp_path, {"server.log": RAY_NOT_INSTALLED + "\n"})
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_playbook(pilot, app, "vllm-ray-not-installed", "i")
        await type_in(pilot, screen, {"pip_options": OFFLINE[1].removeprefix("pip_options=")})
        assert f"--find-links {WHEELS} --no-compile" in shown(screen)
        assert "Succeeded" in await run(pilot, screen, 300)
    assert all(ray_installed(c) for c in containers)


async def test_from_the_cockpit_b_uninstalls_ray_where_it_was_installed(
    sparks: Sparks, bare_venv: Path, wheels: Path, tmp_path: Path
) -> None:
    """spark-b has no wheelhouse: its install fails, and `b` uninstalls Ray from spark-a again."""
    head, worker = engines(sparks, bare_venv, tmp_path, {"spark-a": wheels})
    app = spark_cockpit(sparks, tmp_path, {"server.log": RAY_NOT_INSTALLED + "\n"})
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_playbook(pilot, app, "vllm-ray-not-installed", "i")
        await type_in(pilot, screen, {"pip_options": OFFLINE[1].removeprefix("pip_options=")})
        assert f"spark-b: {INSTALL}: exit 1" in await run(pilot, screen, 300)
        assert "Failed, rolled back" in await roll_back(pilot, screen, 120)
    assert not ray_installed(head) and not ray_installed(worker)
