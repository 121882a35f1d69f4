"""The Ray source against a real Ray head and a real worker node (CPU only), started by these tests.

test_ray.py runs this module inside a network namespace that has only ``lo`` (``unshare --net``), the
one place where Ray keeps 127.0.0.1: with any route outside, Ray replaces a loopback address by the
machine's outside address. The head (127.0.0.1) and the worker (127.0.0.2) each run ``ray start --block``
in a PID namespace of their own, so stopping a node kills exactly its processes, and a parent-death
signal takes them down if this process dies. A driver (ray_driver.py) keeps one actor on each node and
makes it print numbered lines into that node's worker log on command.
"""

from __future__ import annotations

import asyncio
import fnmatch
import json
import os
import queue
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import tomllib
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, cast

import pytest

from sparktui.core.events import State, StateChange
from sparktui.core.sources.base import Backoff, Cursor, Received, supervise
from sparktui.core.sources.ray import DEFAULT_GLOBS, RayLogs, RayLogSource, ray_log_sources
from sparktui.core.text import decode
from tests.servers.raynodes import ADDRESS, RayNode, start_cluster
from tests.waiting import until, wait_until

HEAD_IP, WORKER_IP = "127.0.0.1", "127.0.0.2"
DRIVER = Path(__file__).with_name("ray_driver.py")
ROOT = Path(__file__).resolve().parents[2]


@dataclass
class RayCluster:
    head: RayNode
    worker: RayNode


@pytest.fixture(scope="module")
def ray_cluster() -> Iterator[RayCluster]:
    interfaces = [name for _, name in socket.if_nameindex()]
    assert interfaces == ["lo"], f"run this module through test_ray.py (inside `unshare --net`), not with {interfaces}"
    root = Path(tempfile.mkdtemp(prefix="sparktui-ray-"))  # short: Ray's socket paths live below it
    nodes: list[RayNode] = []
    try:
        nodes = start_cluster(root, workers=1)
        yield RayCluster(*nodes)
    finally:
        for node in nodes:
            node.stop()
        shutil.rmtree(root, ignore_errors=True)


