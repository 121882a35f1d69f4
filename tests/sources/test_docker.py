"""Docker sources against a real engine: containers print real captured logs while the tests restart,
kill, remove and recreate them and cut the connection to the engine; the lines received must equal the
lines written, none lost and none doubled, and every fault must show as a state change."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path
from types import TracebackType
from typing import Any

import pytest

from sparktui.core.analysis.analyzer import Analyzer
from sparktui.core.catalogue import Catalogue
from sparktui.core.errors import Refused, Unavailable
from sparktui.core.events import State, StateChange
from sparktui.core.inventory.containers import discover_containers
from sparktui.core.pipeline import diagnose_files
from sparktui.core.sources.base import Backoff, LiveSource, Received, supervise
from sparktui.core.sources.docker import MARGIN, DockerSource, LogReader, Resume, nanoseconds
from sparktui.core.sources.files import FileSource
from sparktui.core.text import decode
from tests.conftest import FIXTURES
from tests.servers.dockerd import Containers, DockerEngine, log_lines
from tests.servers.sshd import SshdCluster
from tests.waiting import until

RAY_BACKEND = "vllm/ray-backend-without-ray/server.log"
PORT_IN_USE = "vllm/port-in-use/server.log"


class Watch:
    """Runs a source under :func:`supervise` (with a quick back-off) and records what it delivers and
    reports, so a test can wait for a condition."""

    def __init__(self, source: LiveSource) -> None:
        self.source = source
        self.lines: list[str] = []
        self.states: list[StateChange] = []
        self._task: asyncio.Task[None] | None = None

    async def _deliver(self, name: str, received: Received) -> None:
        self.lines += received.lines

    def _report(self, change: StateChange) -> None:
        self.states.append(change)

    def retries(self) -> list[str]:
        """The reasons of the retries, without the supervisor's "; retrying in N s"."""
        return [s.detail.rsplit("; retrying in ", 1)[0] for s in self.states if s.state is State.RETRYING]

    def kinds(self) -> list[State]:
        return [s.state for s in self.states]

    async def until(self, condition: Callable[[], object], what: str, timeout: float = 30.0) -> None:
        """:func:`~tests.waiting.until`, failing at once if the supervisor ends, and saying what came."""

        def held() -> object:
            value = condition()
            assert value or (self._task is not None and not self._task.done()), f"supervisor ended: {self.states}"
            return value

        try:
            await until(held, timeout, what)
        except AssertionError as exc:
            raise AssertionError(f"{exc}; {len(self.lines)} lines; states: {self.states}") from None

    async def lines_reach(self, count: int) -> None:
        await self.until(lambda: len(self.lines) >= count, f"{count} lines")

    async def retry_with(self, text: str) -> str:
        await self.until(lambda: any(text in r for r in self.retries()), f"a retry saying {text!r}")
        return next(r for r in self.retries() if text in r)

    async def __aenter__(self) -> Watch:
        backoff = Backoff(first=0.05, limit=0.5)
        self._task = asyncio.create_task(supervise(self.source, self._deliver, self._report, backoff))
        return self

    async def __aexit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        assert self._task is not None
        self._task.cancel()
        with suppress(asyncio.CancelledError):
            await self._task


class SocketProxy:
    """A unix socket in front of the engine's (as an SSH-forwarded socket would be) whose connections
    the test can cut."""

    def __init__(self, target: str, path: Path) -> None:
        self.target = target.removeprefix("unix://")
        self.path = path
        self._writers: set[asyncio.StreamWriter] = set()
        self._links: set[asyncio.Future[Any]] = set()

    async def __aenter__(self) -> SocketProxy:
        self._server = await asyncio.start_unix_server(self._serve, path=str(self.path))
        return self

    async def __aexit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self._server.close()
        self.cut()
        await asyncio.gather(*self._links, return_exceptions=True)

    def cut(self) -> int:
        """Drop every open connection; returns how many there were."""
        for writer in self._writers:
            writer.transport.abort()
        count = len(self._writers)
        self._writers.clear()
        return count

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_unix_connection(self.target)
        self._writers |= {writer, up_writer}
        link = asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer), return_exceptions=True)
        self._links.add(link)
        await link


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    while data := await reader.read(1 << 16):
        writer.write(data)
        await writer.drain()
    writer.close()


