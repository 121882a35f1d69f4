"""A followed log rotated while nobody reads it (the connection cut, the node unreachable, the reader
stopped): the resume finds the old file where the rotation put it, reads it to its end, then the new file
from its start, so every line arrives once and in order; what cannot be found again (the old file deleted
or compressed) is said as an event with its size where known, in ``diagnose --follow`` and in the cockpit.

Over a real sshd on loopback and on local files, with a writer appending real captured lines."""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from sparktui.core.events import State
from sparktui.core.remote.ssh import SshNode
from sparktui.core.sources.base import Cursor, LiveSource
from sparktui.core.sources.follow import FollowedFile
from sparktui.core.sources.ssh import SshFileSource
from sparktui.tui.factory import make_app
from sparktui.tui.session import Session
from tests.servers.sshd import SshdCluster

from ..conftest import FIXTURES
from ..waiting import until, wait_until
from .test_ssh import Watch, followers_of

REAL = (FIXTURES / "nccl" / "single-host-healthy-subsys-all" / "rank0.log").read_text().splitlines()
#: Written before the cut (and read), during it (read only by the resume), after the rotation (into the
#: new file, still during the cut) and once the reader is back.
BEFORE, DURING, AFTER, LATER = REAL[:300], REAL[300:600], REAL[600:900], REAL[900:1200]
ROTATIONS = ["rename", "copytruncate", "deleted", "compressed"]


def size(lines: list[str]) -> int:
    return sum(len(line.encode()) + 1 for line in lines)