class RayDriver:
    """Steers ray_driver.py; ``pids`` are its actors' process ids (head's, worker's)."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        assert process.stdin is not None and process.stdout is not None
        self._process, self._stdin = process, process.stdin
        self._answers: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, args=(process.stdout,), daemon=True).start()
        self.pids = [int(p) for p in self._expect("READY", 120)]

    def _read(self, stdout: IO[str]) -> None:
        for line in stdout:
            self._answers.put(line)

    def _expect(self, word: str, seconds: float) -> list[str]:
        deadline = time.monotonic() + seconds
        while True:
            try:
                line = self._answers.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"the Ray driver did not say {word} within {seconds} s") from None
            if line.startswith(word):
                return line.split()[1:]

    def _command(self, command: str) -> None:
        self._stdin.write(command + "\n")
        self._stdin.flush()
        self._expect("DONE", 60)

    def emit(self, node: int, tag: str, start: int, stop: int) -> list[str]:
        """Make the actor on node ``node`` (0: head, 1: worker) print numbered lines; returns them."""
        self._command(f"emit {node} {tag} {start} {stop}")
        return [f"{tag} {i}" for i in range(start, stop)]

    def raw(self, node: int, data: bytes) -> None:
        self._command(f"raw {node} {data.hex()}")

    def stop(self) -> None:
        self._process.kill()
        self._process.wait()


def start_driver(ray_cluster: RayCluster) -> RayDriver:
    """A new Ray job: ray_driver.py with one actor on each node, each in a worker process started for it."""
    env = {**os.environ, "HOME": str(ray_cluster.head.temp.parent / "home"), "RAY_USAGE_STATS_ENABLED": "0"}
    command = [
        sys.executable,
        "-u",
        str(DRIVER),
        "127.0.0.1:6379",
        ray_cluster.head.node_id,
        ray_cluster.worker.node_id,
    ]
    with (ray_cluster.head.temp.parent / "driver.log").open("a") as errors:
        process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errors, text=True, env=env
        )
    return RayDriver(process)


@pytest.fixture(scope="module")
def ray_driver(ray_cluster: RayCluster) -> Iterator[RayDriver]:
    driver = start_driver(ray_cluster)
    try:
        yield driver
    finally:
        driver.stop()


def actor_log(driver: RayDriver, node: int, ip: str) -> RayLogSource:
    (source,) = ray_log_sources(ADDRESS, f"worker-*-{driver.pids[node]}.out", node_filter=ip)
    return source


def file_lines(path: Path) -> list[str]:
    """The complete lines of a file, decoded as the source decodes them."""
    data = path.read_bytes()
    return [decode(raw.removesuffix(b"\r")) for raw in data[: data.rfind(b"\n")].split(b"\n")]


def tagged(lines: list[str], tag: str) -> list[str]:
    return [line for line in lines if line.startswith(f"{tag} ")]


async def test_ray_lists_every_alive_nodes_files(ray_cluster: RayCluster) -> None:
    sources = ray_log_sources(ADDRESS)
    pairs = {(s.node, s.filename) for s in sources}
    assert {(HEAD_IP, "raylet.out"), (HEAD_IP, "gcs_server.out"), (WORKER_IP, "raylet.out")} <= pairs
    assert (WORKER_IP, "gcs_server.out") not in pairs  # only the head runs the GCS
    assert all(any(fnmatch.fnmatchcase(f, g) for g in DEFAULT_GLOBS) for _, f in pairs)
    assert len({s.name for s in sources}) == len(sources)
    assert f"{ADDRESS}/{WORKER_IP}/raylet.out" in {s.name for s in sources}
    assert {s.node_id for s in sources if s.node == WORKER_IP} == {ray_cluster.worker.node_id}

    worker_raylet = ray_log_sources(ADDRESS, "raylet.*", node_filter=WORKER_IP)
    assert [(s.node, s.filename) for s in worker_raylet] == [(WORKER_IP, "raylet.err"), (WORKER_IP, "raylet.out")]
    assert ray_log_sources(ADDRESS, "raylet.out", node_filter="no-such-node") == []
    assert {s.filename for s in ray_log_sources(ADDRESS, "*", node_filter=HEAD_IP)} >= {"dashboard.log", "raylet.out"}
    assert [s.name for s in await RayLogs(ADDRESS, "raylet.*", node_filter=WORKER_IP).expand()] == [
        s.name for s in worker_raylet
    ]


async def collect(stream: AsyncIterator[Received], got: list[str], done: Callable[[], bool]) -> Cursor:
    """Read ``stream`` into ``got`` until ``done()``; returns the cursor after the last batch."""
    async with asyncio.timeout(60):
        async for received in stream:
            got.extend(received.lines)
            if done():
                return received.cursor
    raise AssertionError("the stream ended")


def opened(source: RayLogSource, cursor: Cursor | None) -> AsyncGenerator[Received, None]:
    return cast(AsyncGenerator[Received, None], source.stream(cursor))


async def test_ray_task_lines_arrive_once_in_order_across_a_reconnect(
    ray_cluster: RayCluster, ray_driver: RayDriver
) -> None:
    source = actor_log(ray_driver, 1, WORKER_IP)
    assert source.node == WORKER_IP
    got: list[str] = []
    writing = asyncio.create_task(asyncio.to_thread(ray_driver.emit, 1, "first", 0, 3000))
    first = opened(source, None)
    cursor = await collect(first, got, lambda: len(tagged(got, "first")) >= 300)
    await first.aclose()  # the connection closes mid-stream, while the actor still prints
    written = await writing
    # While nothing reads: more lines, half a line, bytes that are not UTF-8 and a colour code.
    written += await asyncio.to_thread(ray_driver.emit, 1, "second", 0, 500)
    await asyncio.to_thread(ray_driver.raw, 1, b"half a line")
    resumed = opened(source, cursor)
    await collect(resumed, got, lambda: len(tagged(got, "second")) == 500)
    await asyncio.to_thread(ray_driver.raw, 1, b" completed \xff\xfe \x1b[31mred\x1b[0m\r\nlast\n")
    await collect(resumed, got, lambda: got[-1] == "last")
    await resumed.aclose()

    assert tagged(got, "first") + tagged(got, "second") == written
    assert got[-2:] == ["half a line completed \ufffd\ufffd red", "last"]  # one line, as written, made safe
    assert got == file_lines(ray_cluster.worker.log(source.filename))


def spooled(incidents: Path) -> dict[str, str]:
    """What the one incident folder under ``incidents`` holds so far: each source's origin -> its lines."""
    folders = list(incidents.glob("*/bundle.toml"))
    if len(folders) != 1:
        return {}
    manifest = tomllib.loads(folders[0].read_text())
    return {
        s["origin"]: (folders[0].parent / s["name"]).read_text(errors="replace") for s in manifest.get("sources", [])
    }