def recorded(engine: DockerEngine, name: str) -> list[str]:
    """The container's log as the engine recorded it."""
    text = decode(engine.client.api.logs(name, stdout=True, stderr=True))
    return [line.rstrip("\r") for line in text.removesuffix("\n").split("\n")]


def assert_written(lines: list[str], engine: DockerEngine, name: str, written: list[str]) -> None:
    """The lines received are the lines written, none lost and none doubled, in the order the engine
    recorded them: the writer puts every third line on stderr, and under load the engine's stdout and
    stderr copiers may stamp two neighbouring lines of different streams in either order."""
    assert Counter(lines) == Counter(written)
    assert lines == recorded(engine, name)


# -- the reader alone: resume points, stamps shared by several lines, long lines in parts -------------


def _msg(second: int, nanos: int, text: str) -> bytes:
    return f"2026-11-30T05:12:{second:02d}.{nanos:09d}Z {text}".encode()


def _epoch(second: int) -> int:
    return nanoseconds(f"2026-11-30T05:12:{second:02d}Z".encode()) // 10**9


def _read(messages: list[bytes], resume: Resume) -> tuple[list[str], Resume]:
    """What a reader makes of what the engine sends for ``resume``: the messages stamped at or after
    ``since``."""
    reader = LogReader(resume)
    sent = [m for m in messages if nanoseconds(m.partition(b" ")[0]) >= resume.since * 10**9]
    lines = [line for m in sent for line in reader.feed(m)]
    return lines, Resume.decode(reader.cursor())


def test_resume_skips_exactly_the_lines_delivered_when_they_share_a_stamp() -> None:
    same = [_msg(10, 5, f"line {i}\n") for i in range(5)]
    first, cursor = _read(same[:3], Resume("c1"))
    assert first == ["line 0", "line 1", "line 2"]
    assert (cursor.container, cursor.skip) == ("c1", 3)
    rest, _ = _read(same, cursor)
    assert rest == ["line 3", "line 4"]


def test_a_long_line_cut_by_the_other_stream_loses_nothing_across_a_resume() -> None:
    # As the engine sends a 40 000-byte stdout line with a stderr line in between (measured): every
    # part carries the stamp of the first part, older than the stderr line's.
    part = "a" * 16384
    sent = [_msg(10, 1, part), _msg(10, 2, "err\n"), _msg(10, 1, part), _msg(10, 1, "tail\n")]
    lines, _ = _read(sent, Resume("c1"))
    assert lines == [part, "err", part + "tail"]
    delivered, cursor = _read(sent[:2], Resume("c1"))
    assert delivered == [part, "err"]
    rest, _ = _read(sent, cursor)
    assert rest == [part + "tail"]


def test_resume_point_trails_the_newest_line_and_waits_for_unfinished_parts() -> None:
    lines, cursor = _read([_msg(s, 0, f"at {s}\n") for s in range(10, 20)], Resume("c1"))
    assert len(lines) == 10
    assert cursor.since == _epoch(19) - MARGIN // 10**9
    assert cursor.skip == 3  # the lines of seconds 17, 18 and 19
    rest, _ = _read([_msg(s, 0, f"at {s}\n") for s in range(10, 21)], cursor)
    assert rest == ["at 20"]
    held = [_msg(10, 0, "a line still being written"), *(_msg(s, 0, f"at {s}\n") for s in range(11, 20))]
    lines, cursor = _read(held, Resume("c1"))
    assert lines[0] == "a line still being written"
    assert cursor.since == _epoch(10)  # its next part will carry the stamp of second 10


# -- against the engine ---------------------------------------------------------------------------


