"""``diagnose --edge``: the scan run on a real 4-node Ray cluster's nodes, against the logs pulled through
Ray's log API, started by these tests (CPU only; tests/servers/raynodes.py).

test_ray_edge.py runs this module inside a network namespace that has only ``lo`` (``unshare --net``), where
Ray keeps 127.x addresses. The nodes run without sparktui on their path: what runs there comes through
Ray's runtime environment. The last worker (127.0.0.4) has a Python in which ``import regex`` fails, as on
a node whose image lacks what the scan needs: a directory first on its ``PYTHONPATH`` holds a ``regex``
package that raises the ImportError a missing one raises. Its scan cannot start there, so its logs are
pulled. Each node's Ray log folder holds small real captures as worker logs.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from sparktui.core import catalogue as cat
from sparktui.core.edge.nodes import RayEdge
from sparktui.core.pipeline import run
from sparktui.core.sources.ray import RayLogs
from tests.servers.raynodes import ADDRESS, RayNode, node_env, start_cluster

from ..conftest import ROOT

FIXTURES = ROOT / "tests" / "fixtures"
#: The captures each node holds, as the stdout of a Ray worker (head first).
CAPTURES = [
    "nccl/two-hosts-second-group-not-joined/rank0.log",
    "nccl/two-hosts-second-group-not-joined/rank1.log",
    "vllm/unknown-architecture/server.log",
    "vllm/max-model-len-too-large/server.log",
]
NO_REGEX = "127.0.0.4"
#: What a Python without the module raises on `import regex`.
MISSING = 'raise ModuleNotFoundError("No module named \'regex\'", name="regex")\n'


def worker_log(index: int) -> str:
    return f"worker-{'0' * 27}{index}-01000000-{4100 + index}.out"


@pytest.fixture(scope="module")
def nodes() -> Iterator[list[RayNode]]:
    assert [name for _, name in socket.if_nameindex()] == ["lo"], "run this module through test_ray_edge.py"
    root = Path(tempfile.mkdtemp(prefix="sparktui-edge-"))  # short: Ray's socket paths live below it
    shadow = root / "without-regex" / "regex"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text(MISSING)
    found: list[RayNode] = []
    try:
        found = start_cluster(root, workers=3, env={3: {**node_env(root), "PYTHONPATH": str(shadow.parent)}})
        for index, (node, capture) in enumerate(zip(found, CAPTURES, strict=True)):
            shutil.copy(FIXTURES / capture, node.log(worker_log(index)))
        yield found
    finally:
        for node in found:
            node.stop()
        shutil.rmtree(root, ignore_errors=True)


def diagnose(*args: str) -> tuple[dict[str, Any], str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "RAY_USAGE_STATS_ENABLED": "0"}
    done = subprocess.run(
        [sys.executable, "-m", "sparktui", "diagnose", "--json", *args, ADDRESS],
        capture_output=True,
        text=True,
        env=env,
        cwd=tempfile.gettempdir(),
        timeout=180,
    )
    assert done.stdout, done.stderr[-4000:]
    return json.loads(done.stdout), done.stderr


def without_rank(findings: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in f.items() if k != "rank"} for f in findings]


def test_edge_gives_the_findings_of_the_pulled_logs(nodes: list[RayNode]) -> None:
    """The nodes that can run the scan (the first three), read once: pulled, then at the edge."""
    catalogue = cat.load()
    healthy = "127.0.0.[123]"
    pulled = run(catalogue, [RayLogs(ADDRESS, node_filter=healthy, follow=False)], show=False, refresh=False).wait()
    edge = RayEdge(ADDRESS, catalogue, follow=False, node_filter=healthy)
    edged = run(catalogue, [edge], show=False, refresh=False).wait()
    assert {"nccl-second-communicator-not-joined", "model-arch-not-supported"} <= {f.signature for f in pulled.findings}
    assert edged.as_dict()["findings"] == pulled.as_dict()["findings"]
    assert edged.stages == pulled.stages
    assert sorted(edge.totals.nodes) == [n.ip for n in nodes[:3]] and not edge.totals.pulled
    assert 0 < edge.totals.results < edge.totals.read


def test_edge_pulls_the_logs_of_a_node_that_cannot_run_its_scan(nodes: list[RayNode]) -> None:
    """``diagnose --edge`` on every node: the one without ``regex`` is a finding, and its logs are pulled."""
    pulled, _ = diagnose()
    edge, said = diagnose("--edge")
    (note,) = [f for f in edge["findings"] if f["signature"] == "ray-edge-scan-not-run"]
    assert note["nodes"] == [NO_REGEX] and note["facts"]["what"] == "could not start"
    assert "No module named 'regex'" in note["facts"]["reason"], note
    assert note["evidence"][0]["source"] == f"{ADDRESS}/{NO_REGEX}/sparktui-edge"
    summary = [line for line in said.splitlines() if "scanned at the edge" in line]
    assert summary and "scanned at the edge on 3 nodes" in summary[0], said[-2000:]
    assert summary[0].endswith(f"pulled through the Ray log API: {NO_REGEX}")
    # What the pulled run found, the edge run found too. The one difference: Ray wrote the failed actor's
    # traceback into that node's raylet.out meanwhile, and pulling the file afterwards reads it too.
    lines = {s["name"]: s["lines"] for s in pulled["sources"]}
    raylet = f"{ADDRESS}/{NO_REGEX}/raylet.out"
    found = {f["signature"]: f for f in edge["findings"]}
    assert set(found) == {f["signature"] for f in pulled["findings"]} | {"ray-edge-scan-not-run"}
    for before in pulled["findings"]:
        after = found[before["signature"]]
        added = [e for e in after["evidence"] if e not in before["evidence"]]
        assert all(e["source"] == raylet and e["line"] > lines[raylet] for e in added), added
        assert after["count"] >= before["count"] and (after["count"] == before["count"] or added)


def scan_actors(node: RayNode) -> list[int]:
    """The processes (as this machine numbers them) of the edge actors on ``node``."""
    init = int(Path(f"/proc/{node.process.pid}/task/{node.process.pid}/children").read_text().split()[0])
    namespace = os.readlink(f"/proc/{init}/ns/pid")
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if os.readlink(entry / "ns" / "pid") == namespace and (entry / "cmdline").read_bytes().startswith(
                b"ray::NodeScan"
            ):
                found.append(int(entry.name))
        except OSError:
            continue
    return found


async def until(condition: Callable[[], object], what: str, seconds: float = 60) -> None:
    deadline = asyncio.get_running_loop().time() + seconds
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, f"{what}: not within {seconds} s"
        await asyncio.sleep(0.1)


async def test_edge_follows_live_and_pulls_a_node_whose_scan_was_killed(nodes: list[RayNode]) -> None:
    head, worker = nodes[0], nodes[1]
    port_in_use = (FIXTURES / "vllm/port-in-use/server.log").read_text().splitlines(keepends=True)
    live = worker.log("worker-live.out")
    live.write_text("")
    catalogue = cat.load()
    edge = RayEdge(ADDRESS, catalogue, "worker-*.out", follow=True, node_filter="127.0.0.[12]")
    pipeline = run(catalogue, [edge], show=False)
    counts: list[int] = []
    notes: list[str] = []

    def watch() -> None:
        for update in pipeline.updates():
            if update.diagnosis is not None:
                found = {f.signature: f for f in update.diagnosis.findings}
                if "server-port-in-use" in found:
                    counts.append(found["server-port-in-use"].count)
                if "ray-edge-scan-not-run" in found:
                    notes.append(found["ray-edge-scan-not-run"].facts["what"])

    watching = asyncio.create_task(asyncio.to_thread(watch))
    try:
        await until(lambda: len(edge.totals.nodes) == 2, "both nodes scanning at the edge")
        with live.open("a") as out:
            out.writelines(port_in_use)
        await until(lambda: counts and counts[-1] == 1, "the port in use, scanned on its node, found live")
        assert not notes
        for pid in scan_actors(worker):
            os.kill(pid, 9)
        await until(lambda: notes, "the killed scan reported")
        with live.open("a") as out:
            out.writelines(port_in_use)  # after the kill: pulled through the log API, from where the scan stopped
        await until(lambda: counts[-1] == 2, "the lines after the kill, pulled")
    finally:
        pipeline.stop()
        await watching
    assert edge.totals.pulled == [worker.ip] and head.ip in edge.totals.nodes
    assert pipeline.result is not None
    note = next(f for f in pipeline.result.findings if f.signature == "ray-edge-scan-not-run")
    assert note.nodes == (worker.ip,) and note.facts["what"] == "stopped", note
    assert "worker process has died" in note.facts["reason"], note.facts
    port = next(f for f in pipeline.result.findings if f.signature == "server-port-in-use")
    assert port.count == 2 and [e.line for e in port.evidence] == [port.evidence[0].line, port.evidence[0].line + 41]