def test_diagnose_follow_reads_the_logs_of_a_job_started_after_it(ray_cluster: RayCluster, tmp_path: Path) -> None:
    """Trial 12b §4 item 9 (N64): ``diagnose --follow ray://head``, then a job: its workers' log files, made
    after the first listing, are read from their first line, on the head and on the worker node."""
    home = tmp_path / "home"
    env = {**os.environ, "HOME": str(home), "RAY_USAGE_STATS_ENABLED": "0"}
    for name in ("XDG_STATE_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "RAY_ADDRESS"):
        env.pop(name, None)
    command = [sys.executable, "-m", "sparktui", "diagnose", "--follow", "--for", "300s", "--json", ADDRESS]
    diagnose = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True)
    incidents = home / ".local/state/sparktui/incidents"
    driver: RayDriver | None = None
    try:
        head_raylet = f"{ADDRESS}/{HEAD_IP}/raylet.out"
        wait_until(lambda: head_raylet in spooled(incidents), 120, "the cluster listed and its raylet.out spooled")
        before = {p.name for node in (ray_cluster.head, ray_cluster.worker) for p in node.logs.glob("worker-*.out")}
        driver = start_driver(ray_cluster)
        written = [driver.emit(0, "late-head", 0, 200), driver.emit(1, "late-worker", 0, 200)]
        files = [actor_log(driver, n, ip).filename for n, ip in ((0, HEAD_IP), (1, WORKER_IP))]
        assert not set(files) & before  # the job's workers' logs did not exist when diagnose listed the cluster
        names = [f"{ADDRESS}/{ip}/{file}" for ip, file in zip((HEAD_IP, WORKER_IP), files, strict=True)]

        def arrived() -> bool:
            now = spooled(incidents)
            return all(
                tagged(now.get(name, "").splitlines(), tag) == lines
                for name, tag, lines in zip(names, ("late-head", "late-worker"), written, strict=True)
            )

        wait_until(arrived, 60, f"the lines of {names} spooled")
        diagnose.send_signal(signal.SIGTERM)
        out, err = diagnose.communicate(timeout=60)
    finally:
        if driver is not None:
            driver.stop()
        if diagnose.poll() is None:
            diagnose.kill()
            diagnose.communicate()
    assert "Traceback" not in err, err
    read = {s["name"]: s["lines"] for s in json.loads(out)["sources"]}
    assert all(read.get(name, 0) >= 200 for name in names), read
    # Trial 12c §4 item 17: Ray's C++ core warned on stderr at every listing (no route out of this namespace);
    # those lines go to a file that the last line names, and sparktui's own lines still show.
    raw = [line for line in err.splitlines() if "network_util.cc" in line and not line.startswith("sparktui: ")]
    assert not raw, raw
    assert "sparktui: received lines kept in" in err
    (kept,) = (home / ".local/state/sparktui/native").glob("ray-*.log")
    assert "network_util.cc:" in kept.read_text() and f"were kept in {kept}, not shown here" in err, err