async def test_follows_stdout_and_stderr(docker_engine: DockerEngine, docker_containers: Containers) -> None:
    name = docker_containers.create(log=RAY_BACKEND)
    async with Watch(DockerSource(name, base_url=docker_engine.base_url)) as watch:
        await watch.lines_reach(55)
    assert_written(watch.lines, docker_engine, name, log_lines(FIXTURES / RAY_BACKEND))
    assert watch.kinds() == [State.CONNECTING, State.STREAMING]
    assert watch.states[0].source == f"docker://{name}"


async def test_container_logs_give_the_same_diagnosis_as_the_file(
    docker_engine: DockerEngine, docker_containers: Containers, catalogue: Catalogue
) -> None:
    name = docker_containers.create(log=RAY_BACKEND)
    source = DockerSource(name, base_url=docker_engine.base_url, node="spark-a")
    analyzer = Analyzer(catalogue)
    analyzer.add_source(source.name, source.node)
    async with Watch(source) as watch:
        await watch.lines_reach(len(log_lines(FIXTURES / RAY_BACKEND)))
    analyzer.feed(source.name, "\n".join(watch.lines))
    live = analyzer.finish().findings
    from_file = diagnose_files([FileSource(FIXTURES / RAY_BACKEND, "server.log", "spark-a")], catalogue).findings
    assert live and live[0].signature == from_file[0].signature == "vllm-ray-not-installed"
    assert {f.signature for f in live} == {f.signature for f in from_file}


async def test_cut_connection_resumes_without_loss_or_doubles(
    docker_engine: DockerEngine, docker_containers: Containers, tmp_path: Path
) -> None:
    if not docker_engine.base_url.startswith("unix://"):
        pytest.fail(f"the engine must listen on a unix socket for this test, not {docker_engine.base_url}")
    name = docker_containers.create(log=RAY_BACKEND, env={"PAUSE_AT": "20"})
    async with (
        SocketProxy(docker_engine.base_url, tmp_path / "forwarded.sock") as proxy,
        Watch(DockerSource(name, base_url=f"unix://{proxy.path}")) as watch,
    ):
        await watch.lines_reach(20)
        assert proxy.cut() >= 2  # the log stream, both ends
        reason = await watch.retry_with("closed the log stream")
        docker_containers.go()
        await watch.lines_reach(55)
    assert reason == f"the Docker engine at unix://{proxy.path} closed the log stream of container {name}"
    assert_written(watch.lines, docker_engine, name, log_lines(FIXTURES / RAY_BACKEND))
    assert watch.kinds()[-3:] == [State.RETRYING, State.CONNECTING, State.STREAMING]


async def test_through_a_socket_forwarded_over_ssh(
    docker_engine: DockerEngine, docker_containers: Containers, sshd_cluster: SshdCluster
) -> None:
    if not docker_engine.base_url.startswith("unix://"):
        pytest.fail(f"the engine must listen on a unix socket for this test, not {docker_engine.base_url}")
    name = docker_containers.create(log=RAY_BACKEND, env={"PAUSE_AT": "20"})
    node = sshd_cluster.node("node-a")
    try:
        forwarded = await node.forward_unix(docker_engine.base_url.removeprefix("unix://"))
        source = DockerSource(name, base_url=f"unix://{forwarded}", name=f"ssh://node-a/docker/{name}", node="node-a")
        async with Watch(source) as watch:
            await watch.lines_reach(20)
            assert sshd_cluster["node-a"].kill_connections() > 0  # the SSH connection under the socket drops
            await watch.until(
                lambda: len(watch.retries()) >= 1 and watch.kinds()[-1] is State.STREAMING,
                "streaming again after a retry when the connection dropped",
            )  # a restart before the stream is attached again would not end that stream
            await asyncio.to_thread(docker_engine.client.api.restart, name, timeout=0)
            await watch.retry_with("137")
            await watch.lines_reach(55)
    finally:
        await node.close()
    assert_written(watch.lines, docker_engine, name, log_lines(FIXTURES / RAY_BACKEND))
    assert watch.kinds()[-1] is State.STREAMING


