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
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sparktui.core import catalogue as cat
from sparktui.core import cluster as clusterfile
from sparktui.core.edge.head import RayEdge
from sparktui.core.edge.targets import FILE, cluster_logs
from sparktui.core.pipeline import run
from sparktui.core.sources.open import Opener, SshContainer
from sparktui.core.sources.ray import RayLogs, source_name
from sparktui.core.sources.ssh import SshFileSource
from tests.servers.dockerd import Containers, DockerEngine, start_engine, stop_engine
from tests.servers.raynodes import ADDRESS, RayNode, node_env, start_cluster
from tests.servers.sshd import Sshd, keygen, plain_namespace, sshd_config

from ..conftest import ROOT
from ..waiting import until, wait_until

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
def engine() -> Iterator[DockerEngine]:
    """A Docker engine the nodes reach as their own (``DOCKER_HOST``), as each node of a cluster has one."""
    assert [name for _, name in socket.if_nameindex()] == ["lo"], "run this module through test_ray_edge.py"
    started = start_engine(Path(tempfile.mkdtemp(prefix="sparktui-edge-dockerd-")))
    try:
        yield started
    finally:
        stop_engine(started)


@pytest.fixture(scope="module")
def nodes(engine: DockerEngine) -> Iterator[list[RayNode]]:
    assert [name for _, name in socket.if_nameindex()] == ["lo"], "run this module through test_ray_edge.py"
    root = Path(tempfile.mkdtemp(prefix="sparktui-edge-"))  # short: Ray's socket paths live below it
    shadow = root / "without-regex" / "regex"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text(MISSING)
    found: list[RayNode] = []
    envs = {k: {**node_env(root), "DOCKER_HOST": engine.base_url} for k in range(4)}
    envs[3]["PYTHONPATH"] = str(shadow.parent)
    try:
        found = start_cluster(root, workers=3, env=envs)
        for index, (node, capture) in enumerate(zip(found, CAPTURES, strict=True)):
            shutil.copy(FIXTURES / capture, node.log(worker_log(index)))
        # The head's autoscaler prints its first status a few seconds in: the tests read the logs more than
        # once and compare, so they start once it has (else one read may hold it and the next not).
        monitor = found[0].log("monitor.log")
        wait_until(lambda: monitor.exists() and "Autoscaler status: " in monitor.read_text(), 60, "the first status")
        yield found
    finally:
        for node in found:
            node.stop()
        shutil.rmtree(root, ignore_errors=True)


