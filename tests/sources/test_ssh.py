"""SSH sources against real OpenSSH servers on loopback (started by ``sshd_cluster``): every line written
arrives once, in order, across killed connections, a restarted sshd, a silent link, rotation and
truncation; bad hosts, keys and addresses fail with one clear line."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from sparktui.core.analysis.analyzer import Analyzer
from sparktui.core.catalogue import Catalogue
from sparktui.core.errors import Refused, Unavailable
from sparktui.core.events import SourceNote, State, StateChange
from sparktui.core.sources.base import Backoff, LiveSource, Received, supervise
from sparktui.core.sources.files import FileSource
from sparktui.core.sources.open import SshUri, parse_ssh_uri
from sparktui.core.sources.rotation import FilePosition, fingerprint, identity
from sparktui.core.sources.ssh import Emptied, SshFileSource, SshJournalSource, _TailReader, ray_session_sources
from tests.servers.sshd import SshdCluster, children, command_line

from ..conftest import FIXTURES
from ..waiting import until

NCCL = FIXTURES / "nccl" / "two-hosts-second-group-not-joined"
RAY = FIXTURES / "ray" / "head-start" / "head-session"


class Watch:
    """Runs a source under :func:`supervise` and records what it delivers and reports."""

    def __init__(self, source: LiveSource) -> None:
        self.source = source
        self.lines: list[str] = []
        self.states: list[StateChange] = []
        self.notes: list[str] = []
        self.task = asyncio.create_task(supervise(source, self.deliver, self.report, Backoff(0.05, 0.3)))

    def report(self, change: StateChange | SourceNote) -> None:
        if isinstance(change, SourceNote):
            self.notes.append(change.text)
        else:
            self.states.append(change)

    async def deliver(self, name: str, received: Received) -> None:
        assert name == self.source.name
        self.lines.extend(received.lines)

    def kinds(self) -> list[State]:
        return [s.state for s in self.states]

    async def until(self, condition: Callable[[], object], what: str, timeout: float = 30.0) -> None:
        """:func:`~tests.waiting.until`, failing at once if the supervisor ends, and saying what came."""

        def held() -> object:
            value = condition()
            if not value and self.task.done():
                self.task.result()
                raise AssertionError(f"{what}: the supervisor ended ({self.states})")
            return value

        try:
            await until(held, timeout, what)
        except AssertionError as exc:
            raise AssertionError(f"{exc}; got {len(self.lines)} lines, {self.states}") from None

    async def stop(self) -> None:
        self.task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self.task


def followers_of(path: Path) -> list[int]:
    """Remote commands still running for ``path`` on any test node (there must be none left behind)."""
    return [pid for pid in children(0) if str(path) in command_line(pid) and "tail" in command_line(pid)]


async def write_lines(path: Path, lines: list[str], pause: float = 0.004) -> None:
    """Append lines over time, each in two writes so the reader sees partial lines."""
    with path.open("ab", buffering=0) as fh:
        for line in lines:
            data = line.encode() + b"\n"
            fh.write(data[: len(data) // 2])
            await asyncio.sleep(pause)
            fh.write(data[len(data) // 2 :])


# -- following a file ----------------------------------------------------------------------------------


async def test_killed_connection_and_restarted_sshd_lose_and_double_nothing(
    cluster: SshdCluster, tmp_path: Path
) -> None:
    path = tmp_path / "node.log"
    path.write_bytes(b"already there 1\r\nalready there 2\n")
    expected = ["already there 1", "already there 2"] + [f"line {i:04d} é" for i in range(300)] + ["END"]
    watch = Watch(SshFileSource(cluster.node("node-a"), str(path)))
    writer = asyncio.create_task(write_lines(path, expected[2:]))
    await watch.until(lambda: len(watch.lines) > 80, "the first lines")
    assert cluster["node-a"].kill_connections() >= 1
    await watch.until(lambda: len(watch.lines) > 150 and watch.kinds().count(State.STREAMING) == 2, "a resumed stream")
    await asyncio.to_thread(cluster["node-a"].restart)
    await writer
    await watch.until(lambda: watch.lines[-1:] == ["END"], "the last line")
    await watch.until(lambda: watch.kinds().count(State.STREAMING) == 3, "streaming after the restart")
    assert watch.lines == expected
    kinds = watch.kinds()
    assert kinds[:2] == [State.CONNECTING, State.STREAMING] and kinds[-1] == State.STREAMING
    assert kinds.count(State.RETRYING) >= 2 and State.FAILED not in kinds
    assert all("node-a" in s.detail for s in watch.states if s.state == State.RETRYING)
    await watch.stop()
    await until(lambda: not followers_of(path), 30, "the remote tail to end")


async def test_silent_connection_is_found_by_keepalives(cluster: SshdCluster, tmp_path: Path) -> None:
    path = tmp_path / "quiet.log"
    path.write_text("")
    watch = Watch(SshFileSource(cluster.node("node-a", keepalive_interval=0.3), str(path)))
    await watch.until(lambda: State.STREAMING in watch.kinds(), "streaming")
    frozen = cluster["node-a"].freeze_connections()
    try:
        await write_lines(path, ["during the silence"])
        await watch.until(lambda: watch.lines == ["during the silence"], "the line after the keepalive gave up")
        assert "keepalive" in next(s.detail for s in watch.states if s.state == State.RETRYING)
    finally:
        for pid in frozen:
            os.kill(pid, 9)
    await watch.stop()


async def test_rotation_and_truncation_move_the_cursor_to_the_new_file(cluster: SshdCluster, tmp_path: Path) -> None:
    path = tmp_path / "rotated.log"
    path.write_text("old 1\nold 2\n")
    source = SshFileSource(cluster.node("node-a"), str(path))
    got: list[str] = []
    notes: list[str] = []
    cursors: list[FilePosition] = []

    async def read(cursor: int | float | str | None) -> None:
        async for received in source.stream(cursor):
            got.extend(received.lines)
            cursors.append(FilePosition.of(received.cursor))
            notes.extend([received.note] if received.note else [])

    reading = asyncio.create_task(read(None))
    await until(lambda: got == ["old 1", "old 2"], 30, "the first lines")
    first = os.stat(path)
    assert cursors[-1] == FilePosition(12, f"{first.st_dev}:{first.st_ino}", 12, fingerprint(path.read_bytes()))
    path.rename(tmp_path / "rotated.log.1")  # logrotate's create mode
    path.write_text("new 1\npartial")
    await until(lambda: got[2:] == ["new 1"], 30, "the replaced file")
    assert cursors[-1].offset == len("new 1\n") and cursors[-1].file == identity(os.stat(path))
    with path.open("a") as fh:
        fh.write(" end\n")
    await until(lambda: got[3:] == ["partial end"], 30, "the rest of the partial line")
    path.write_bytes(b"")  # copytruncate: the file is emptied in place
    await until(lambda: cursors[-1].offset == 0, 30, "the truncation")
    path.write_text("after truncation\n")
    await until(lambda: got[4:] == ["after truncation"], 30, "the line after the truncation")
    reading.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await reading
    resume = cursors[-1]
    assert resume.offset == len("after truncation\n") and resume.digest == fingerprint(b"after truncation\n")
    path.write_text("after truncation\nwhile away\n")  # rewritten in place, the same first bytes: the same file
    reading = asyncio.create_task(read(resume.cursor))
    await until(lambda: got[5:] == ["while away"], 30, "the line written while away")
    reading.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await reading
    path.write_text("short\n")  # truncated while away and now shorter than the cursor: read from its start
    reading = asyncio.create_task(read(cursors[-1].cursor))
    await until(lambda: got[6:] == ["short"], 30, "the file read again from its start")
    assert notes == [
        f"lines may be lost: {path} was emptied in place while it was followed, and no copy of it was found"
        " (copytruncate's, by its first bytes); what was written after byte 18 in the last 50 ms before it, if"
        " anything, was not read",  # tail saw the file emptied, and the node has no copy of it
        f"lines lost: while {path} was not followed, it was emptied or replaced, and its old content is nowhere "
        "to be found; an unknown number of bytes after byte 28 were not read",
    ]
    reading.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await reading
    reading = asyncio.create_task(read(len("short\n")))  # a plain offset, as cursors were: the file at the path
    path.write_text("short\nplain\n")
    await until(lambda: got[7:] == ["plain"], 30, "the line after the plain offset")
    reading.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await reading
    assert got == ["old 1", "old 2", "new 1", "partial end", "after truncation", "while away", "short", "plain"]


@pytest.mark.parametrize("piece", [1, 7, 1000])
def test_follower_output_split_anywhere(piece: int) -> None:
    """What the remote follower says may be cut anywhere: every line, file switch, notice and gap is still
    found, in order, and the position follows the file being read."""
    empty = fingerprint(b"")
    data = (
        b"M-1 file 1:2 10 10 0123456789abcdef\n"
        b"a\r\nb\npart"
        + f"M-1 file 1:3 0 0 {empty}\n".encode()
        + b"new\nx"
        + b"M-1: cannot open '/f' for reading: No such file or directory\n"
        + b"y\nM-2 is not the marker\n"
        + b"M-1: /dev/fd/3: file truncated\n"
        + b"again\n"
        + b"M-1 gap gone - 6\n"
        + f"M-1 file 1:4 0 0 {empty}\n".encode()
        + b"last\n"
    )
    reader = _TailReader(b"M-1", "/f", FilePosition(10, "1:2", 10, "0123456789abcdef"))
    fed = [batch for at in range(0, len(data), piece) for batch in reader.feed(data[at : at + piece])]
    (emptied,) = [b for b in fed if isinstance(b, Emptied)]  # its copy is looked for on the node
    assert emptied.at == FilePosition(29, "1:3", 29, fingerprint(b"new\nxy\nM-2 is not the marker\n"))
    assert FilePosition.of(emptied.cursor) == FilePosition(0, "1:3", 0, empty)
    batches = [b for b in fed if isinstance(b, Received)]
    lines = [line for batch in batches for line in batch.lines]
    assert lines == ["a", "b", "part", "new", "xy", "M-2 is not the marker", "again", "last"]
    (gap,) = [b for b in batches if b.note]
    assert gap.note.startswith("lines lost: while /f was not followed, it was rotated and the old file is gone")
    assert "after byte 6 " in gap.note
    assert lines[: lines.index("again") + 1] == [line for b in batches[: batches.index(gap) + 1] for line in b.lines]
    assert FilePosition.of(gap.cursor) == FilePosition(len(b"again\n"), "1:3", 6, fingerprint(b"again\n"))
    assert FilePosition.of(batches[-1].cursor) == FilePosition(5, "1:4", 5, fingerprint(b"last\n"))
    assert reader.notice == "/dev/fd/3: file truncated"


async def test_file_that_appears_later_and_odd_names(cluster: SshdCluster, tmp_path: Path) -> None:
    path = tmp_path / "it's a $(name) with spaces; rm -rf ~.log"
    watch = Watch(SshFileSource(cluster.node("node-a"), str(path)))
    await watch.until(lambda: State.STREAMING in watch.kinds(), "streaming before the file exists")
    path.write_bytes(b"\x1b[31mred\x1b[0m \xff bytes\r\nsecond\n")
    await watch.until(lambda: len(watch.lines) == 2, "the file's lines")
    assert watch.lines == ["red \ufffd bytes", "second"]
    await watch.stop()


# -- refusals and unreachable nodes --------------------------------------------------------------------


async def test_unreachable_host_is_retried(cluster: SshdCluster) -> None:
    watch = Watch(SshFileSource(cluster.node("down"), "/var/log/syslog"))
    await watch.until(lambda: watch.kinds().count(State.RETRYING) >= 3, "three retries")
    await watch.stop()
    retry = next(s for s in watch.states if s.state == State.RETRYING)
    assert retry.detail.startswith("down: cannot connect to down: Connection refused; retrying in ")
    assert State.STREAMING not in watch.kinds()


async def refused(source: LiveSource) -> list[StateChange]:
    """Run ``source`` under the supervisor and return its states; it must fail without any retry."""
    states: list[StateChange] = []

    async def no_sleep(delay: float) -> None:
        raise AssertionError("a refused source was retried")

    async def deliver(name: str, received: Received) -> None:
        raise AssertionError("a refused source delivered lines")

    await asyncio.wait_for(supervise(source, deliver, states.append, sleep=no_sleep), 30)
    assert [s.state for s in states] == [State.CONNECTING, State.FAILED]
    assert "\n" not in states[-1].detail
    return states


async def test_refused_key_fails_without_retry(cluster: SshdCluster) -> None:
    states = await refused(SshFileSource(cluster.node("node-a-refused"), "/etc/hostname"))
    assert states[-1].detail.startswith("node-a-refused: authentication refused")


async def test_changed_host_key_fails_even_when_trusting_new_keys(cluster: SshdCluster, tmp_path: Path) -> None:
    known = tmp_path / "known_hosts"
    known.write_text(cluster.known_hosts_line("node-a", key_of="node-b"))
    for trust in (False, True):
        node = cluster.node("node-a", known_hosts=known, trust_new_host_key=trust)
        states = await refused(SshFileSource(node, "/etc/hostname"))
        a = cluster["node-a"]
        assert f"the host key of [{a.address}]:{a.port} has CHANGED" in states[-1].detail
        assert "ssh-keygen -R" in states[-1].detail
    assert known.read_text() == cluster.known_hosts_line("node-a", key_of="node-b")


async def test_unknown_host_key_is_refused_until_trusted_explicitly(
    cluster: SshdCluster, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    known = tmp_path / "ssh" / "known_hosts"
    states = await refused(SshFileSource(cluster.node("node-b", known_hosts=known), "/etc/hostname"))
    b = cluster["node-b"]
    assert f"the host key of [{b.address}]:{b.port} (SHA256:" in states[-1].detail
    assert "ssh-keyscan" in states[-1].detail and not known.exists()
    with caplog.at_level(logging.WARNING):
        await cluster.node("node-b", known_hosts=known, trust_new_host_key=True).run("true", "trust")
    assert known.read_text() == cluster.known_hosts_line("node-b")
    assert oct(known.stat().st_mode & 0o777) == "0o600"
    assert "trusted the new host key" in caplog.text
    assert await cluster.node("node-b", known_hosts=known).run("echo ok", "again") == b"ok\n"


async def test_missing_command_is_refused(cluster: SshdCluster) -> None:
    node = cluster.node("node-a")
    with pytest.raises(Refused, match=r"^probe: cannot run the command on node-a: .*not-a-command.*not found"):
        await node.run("not-a-command", "probe")
    with pytest.raises(Unavailable, match=r"^probe: the command on node-a ended \(exit 3\)$"):
        await node.run("sh -c 'exit 3'", "probe")


# -- ProxyJump and the agent ---------------------------------------------------------------------------


async def test_proxy_jump_carries_the_stream(cluster: SshdCluster, tmp_path: Path) -> None:
    path = tmp_path / "behind.log"
    expected = [f"behind {i}" for i in range(60)]
    watch = Watch(SshFileSource(cluster.node("node-b-via-a"), str(path)))
    await watch.until(lambda: State.STREAMING in watch.kinds(), "streaming")
    await write_lines(path, expected[:30])
    await watch.until(lambda: len(watch.lines) == 30, "the first half")
    assert cluster["node-a"].kill_connections() >= 1  # cutting the jump host cuts the stream behind it
    writer = asyncio.create_task(write_lines(path, expected[30:]))
    await watch.until(lambda: watch.kinds().count(State.STREAMING) == 2, "a stream through a new jump")
    await writer
    await watch.until(lambda: len(watch.lines) >= len(expected), "every line")
    assert watch.lines == expected and State.RETRYING in watch.kinds()
    await watch.stop()


async def test_agent_supplies_the_key(cluster: SshdCluster, tmp_path: Path) -> None:
    sock = tmp_path / "agent.sock"
    agent = subprocess.Popen(["ssh-agent", "-D", "-a", str(sock)], stdout=subprocess.DEVNULL)
    try:
        await until(sock.exists, 30, "the agent")
        env = {**os.environ, "SSH_AUTH_SOCK": str(sock)}
        subprocess.run(["ssh-add", "-q", str(cluster.user_key)], env=env, check=True)
        node = cluster.node("node-a-refused", agent=str(sock))  # its IdentityFile is refused; the agent's key is not
        assert await node.run("echo agent", "agent") == b"agent\n"
    finally:
        agent.terminate()
        agent.wait()


# -- journal, Ray, Docker ------------------------------------------------------------------------------


async def test_journal_resumes_after_its_cursor(cluster: SshdCluster) -> None:
    unit = f"sparktui-test-{os.getpid()}.service"
    journal = cluster.journal
    journal.write(unit, b"before start")
    journal.write("other.service", b"not ours")
    journal.write(unit, b"two\nlines")
    journal.write(unit, b"bad \xff byte")
    watch = Watch(SshJournalSource(cluster.node("node-b"), unit))
    await watch.until(lambda: len(watch.lines) >= 4, "the entries written before")
    for i in range(40):
        journal.write(unit, f"entry {i}".encode())
        if i == 15:
            await watch.until(lambda: len(watch.lines) > 12, "some entries")
            cluster["node-b"].kill_connections()
        await asyncio.sleep(0.01)
    await watch.until(lambda: watch.lines[-1:] == ["entry 39"], "the last entry")
    assert watch.lines == ["before start", "two", "lines", "bad \ufffd byte"] + [f"entry {i}" for i in range(40)]
    assert State.RETRYING in watch.kinds()
    await watch.stop()


async def test_ray_session_logs_are_followed_over_one_node(cluster: SshdCluster, tmp_path: Path) -> None:
    logs = tmp_path / "session_latest" / "logs"
    (logs / "events").mkdir(parents=True)
    for real in RAY.iterdir():
        (logs / real.name).write_bytes(real.read_bytes())
    made = ["raylet.err", "gcs_server.err", "monitor.out", "monitor.err", "python-core-driver-01000000ffff_4242.log"]
    made += [f"worker-{w:040x}-01000000-{3000 + w}.{s}" for w in range(2) for s in ("out", "err")]
    made += [f"python-core-worker-{w:040x}_{3000 + w}.log" for w in range(2)]
    for name in made:
        (logs / name).write_text(f"{name} first\n")
    for ignored in ("debug_state.txt", "raylet.out.1", "events/event_GCS.log"):
        (logs / ignored).write_text("not followed\n")
    node = cluster.node("node-a")
    sources = await ray_session_sources(node, str(logs))
    followed = sorted({"dashboard.log", "dashboard_agent.log", "gcs_server.out", "monitor.log", "raylet.out", *made})
    assert [s.name for s in sources] == [f"node-a:ray/{name}" for name in followed]
    assert all(s.node == "node-a" and s.path == f"{logs}/{s.name.removeprefix('node-a:ray/')}" for s in sources)
    watches = [Watch(s) for s in sources]  # more streams than sshd's MaxSessions (10) on one node
    for name in made:
        with (logs / name).open("a") as fh:
            fh.write(f"{name} second\n")
    for watch, name in zip(watches, followed, strict=True):
        expected = (logs / name).read_text().splitlines()
        await watch.until(lambda w=watch, e=expected: w.lines == e, f"all of {name}")
    for watch in watches:
        await watch.stop()
    with pytest.raises(Unavailable, match=r"^node-a:ray: the command on node-a ended \(exit 1\): find: "):
        await ray_session_sources(node, str(tmp_path / "no-session"))


async def test_docker_socket_forward_survives_a_reconnect(cluster: SshdCluster, tmp_path: Path) -> None:
    remote = tmp_path / "engine.sock"

    async def engine(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        request = await reader.readline()
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nOK" if request.startswith(b"GET /_ping") else b"")
        await writer.drain()
        writer.close()

    server = await asyncio.start_unix_server(engine, str(remote))
    node = cluster.node("node-a")

    async def ping(path: str) -> bytes:
        reader, writer = await asyncio.open_unix_connection(path)
        writer.write(b"GET /_ping HTTP/1.1\r\nHost: docker\r\n\r\n")
        reply = await asyncio.wait_for(reader.read(), 10)
        writer.close()
        return reply

    try:
        local = await node.forward_unix(str(remote))
        assert oct(Path(local).parent.stat().st_mode & 0o777) == "0o700"
        assert (await ping(local)).endswith(b"\r\n\r\nOK")
        cluster["node-a"].kill_connections()
        await until(lambda: not cluster["node-a"].sessions(), 30, "the connection to drop")
        assert await node.forward_unix(str(remote)) == local
        assert (await ping(local)).endswith(b"\r\n\r\nOK")
        await node.close()
        assert not Path(local).exists()
    finally:
        server.close()


# -- the same diagnosis as reading the files -----------------------------------------------------------


async def test_fixture_logs_over_ssh_give_the_same_diagnosis(
    cluster: SshdCluster, catalogue: Catalogue, tmp_path: Path
) -> None:
    reference = Analyzer(catalogue)
    live = Analyzer(catalogue)
    watches: list[Watch] = []
    for name, host in (("rank0.log", "node-a"), ("rank1.log", "node-b")):
        file = FileSource(NCCL / name, name)
        node = file.default_node()
        reference.add_source(name, node)
        for block in file.blocks():
            reference.feed(name, block)
        live.add_source(name, node)
        watches.append(Watch(SshFileSource(cluster.node(host), str(tmp_path / name), name=name)))

    async def copy_in_pieces(watch: Watch, host: str) -> None:
        """Write the log in odd-sized pieces (never on line boundaries); cut the connection half-way."""
        data = (NCCL / watch.source.name).read_bytes()
        pieces = [data[at : at + 397] for at in range(0, len(data), 397)]
        with (tmp_path / watch.source.name).open("ab", buffering=0) as fh:
            for i, piece in enumerate(pieces):
                if i == len(pieces) // 2:
                    await watch.until(lambda: len(watch.lines) > 0, "the first lines")
                    assert cluster[host].kill_connections() >= 1
                fh.write(piece)
                await asyncio.sleep(0.01)

    await asyncio.gather(copy_in_pieces(watches[0], "node-a"), copy_in_pieces(watches[1], "node-b"))
    expected = {s.name: s.lines for s in reference.finish().sources}
    for watch in watches:
        await watch.until(lambda w=watch: len(w.lines) >= expected[w.source.name], "every line")
        assert State.RETRYING in watch.kinds()
        live.feed(watch.source.name, "\n".join(watch.lines))
        await watch.stop()
    diagnosis = live.finish()
    assert diagnosis.as_dict() == reference.finish().as_dict()
    assert diagnosis.findings[0].signature == "nccl-second-communicator-not-joined"
    assert sorted(diagnosis.findings[0].nodes) == ["spark-a", "spark-b"]


# -- addresses -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("uri", "parsed"),
    [
        ("ssh://gpu-1/var/log/vllm.log", SshUri(None, "gpu-1", None, "file", "/var/log/vllm.log")),
        ("ssh://me@gpu-1:2222/tmp/a%20b.log", SshUri("me", "gpu-1", 2222, "file", "/tmp/a b.log")),
        ("ssh://gpu-1/docker/vllm-head", SshUri(None, "gpu-1", None, "docker", "vllm-head")),
        ("ssh://gpu-1/journal/ray@head.service", SshUri(None, "gpu-1", None, "journal", "ray@head.service")),
        ("ssh://root@[fd00::2]:22/ray", SshUri("root", "fd00::2", 22, "ray", "")),
        ("ssh://gpu-1//docker/x.log", SshUri(None, "gpu-1", None, "file", "/docker/x.log")),
        ("ssh://gpu-1/metrics/8000", SshUri(None, "gpu-1", None, "metrics", "8000")),
        ("ssh://gpu-1//metrics/8000", SshUri(None, "gpu-1", None, "file", "/metrics/8000")),
    ],
)
def test_ssh_uris(uri: str, parsed: SshUri) -> None:
    assert parse_ssh_uri(uri) == parsed


@pytest.mark.parametrize(
    ("uri", "message"),
    [
        ("docker://vllm", "not an ssh:// address"),
        ("ssh:///var/log/x.log", "no host"),
        ("ssh://gpu-1:99999/x.log", "the port must be a number"),
        ("ssh://gpu-1:0/x.log", "the port must be a number"),
        ("ssh://me:secret@gpu-1/x.log", "passwords are not accepted"),
        ("ssh://gpu-1", "name a file"),
        ("ssh://gpu-1/var/log/", "name a file"),
        ("ssh://gpu-1/docker/", "expected ssh://host/docker/<container"),
        ("ssh://gpu-1/docker/a;b", "expected ssh://host/docker/<container"),
        ("ssh://gpu-1/journal/a b", "expected ssh://host/journal/<systemd unit>"),
        ("ssh://gpu-1/ray/extra", "takes nothing after it"),
        ("ssh://gpu-1/metrics/", "expected ssh://host/metrics/<port>"),
        ("ssh://gpu-1/metrics/70000", "expected ssh://host/metrics/<port>"),
        ("ssh://gpu-1/metrics/http", "expected ssh://host/metrics/<port>"),
        ("ssh://gpu-1/x.log?y", "'?' and '#' are not allowed"),
        ("ssh://gpu-1/x%0A.log", "control characters"),
    ],
)
def test_bad_ssh_uris(uri: str, message: str) -> None:
    with pytest.raises(ValueError, match=r"^[^\n]+$") as error:
        parse_ssh_uri(uri)
    assert message in str(error.value)


async def test_a_file_read_once_ends_at_its_end_from_where_it_is_asked(cluster: SshdCluster, tmp_path: Path) -> None:
    """Read once (``diagnose --edge`` pulling a node's file): from the byte asked, to the end, a last line
    without its newline included; a missing file is refused in one line, not waited for."""
    path = tmp_path / "engine.log"
    path.write_bytes(b"first\r\nsecond \xff\nthird, no newline")
    source = SshFileSource(cluster.node("node-a"), str(path), follow=False, start=len(b"first\r\n"))
    assert source.finite
    got = [r async for r in source.stream(None)]
    assert [line for r in got for line in r.lines] == ["second \ufffd", "third, no newline"]
    assert got[-1].cursor == path.stat().st_size
    missing = SshFileSource(cluster.node("node-a"), str(tmp_path / "nowhere.log"), follow=False)
    with pytest.raises(Refused) as refused:
        _ = [r async for r in missing.stream(None)]
    assert "nowhere.log" in str(refused.value) and "\n" not in str(refused.value)


async def test_a_copy_of_another_machine_s_log_is_that_machine_s(cluster: SshdCluster, tmp_path: Path) -> None:
    """Trial 2026-12c #42: ranks' logs copied to node-a from spark-a and spark-b gave three columns, node-a
    holding their lines with no host of their own. A file whose own NCCL lines name another machine is that
    machine's, as a local file's is; one that names this machine is the alias's, read once or followed."""
    node = cluster.node("node-a")
    lines = [
        "scenario: rank 0 of the copied run",
        "spark-z:3301:3301 [0] NCCL INFO Bootstrap : Using enp1s0f1np1:10.20.21.10<0>",
        "Traceback (most recent call last):",
    ]
    copied = tmp_path / "copied.log"
    copied.write_text("\n".join(lines) + "\n")
    source = SshFileSource(node, str(copied), follow=False)
    assert [line for r in [r async for r in source.stream(None)] for line in r.lines] == lines
    assert source.node == "spark-z"

    followed = SshFileSource(node, str(copied))
    stream = followed.stream(None)
    async for received in stream:
        if received.lines:
            break
    await stream.aclose()
    assert followed.node == "spark-z"

    own = tmp_path / "own.log"
    own.write_text(lines[1].replace("spark-z", sorted(node.names)[0]) + "\n")
    mine = SshFileSource(node, str(own), follow=False)
    _ = [r async for r in mine.stream(None)]
    assert node.names and mine.node == "node-a"