async def test_restart_mid_stream_continues_without_loss_or_doubles(
    docker_engine: DockerEngine, docker_containers: Containers
) -> None:
    name = docker_containers.create(log=RAY_BACKEND, env={"PAUSE_AT": "20"})
    async with Watch(DockerSource(name, base_url=docker_engine.base_url)) as watch:
        await watch.lines_reach(20)
        await asyncio.to_thread(docker_engine.client.api.restart, name, timeout=0)
        await watch.lines_reach(55)
        reason = await watch.retry_with("137")
    assert reason in (
        f"container {name} exited with code 137",
        f"container {name} restarted after exiting with code 137",
    )
    assert_written(watch.lines, docker_engine, name, log_lines(FIXTURES / RAY_BACKEND))
    assert len(watch.retries()) == 1


async def test_exit_is_reported_once_and_a_start_continues(
    docker_engine: DockerEngine, docker_containers: Containers
) -> None:
    name = docker_containers.create(log=RAY_BACKEND, env={"EXIT_AT": "20", "EXIT_CODE": "3"})
    async with Watch(DockerSource(name, base_url=docker_engine.base_url)) as watch:
        reason = await watch.retry_with("exited")
        assert_written(watch.lines, docker_engine, name, log_lines(FIXTURES / RAY_BACKEND)[:20])
        # connecting again after the exit (a state it may leave at once: looked for in the record, not as the last)
        await watch.until(lambda: watch.kinds().count(State.CONNECTING) >= 2, "waiting for the container")
        await asyncio.to_thread(docker_engine.client.api.start, name)
        await watch.lines_reach(55)
    assert reason == f"container {name} exited with code 3"
    assert_written(watch.lines, docker_engine, name, log_lines(FIXTURES / RAY_BACKEND))
    assert watch.retries() == [reason]


async def test_oom_kill_is_reported(docker_engine: DockerEngine, docker_containers: Containers) -> None:
    name = docker_containers.create(log=RAY_BACKEND, env={"OOM_AT": "10"}, memory="32m")
    async with Watch(DockerSource(name, base_url=docker_engine.base_url)) as watch:
        reason = await watch.retry_with("exited")
    assert reason == f"container {name} exited with code 137 (OOM killed)"
    assert_written(watch.lines, docker_engine, name, log_lines(FIXTURES / RAY_BACKEND)[:10])


async def test_recreated_container_is_read_from_its_beginning(
    docker_engine: DockerEngine, docker_containers: Containers
) -> None:
    api = docker_engine.client.api
    name = docker_containers.create(log=RAY_BACKEND)
    first, second = log_lines(FIXTURES / RAY_BACKEND), log_lines(FIXTURES / PORT_IN_USE)
    async with Watch(DockerSource(name, base_url=docker_engine.base_url)) as watch:
        await watch.lines_reach(len(first))
        await asyncio.to_thread(api.stop, name, timeout=0)
        stopped = await watch.retry_with("exited")
        first_recorded = recorded(docker_engine, name)
        await asyncio.to_thread(api.remove_container, name)
        missing = await watch.retry_with("no container")
        docker_containers.create(name=name, log=PORT_IN_USE)
        await watch.lines_reach(len(first) + len(second))
    assert stopped == f"container {name} exited with code 137"
    assert missing == f"no container named {name} on the Docker engine at {docker_engine.base_url}"
    assert Counter(watch.lines) == Counter(first + second)
    assert watch.lines == first_recorded + recorded(docker_engine, name)


async def test_terminal_container_and_long_lines(docker_engine: DockerEngine, docker_containers: Containers) -> None:
    terminal = docker_containers.create(log=RAY_BACKEND, tty=True)
    async with Watch(DockerSource(terminal, base_url=docker_engine.base_url)) as watch:
        await watch.lines_reach(55)
    assert watch.lines == log_lines(FIXTURES / RAY_BACKEND)  # one terminal for both streams; its CRLF removed
    long_line = ["/bin/sh", "-c", "head -c 40000 /dev/zero | tr '\\0' a; echo; echo done; sleep 1000000"]
    for tty in (False, True):
        name = docker_containers.create(long_line, tty=tty)
        async with Watch(DockerSource(name, base_url=docker_engine.base_url)) as watch:
            await watch.lines_reach(2)
        assert watch.lines == ["a" * 40000, "done"], f"tty={tty}"  # the engine's 16 KiB parts joined