async def append(path: Path, lines: list[str]) -> None:
    """Append as a logger does (O_APPEND), each line in two writes, letting the reader run now and then."""
    with path.open("ab", buffering=0) as fh:
        for i, line in enumerate(lines):
            data = line.encode() + b"\n"
            fh.write(data[: len(data) // 2])
            fh.write(data[len(data) // 2 :])
            if i % 25 == 0:
                await asyncio.sleep(0.001)


def rotate(path: Path, how: str) -> None:
    """What logrotate does: ``create`` (rename, new file), ``copytruncate``, and ``create`` with the rotated
    file then deleted (``rotate 0``) or compressed (``compress`` without ``delaycompress``)."""
    rotated = path.with_name(path.name + ".1")
    if how == "copytruncate":
        shutil.copyfile(path, rotated)
        os.truncate(path, 0)
        return
    path.rename(rotated)
    path.touch()  # before the old one goes, as logrotate does: the new file cannot get its inode
    if how == "deleted":
        rotated.unlink()
    elif how == "compressed":
        rotated.with_name(rotated.name + ".gz").write_bytes(gzip.compress(rotated.read_bytes()))
        rotated.unlink()


def tally(expected: list[str], got: list[str]) -> tuple[int, int]:
    """Lines lost and lines doubled."""
    want, have = Counter(expected), Counter(got)
    return sum((want - have).values()), sum((have - want).values())


def outcome(path: Path, how: str) -> tuple[list[str], list[str]]:
    """The lines that must arrive, in order, and the events that must be said."""
    if how in ("rename", "copytruncate"):
        return BEFORE + DURING + AFTER + LATER, []
    lost = f"lines lost: while {path} was not followed, it was rotated"
    if how == "deleted":
        said = f"{lost} and the old file is gone (deleted, compressed or moved away); "
        said += f"an unknown number of bytes after byte {size(BEFORE):,} were not read"
    else:
        said = f"{lost} and compressed; {size(DURING):,} bytes after byte {size(BEFORE):,} were not read"
    return BEFORE + AFTER + LATER, [said]


# -- over SSH ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("cut", "how"), [("unreachable", how) for how in ROTATIONS] + [("killed", "rename")])
async def test_rotation_during_a_cut_over_ssh(cluster: SshdCluster, tmp_path: Path, cut: str, how: str) -> None:
    """``unreachable``: sshd stopped for the whole rotation (trial #96); ``killed``: the connection killed
    and the file rotated at once, racing the reconnect (#95)."""
    path = tmp_path / "rank0.log"
    path.touch()
    watch = Watch(SshFileSource(cluster.node("node-a"), str(path)))
    await append(path, BEFORE)
    await watch.until(lambda: len(watch.lines) == len(BEFORE), "the lines before the cut")
    if cut == "unreachable":
        await asyncio.to_thread(cluster["node-a"].stop)
    else:
        assert cluster["node-a"].kill_connections() >= 1
    await append(path, DURING)
    rotate(path, how)
    await append(path, AFTER)
    if cut == "unreachable":
        await asyncio.to_thread(cluster["node-a"].start)
    await append(path, LATER)
    await watch.until(lambda: watch.lines[-1:] == LATER[-1:], "the last line")
    expected, said = outcome(path, how)
    assert tally(expected, watch.lines) == (0, 0)
    assert watch.lines == expected
    assert watch.notes == said
    assert State.RETRYING in watch.kinds() and State.FAILED not in watch.kinds()
    await watch.stop()
    await until(lambda: not followers_of(path), 30, "the remote follower to end")


async def test_rotated_twice_during_one_cut(cluster: SshdCluster, tmp_path: Path) -> None:
    """The old file, then the one rotated after it (oldest first), then the path's: nothing of the middle
    one was ever seen, it is found as a rotation newer than the old file."""
    path = tmp_path / "rank0.log"
    watch = Watch(SshFileSource(cluster.node("node-a"), str(path)))
    await append(path, BEFORE)
    await watch.until(lambda: len(watch.lines) == len(BEFORE), "the lines before the cut")
    await asyncio.to_thread(cluster["node-a"].stop)
    await append(path, DURING)
    path.rename(path.with_name("rank0.log-20261201"))  # dateext
    await append(path, AFTER)
    path.rename(path.with_name("rank0.log-20261202"))
    await append(path, LATER)
    await asyncio.to_thread(cluster["node-a"].start)
    await watch.until(lambda: watch.lines[-1:] == LATER[-1:], "the last line")
    assert watch.lines == BEFORE + DURING + AFTER + LATER
    assert watch.notes == []
    await watch.stop()


# -- local files ---------------------------------------------------------------------------------------


class Restartable:
    """A source read as the supervisor reads it, but stopped and resumed from its last cursor by the test
    (what a reconnect is for a file on this machine)."""

    def __init__(self, source: LiveSource) -> None:
        self.source = source
        self.lines: list[str] = []
        self.notes: list[str] = []
        self.cursor: Cursor | None = None
        self.task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self.task = asyncio.create_task(self._read(self.cursor))

    async def _read(self, cursor: Cursor | None) -> None:
        async for received in self.source.stream(cursor):
            self.notes += [received.note] if received.note else []
            self.lines.extend(received.lines)
            self.cursor = received.cursor

    async def stop(self) -> None:
        assert self.task is not None
        self.task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self.task

    async def until(self, condition: Callable[[], object], what: str) -> None:
        """:func:`~tests.waiting.until`, raising at once what the reading raised, and saying what came."""
        task = self.task
        assert task is not None

        def held() -> object:
            value = condition()
            if not value and task.done():
                task.result()
            return value

        try:
            await until(held, 20, what)
        except AssertionError as exc:
            raise AssertionError(f"{exc}: {len(self.lines)} lines") from None


@pytest.mark.parametrize("how", ROTATIONS)
async def test_rotation_while_a_local_file_is_not_read(tmp_path: Path, how: str) -> None:
    path = tmp_path / "rank0.log"
    path.touch()
    reader = Restartable(FollowedFile(path, "rank0.log", "spark-a", poll=0.01))
    reader.start()
    await append(path, BEFORE)
    await reader.until(lambda: len(reader.lines) == len(BEFORE), "the lines before the stop")
    await reader.stop()
    await append(path, DURING)
    rotate(path, how)
    await append(path, AFTER)
    reader.start()
    await append(path, LATER)
    await reader.until(lambda: reader.lines[-1:] == LATER[-1:], "the last line")
    await reader.stop()
    expected, said = outcome(path, how)
    assert tally(expected, reader.lines) == (0, 0)
    assert reader.lines == expected
    assert reader.notes == said


@pytest.mark.parametrize("stopped", [True, False])
async def test_a_local_file_rotated_twice(tmp_path: Path, stopped: bool) -> None:
    """Twice while the reader is stopped, or twice between two of its looks (a second apart here): the
    old file to its end, then the one rotated after it, then the new one."""
    path = tmp_path / "rank0.log"
    path.touch()
    reader = Restartable(FollowedFile(path, "rank0.log", "spark-a", poll=0.01 if stopped else 1.0))
    reader.start()
    await append(path, BEFORE)
    await reader.until(lambda: len(reader.lines) == len(BEFORE), "the lines before the rotations")
    if stopped:
        await reader.stop()
    await append(path, DURING)
    path.rename(path.with_name("rank0.log.2"))  # numbered, as logrotate shifts them: the older, the higher
    await append(path, AFTER)
    path.rename(path.with_name("rank0.log.1"))
    await append(path, LATER)
    if stopped:
        reader.start()
    await reader.until(lambda: reader.lines[-1:] == LATER[-1:], "the last line")
    await reader.stop()
    assert reader.lines == BEFORE + DURING + AFTER + LATER and not reader.notes


async def test_a_plain_offset_still_resumes_in_the_file_at_the_path(tmp_path: Path) -> None:
    """A cursor from before files were named (a byte offset) resumes as it did: in the file at the path, from
    its start when that is shorter."""
    path = tmp_path / "rank0.log"
    path.write_text("".join(f"{line}\n" for line in BEFORE + DURING))
    reader = Restartable(FollowedFile(path, "rank0.log", "spark-a", poll=0.01))
    reader.cursor = size(BEFORE)
    reader.start()
    await reader.until(lambda: len(reader.lines) == len(DURING), "the lines after the offset")
    await reader.stop()
    path.write_text("".join(f"{line}\n" for line in AFTER[:10]))
    reader.cursor = size(BEFORE)
    reader.start()
    await reader.until(lambda: len(reader.lines) == len(DURING) + 10, "the shorter file from its start")
    await reader.stop()
    assert reader.lines == DURING + AFTER[:10] and not reader.notes


# -- where the user sees a gap -------------------------------------------------------------------------


def test_diagnose_follow_says_the_lines_lost(
    sshd_cluster: SshdCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sshd_cluster.home_for(tmp_path / "home", monkeypatch)
    path = tmp_path / "rank0.log"
    path.write_text("".join(f"{line}\n" for line in BEFORE))
    incidents = Path(os.environ["XDG_STATE_HOME"]) / "sparktui" / "incidents"
    command = [sys.executable, "-m", "sparktui", "diagnose", "--follow", "--for", "60s", "--json"]
    run = subprocess.Popen(
        [*command, f"ssh://node-a/{path}"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    said: list[str] = []
    reading = threading.Thread(target=lambda: said.extend(run.stderr or ()))
    reading.start()
    try:
        # the spool's log of the source is made with its first lines: the file is being read, and named
        wait_for(lambda: any(incidents.glob("*/*/*rank0.log")), "the first lines", run)
        sshd_cluster["node-a"].stop()
        rotate(path, "deleted")
        path.write_text("".join(f"{line}\n" for line in AFTER))
        sshd_cluster["node-a"].start()
        wait_for(lambda: any("lines lost" in line for line in said), "the lines lost to be said", run)
    finally:
        run.send_signal(signal.SIGINT)  # ctrl+c: what was received is diagnosed
        reading.join(timeout=60)
        out = run.stdout.read() if run.stdout else ""
        run.wait(timeout=60)
    event = next(line for line in said if "lines lost" in line)
    assert event.startswith(f"sparktui: node-a:{path}: lines lost: while {path} was not followed, it was rotated")
    (source,) = json.loads(out)["sources"]  # and the diagnosis keeps it, for the report
    assert source["notes"][0].startswith(f"lines lost: while {path} was not followed, it was rotated"), source


def wait_for(condition: Callable[[], object], what: str, run: subprocess.Popen[str]) -> None:
    """:func:`~tests.waiting.wait_until` while the command runs (failing at once if it ends)."""

    def held() -> object:
        assert run.poll() is None, f"the command ended before {what}"
        return condition()

    wait_until(held, 30, what)


async def test_the_cockpit_notifies_the_lines_lost(sshd_cluster: SshdCluster, tmp_path: Path) -> None:
    path = tmp_path / "rank0.log"
    path.write_text("".join(f"{line}\n" for line in BEFORE))
    # The node's connection lives in the pipeline's event loop, which ends with the app: it is not one of the
    # nodes the fixture closes in the test's loop. Killing the server's side ends the remote follower.
    node = SshNode("node-a", config=[sshd_cluster.ssh_config], known_hosts=sshd_cluster.known_hosts, agent=False)
    app = make_app(Session("ssh", live=(SshFileSource(node, str(path)),)))
    sshd = sshd_cluster["node-a"]
    try:
        async with app.run_test(size=(160, 48)):
            await until(lambda: app.pipeline.lines == len(BEFORE), 30, "the lines before")
            await asyncio.to_thread(sshd.stop)
            rotate(path, "deleted")
            await asyncio.to_thread(sshd.start)
            await append(path, AFTER)
            said = await until(
                lambda: [n.message for n in app._notifications if "lines lost" in n.message], 30, "the lines lost said"
            )
            assert said == [
                f"node-a:{path}: lines lost: while {path} was not followed, it was rotated and the old file is "
                f"gone (deleted, compressed or moved away); an unknown number of bytes after byte "
                f"{size(BEFORE):,} were not read"
            ]
    finally:
        if sshd.process is None:
            sshd.start()
        sshd.kill_connections()