async def test_ray_worker_node_stopped_mid_stream(ray_cluster: RayCluster, ray_driver: RayDriver) -> None:
    head_actor, worker_actor = actor_log(ray_driver, 0, HEAD_IP), actor_log(ray_driver, 1, WORKER_IP)
    (worker_raylet,) = ray_log_sources(ADDRESS, "raylet.out", node_filter=WORKER_IP)
    sources = [head_actor, worker_actor, worker_raylet]
    got: dict[str, list[str]] = {s.name: [] for s in sources}
    states: list[StateChange] = []

    async def deliver(name: str, received: Received) -> None:
        got[name].extend(received.lines)

    def seen(source: RayLogSource, state: State, text: str = "") -> list[StateChange]:
        return [c for c in states if c.source == source.name and c.state is state and text in c.detail]

    tasks = [asyncio.create_task(supervise(s, deliver, states.append, Backoff(first=0.2, limit=0.5))) for s in sources]
    try:
        on_head = await asyncio.to_thread(ray_driver.emit, 0, "head", 0, 300)
        on_worker = await asyncio.to_thread(ray_driver.emit, 1, "worker", 0, 300)
        await until(lambda: tagged(got[head_actor.name], "head") == on_head, 30, "the head actor's lines")
        await until(lambda: tagged(got[worker_actor.name], "worker") == on_worker, 30, "the worker actor's lines")

        ray_cluster.worker.stop()
        # Listed before the head declares the node dead: its agent cannot list files, so its raylet.out
        # stands for it, and will say what is wrong.
        listed = ray_log_sources(ADDRESS, node_filter=WORKER_IP)
        assert [(s.node, s.filename) for s in listed] == [(WORKER_IP, "raylet.out")]
        for source in (worker_actor, worker_raylet):
            await until(lambda s=source: seen(s, State.RETRYING, "is dead"), 30, f"{source.name} retrying, node dead")
        on_head += await asyncio.to_thread(ray_driver.emit, 0, "head", 300, 600)
        await until(lambda: tagged(got[head_actor.name], "head") == on_head, 30, "the head's lines after the stop")
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    assert not seen(head_actor, State.RETRYING) and not seen(head_actor, State.FAILED)
    broken = seen(worker_actor, State.RETRYING)
    assert all("\n" not in c.detail for c in broken)
    assert any(c.detail.startswith(f"node {WORKER_IP} is dead") for c in broken), broken
    assert not seen(worker_actor, State.FAILED)
    # What each file holds arrived once, in order (the worker's files stay on this machine). The raylet
    # may have written its last lines after its agent stopped relaying: those cannot arrive.
    assert got[head_actor.name] == file_lines(ray_cluster.head.log(head_actor.filename))
    assert got[worker_actor.name] == file_lines(ray_cluster.worker.log(worker_actor.filename))
    raylet = file_lines(ray_cluster.worker.log("raylet.out"))
    assert got[worker_raylet.name] == raylet[: len(got[worker_raylet.name])]


def test_a_log_pulled_once_that_ends_inside_a_traceback_says_so_as_a_local_one(
    ray_cluster: RayCluster, tmp_path: Path
) -> None:
    """`diagnose ray://head` reads each node's log to its end and says what its end leaves open, as `diagnose`
    of the same file here does: the real rank-2 log of a failed rank, cut after its raising frame, in the
    head's log folder (the worker is stopped by the test before)."""
    lines = (ROOT / "tests/fixtures/nccl4/four-hosts-rank-exception/rank2.log").read_text().splitlines()
    cut = "\n".join(lines[: next(i for i, x in enumerate(lines) if "raise RuntimeError(" in x) + 1]) + "\n"
    ray_cluster.head.log("cut-rank2.log").write_text(cut)
    (tmp_path / "cut-rank2.log").write_text(cut)
    cuts = []
    for where in (f"{ADDRESS}/cut-*.log", str(tmp_path / "cut-rank2.log")):
        done = subprocess.run(
            [sys.executable, "-m", "sparktui", "diagnose", "--json", where],
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "PYTHONPATH": str(ROOT), "RAY_USAGE_STATS_ENABLED": "0"},
        )
        assert done.stdout, done.stderr[-4000:]
        cuts.append([f["facts"].get("cut", "") for f in json.loads(done.stdout)["findings"]])
    assert cuts[0] == cuts[1] and cuts[0][0].endswith("scenario.py:266 in fail")