async def test_missing_container_and_unreachable_engine(docker_engine: DockerEngine, tmp_path: Path) -> None:
    source = DockerSource("sparktui-test-nowhere", base_url=docker_engine.base_url)
    with pytest.raises(Unavailable) as missing:
        await anext(source.stream(None))
    assert (
        str(missing.value)
        == f"no container named sparktui-test-nowhere on the Docker engine at {docker_engine.base_url}"
    )
    gone = f"unix://{tmp_path}/no-engine.sock"
    with pytest.raises(Unavailable) as unreachable:
        await anext(DockerSource("vllm", base_url=gone).stream(None))
    assert str(unreachable.value) == f"cannot reach the Docker engine at {gone}: No such file or directory"
    with pytest.raises(Unavailable) as listing:
        await asyncio.to_thread(discover_containers, gone)
    assert str(listing.value) == str(unreachable.value)


async def test_discovers_engine_and_ray_containers(docker_engine: DockerEngine, docker_containers: Containers) -> None:
    expected = {
        docker_containers.create(["vllm", "serve", "Qwen/Qwen2.5-0.5B", "--tensor-parallel-size", "2"]): "vllm",
        docker_containers.create(["python3", "-m", "vllm.entrypoints.openai.api_server", "--model", "m"]): "vllm",
        docker_containers.create(["python3", "-m", "sglang.launch_server", "--model-path", "m"]): "sglang",
        docker_containers.create(["ray", "start", "--head", "--port=6379", "--block"]): "ray-head",
        docker_containers.create(["ray", "start", "--address=10.0.0.1:6379", "--block"]): "ray-worker",
        docker_containers.create(["sleep", "1000000"], image="rayproject/ray:sparktui-test"): "ray",
    }
    docker_containers.create(["sleep", "1000000"])  # runs nothing of interest
    docker_containers.create(["vllm", "serve", "m"], start=False)  # not running
    found = await asyncio.to_thread(discover_containers, docker_engine.base_url)
    ours = {c.name: c for c in found if c.name in docker_containers.names}
    assert {name: c.role for name, c in ours.items()} == expected
    head = next(c for c in ours.values() if c.role == "ray-head")
    assert head.command == "ray start --head --port=6379 --block"
    assert head.image == "sparktui-test/busybox:1" and len(head.id) == 64


async def test_read_once_gives_what_was_written_and_ends(
    docker_engine: DockerEngine, docker_containers: Containers
) -> None:
    """Read once (``diagnose --edge`` on a node): what the container wrote until now, then the end; from a
    cursor on, only what came after it; a container that does not exist is refused, not waited for."""
    name = docker_containers.create(log=RAY_BACKEND)
    written = len(log_lines(FIXTURES / RAY_BACKEND))
    async with Watch(DockerSource(name, base_url=docker_engine.base_url)) as watch:
        await watch.lines_reach(written)
    once = DockerSource(name, base_url=docker_engine.base_url, follow=False)
    assert once.finite
    got = [r async for r in once.stream(None)]
    lines = [line for r in got for line in r.lines]
    assert lines == watch.lines[:written]
    first = next(r for r in got if r.lines)
    later = DockerSource(name, base_url=docker_engine.base_url, follow=False, start=first.cursor)
    rest = [line async for r in later.stream(None) for line in r.lines]
    assert rest == lines[len(first.lines) :]
    missing = DockerSource("sparktui-test-nowhere", base_url=docker_engine.base_url, follow=False)
    with pytest.raises(Refused, match="no container named sparktui-test-nowhere"):
        _ = [r async for r in missing.stream(None)]
