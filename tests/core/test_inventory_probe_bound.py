"""The in-image probe is bounded: an engine container whose ``python3`` never answers (the test image's
stand-in sleeps, as a ``docker exec`` hung in the runtime would) ends the probe with "no answer within N s"
instead of holding the whole inventory, with the real script against a real Docker engine."""

from __future__ import annotations

import subprocess

import pytest

from sparktui.core.inventory import collect, script
from tests.servers.dockerd import Containers
from tests.servers.fixtures import docker_containers, docker_engine

__all__ = ["docker_containers", "docker_engine"]

pytestmark = pytest.mark.slow  # a real Docker engine


def test_a_probe_that_never_answers_is_cut_off_and_said(
    docker_containers: Containers, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DOCKER_HOST", docker_containers.engine.base_url)
    name = docker_containers.create(["sleep", "1000000"])
    request = script.Request(containers=(name,), probe_budget=1)
    run = script.nonce()
    bound = request.probe_budget + script.PROBE_GRACE + 60  # the script's other sections, on a busy machine
    done = subprocess.run(["sh", "-c", script.script(request, run)], capture_output=True, text=True, timeout=bound)
    inv = collect.inventory("local", script.split((done.stdout + done.stderr).splitlines(), run), request)
    assert inv.container is not None and inv.container.name == name
    assert inv.probe is not None and inv.probe.via == f"container {name}"
    assert inv.probe.problem == f"no answer within {request.probe_budget + script.PROBE_GRACE} s"