def diagnose(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> tuple[dict[str, Any], str]:
    """``sparktui diagnose --json ARGS ray://head`` in ``cwd`` (where a cluster file may be), its JSON and stderr."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "RAY_USAGE_STATS_ENABLED": "0", **(env or {})}
    done = subprocess.run(
        [sys.executable, "-m", "sparktui", "diagnose", "--json", *args, ADDRESS],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd or tempfile.gettempdir(),
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
    assert summary[0].endswith(f"pulled instead: {NO_REGEX}")
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
        await until(lambda: len(edge.totals.nodes) == 2, 60, "both nodes scanning at the edge")
        with live.open("a") as out:
            out.writelines(port_in_use)
        await until(lambda: counts and counts[-1] == 1, 60, "the port in use, scanned on its node, found live")
        assert not notes
        for pid in scan_actors(worker):
            os.kill(pid, 9)
        await until(lambda: notes, 60, "the killed scan reported")
        with live.open("a") as out:
            out.writelines(port_in_use)  # after the kill: pulled through the log API, from where the scan stopped
        await until(lambda: counts[-1] == 2, 60, "the lines after the kill, pulled")
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


async def test_edge_followed_scans_the_logs_made_after_it_started(nodes: list[RayNode]) -> None:
    """Trial 12b §4 item 9 at the edge: a worker log made after the scan began (a job launched after diagnose)
    is found by its node's own listing and scanned there, from its first line; nothing is pulled."""
    head = nodes[0]
    late = head.log("worker-late-0000-01000000-4999.out")
    name = source_name(ADDRESS, head.ip, late.name)
    port_in_use = (FIXTURES / "vllm/port-in-use/server.log").read_text()
    catalogue = cat.load()
    edge = RayEdge(ADDRESS, catalogue, "worker-*.out", follow=True, node_filter="127.0.0.[12]")
    pipeline = run(catalogue, [edge], show=False)
    seen: list[str] = []

    def watch() -> None:
        for update in pipeline.updates():
            if update.diagnosis is not None:
                seen.extend(
                    e.source
                    for f in update.diagnosis.findings
                    if f.signature == "server-port-in-use"
                    for e in f.evidence
                    if e.source == name
                )

    watching = asyncio.create_task(asyncio.to_thread(watch))
    try:
        await until(lambda: len(edge.totals.nodes) == 2, 60, "both nodes scanning at the edge")
        assert not late.exists()
        late.write_text(port_in_use)
        await until(lambda: seen, 60, f"the port in use in {late.name}, made after the scan began, found")
    finally:
        pipeline.stop()
        await watching
    assert edge.totals.pulled == [] and sorted(edge.totals.nodes) == [head.ip, nodes[1].ip]
    assert pipeline.result is not None
    (source,) = (s for s in pipeline.result.sources if s.name == name)
    assert source.node == head.ip and source.lines == len(port_in_use.splitlines())
    # Trial 12c F14: followed, no file is ever done, and the summary said `0 B of logs read there`
    assert edge.totals.read >= len(port_in_use.encode()), edge.totals


#: What the cluster file names: a container on every node, a file on two Ray nodes and on one that is not in
#: the Ray cluster (127.0.0.5), and a journal unit (followed only). 127.0.0.4 (no `regex`) and 127.0.0.5 are
#: reached over SSH.
CONTAINER_LOG = "vllm/model-code-import-fails/server.log"
FILE_LOGS = {
    "127.0.0.2": "vllm/tensor-parallel-2-without-ray/server.log",
    NO_REGEX: "vllm/max-model-len-beyond-config/server.log",
    "127.0.0.5": "vllm/unknown-model-type/server.log",
}
JOURNAL = "ssh://127.0.0.1/journal/vllm"
#: sshd's own namespace: a /run of its own, where the engine's socket is the node's /var/run/docker.sock.
SSHD_NAMESPACE = 'mount -t tmpfs tmpfs /run && mkdir -p /run/sshd && ln -s "$0" /run/docker.sock'


@pytest.fixture(scope="module")
def deployment(nodes: list[RayNode], engine: DockerEngine) -> Iterator[Path]:
    """A folder holding the cluster file (sparktui.toml) and a home whose SSH files reach 127.0.0.1 to
    127.0.0.5, where one sshd listens; the container is running with its log written."""
    root = Path(tempfile.mkdtemp(prefix="sparktui-edge-cluster-"))
    root.chmod(0o700)
    control = root / "control"
    control.mkdir()
    containers = Containers(engine, control)
    container = containers.create(log=CONTAINER_LOG)
    paths = {}
    for ip, capture in FILE_LOGS.items():
        paths[ip] = root / f"engine-{ip}.log"
        shutil.copy(FIXTURES / capture, paths[ip])
    home = root / "home"
    (home / ".ssh").mkdir(parents=True, mode=0o700)
    user_key = keygen(root / "id_user", "edge")
    host_key = keygen(root / "host_key", "edge-node")
    (root / "authorized_keys").write_text(user_key.with_suffix(".pub").read_text())
    port = 2222
    config = root / "sshd_config"
    listen = [f"127.0.0.{k}:{port}" for k in range(1, 6)]
    config.write_text(sshd_config(listen, host_key, root / "authorized_keys"))
    key = " ".join(host_key.with_suffix(".pub").read_text().split()[:2])
    (home / ".ssh" / "known_hosts").write_text("".join(f"[127.0.0.{k}]:{port} {key}\n" for k in range(1, 6)))
    (home / ".ssh" / "config").write_text(f"Host 127.0.0.*\n  User root\n  Port {port}\n  IdentityFile {user_key}\n")
    # Its own engine's socket is the sshd's /var/run/docker.sock (an engine already running has it there).
    setup = SSHD_NAMESPACE if engine.daemon is not None else ""
    namespace = plain_namespace(setup, engine.base_url.removeprefix("unix://"))
    sshd = Sshd(
        "edge", "127.0.0.5", port, host_key, config, root / "sshd.log", namespace_of=namespace and namespace.pid
    )
    nodes_toml = "".join(
        f'[[nodes]]\nname = "n{k}"\nssh = "127.0.0.{k}"\nrole = "{"head" if k == 1 else "worker"}"\n'
        + (f'sources = ["ssh://127.0.0.{k}{paths[f"127.0.0.{k}"]}"]\n' if f"127.0.0.{k}" in paths else "")
        + (f'sources = ["{JOURNAL}"]\n' if k == 1 else "")
        for k in range(1, 6)
    )
    (root / "sparktui.toml").write_text(nodes_toml + f'[deployment]\ncontainers = ["{container}"]\n')
    try:
        sshd.start()
        lines = len((FIXTURES / CONTAINER_LOG).read_text().splitlines())
        wait_until(lambda: len(engine.client.api.logs(container).splitlines()) >= lines, 30, "the container's log")
        yield root
    finally:
        sshd.stop()
        containers.remove_all()
        namespace.kill()
        namespace.wait()
        shutil.rmtree(root, ignore_errors=True)


def test_edge_reads_the_paths_and_containers_of_the_cluster_file(nodes: list[RayNode], deployment: Path) -> None:
    """Read once: each Ray node reads the container and its files itself; 127.0.0.4, whose scan cannot run,
    and 127.0.0.5, which is no Ray node, are read over SSH; the journal unit is named as not read."""
    home = {"HOME": str(deployment / "home")}
    pulled = pulled_once(deployment)
    edge, said = diagnose("--edge", cwd=deployment, env=home)
    assert {f["signature"] for f in pulled["findings"]} | {"ray-edge-scan-not-run"} == {
        f["signature"] for f in edge["findings"]
    }
    found = {f["signature"]: f for f in edge["findings"]}
    container = next(s["name"] for s in edge["sources"] if "/docker/" in s["name"] and s["node"] == "127.0.0.1")
    sources = {s["name"]: s for s in edge["sources"]}
    for ip in ("127.0.0.1", "127.0.0.2", "127.0.0.3", NO_REGEX, "127.0.0.5"):
        name = container.replace("127.0.0.1", ip)
        assert sources[name]["lines"] == len((FIXTURES / CONTAINER_LOG).read_text().splitlines()), sources[name]
    imports = found["model-code-import-error"]
    assert sorted(imports["nodes"]) == ["127.0.0.1", "127.0.0.2", "127.0.0.3", NO_REGEX, "127.0.0.5"], imports
    for ip, signature in (
        ("127.0.0.2", "vllm-distributed-init-stalled"),
        (NO_REGEX, "vllm-max-model-len-exceeds-model-config"),
        ("127.0.0.5", "transformers-unknown-model-type"),
    ):
        assert ip in found[signature]["nodes"], found[signature]
        assert f"{ip}:{deployment}/engine-{ip}.log" in {e["source"] for e in found[signature]["evidence"]}
    (note,) = [f for f in edge["findings"] if f["signature"] == "ray-edge-scan-not-run"]
    said_of = {e["node"]: e["text"] for e in note["evidence"]}
    assert said_of[NO_REGEX].endswith("pulled through the Ray log API and over SSH instead"), said_of
    assert "n5 could not start: it is not an alive node of the Ray cluster" in said_of["n5"], said_of
    assert said_of["n5"].endswith("pulled over SSH instead"), said_of
    summary = next(line for line in said.splitlines() if "scanned at the edge" in line)
    assert "scanned at the edge on 3 nodes" in summary and summary.endswith(f"add --follow): {JOURNAL}"), summary

    # What the pulled run found, the edge run found on the same nodes. Pulled first: the edge run's failed
    # actor on 127.0.0.4 leaves its traceback in that node's Ray logs, which the edge run then reads too.
    # The evidence kept of a finding is the first few lines met, and the pulled run meets its sources in the
    # order their connections come up, so the lines kept may differ; the counts and the nodes may not.
    failed_node = f"{ADDRESS}/{NO_REGEX}/"
    for before in pulled["findings"]:
        after = found[before["signature"]]
        assert sorted(after["nodes"]) == sorted(before["nodes"]), (before, after)
        later = any(e["source"].startswith(failed_node) for e in after["evidence"])
        assert after["count"] == before["count"] or (later and after["count"] > before["count"]), (before, after)


def pulled_once(deployment: Path) -> dict[str, Any]:
    """The Ray logs through the log API and the cluster file's files and containers over SSH, read once."""
    os.environ["HOME"] = str(deployment / "home")  # this process runs this module alone, in its namespace
    cluster = clusterfile.load(deployment / "sparktui.toml")
    opener = Opener()
    inputs: list[Any] = [RayLogs(ADDRESS, follow=False)]
    for node in cluster.nodes:
        for log in cluster_logs(cluster, node)[0]:
            ssh = opener.node_for(log.ssh)
            if log.target.kind == FILE:
                inputs.append(SshFileSource(ssh, log.ssh.target, follow=False))
            else:
                inputs.append(SshContainer(log.uri, ssh, log.target.where, follow=False))
    catalogue = cat.load()
    return run(catalogue, inputs, show=False, refresh=False).wait().as_dict()


def test_a_node_whose_scan_is_not_up_in_time_is_reported_and_pulled(nodes: list[RayNode]) -> None:
    """The time limit on an actor saying it is up, made shorter than any actor takes to start: the node is a
    finding, with the state Ray lists its actor in, and its logs are pulled, with the same findings."""
    catalogue = cat.load()
    one, capture = "127.0.0.2", "worker-0*.out"  # the node's capture alone: its other logs are being written
    pulled = run(catalogue, [RayLogs(ADDRESS, capture, node_filter=one, follow=False)], show=False, refresh=False)
    edge = RayEdge(ADDRESS, catalogue, capture, follow=False, node_filter=one, place_seconds=0.01)
    late = run(catalogue, [edge], show=False, refresh=False).wait()
    assert edge.totals.pulled == [one] and not edge.totals.nodes
    (note,) = [f for f in late.findings if f.signature == "ray-edge-scan-not-run"]
    assert note.facts["what"] == "did not start within 0 s", note.facts
    assert note.facts["state"].startswith("Ray lists its actor as "), note.facts
    others = [f for f in late.as_dict()["findings"] if f["signature"] != note.signature]
    assert others == pulled.wait().as_dict()["findings"]


async def test_edge_follows_the_cluster_files_paths_and_containers(nodes: list[RayNode], deployment: Path) -> None:
    """Followed: the container and the files are followed on their nodes (127.0.0.5's over SSH), the journal
    unit is pulled as the cockpit pulls it, and a line added to a node's file is found as it comes."""
    os.environ["HOME"] = str(deployment / "home")
    cluster = clusterfile.load(deployment / "sparktui.toml")
    catalogue = cat.load()
    edge = RayEdge(ADDRESS, catalogue, "raylet.out", follow=True, node_filter="127.0.0.[123]", cluster=cluster)
    pipeline = run(catalogue, [edge], show=False)
    seen: dict[str, tuple[int, frozenset[str]]] = {}
    states: list[str] = []

    def watch() -> None:
        for update in pipeline.updates():
            states.extend(c.source for c in update.changes)
            if update.diagnosis is not None:
                seen.update({f.signature: (f.count, frozenset(f.nodes)) for f in update.diagnosis.findings})

    watching = asyncio.create_task(asyncio.to_thread(watch))
    everywhere = frozenset({"127.0.0.1", "127.0.0.2", "127.0.0.3", NO_REGEX, "127.0.0.5"})
    try:
        await until(lambda: seen.get("model-code-import-error", (0, frozenset()))[1] == everywhere, 60, "the container")
        await until(lambda: "transformers-unknown-model-type" in seen, 60, "127.0.0.5's file, over SSH")
        await until(lambda: "vllm-engine-core-failed-to-start" in seen, 60, "127.0.0.2's file")
        failed = seen["vllm-engine-core-failed-to-start"][0]
        lines = (FIXTURES / FILE_LOGS["127.0.0.2"]).read_text().splitlines(keepends=True)
        with (deployment / "engine-127.0.0.2.log").open("a") as out:
            out.writelines(lines)
        await until(
            lambda: seen["vllm-engine-core-failed-to-start"][0] > failed, 60, "the lines added, scanned on the node"
        )
    finally:
        pipeline.stop()
        await watching
    assert sorted(edge.totals.nodes) == ["127.0.0.1", "127.0.0.2", "127.0.0.3"]
    assert "127.0.0.1:journal/vllm" in states and not edge.totals.unread  # pulled over SSH
