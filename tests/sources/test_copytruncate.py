"""A followed file emptied in place (trial 2026-12b §4 item 18, N2): the lines written after the follower's last
look and before copytruncate were lost, silently, although its copy held them. They are read from the copy now,
locally and over SSH (trial 2026-12c N5); a file emptied with no copy left says what may be lost."""

from __future__ import annotations

import asyncio
import os
import shutil
from pathlib import Path

from sparktui.core.events import SourceNote, State, StateChange
from sparktui.core.sources.base import LiveSource, Received, supervise
from sparktui.core.sources.follow import FollowedFile
from sparktui.core.sources.ssh import SshFileSource
from tests.servers.sshd import SshdCluster

from ..waiting import until

#: Seconds between the follower's looks: the writer always gets in between (it never yields to the loop).
POLL = 0.5


def copytruncate(path: Path, keep: int = 3) -> None:
    """What logrotate's ``copytruncate`` does, with the writer paused: the copies shifted (``.1`` to ``.2``...),
    the file copied to ``.1``, then emptied in place."""
    for n in range(keep - 1, 0, -1):
        older = path.with_name(f"{path.name}.{n}")
        if older.exists():
            older.rename(path.with_name(f"{path.name}.{n + 1}"))
    shutil.copyfile(path, path.with_name(f"{path.name}.1"))
    os.truncate(path, 0)


class Follow:
    def __init__(self, source: LiveSource) -> None:
        self.got: list[str] = []
        self.states: list[StateChange] = []
        self.notes: list[str] = []
        self.task = asyncio.create_task(supervise(source, self.deliver, self.report))

    def report(self, change: StateChange | SourceNote) -> None:
        if isinstance(change, SourceNote):
            self.notes.append(change.text)
        else:
            self.states.append(change)

    async def deliver(self, _name: str, received: Received) -> None:
        self.got.extend(received.lines)

    @property
    def events(self) -> list[str]:
        return self.notes

    async def stop(self) -> None:
        self.task.cancel()
        await asyncio.gather(self.task, return_exceptions=True)


def write(path: Path, lines: range, written: list[str]) -> None:
    with path.open("a") as fh:
        fh.writelines(f"line {i}\n" for i in lines)
    written.extend(f"line {i}" for i in lines)


async def three_copytruncates(source: LiveSource, path: Path, wait: float) -> None:
    """Three cycles of lines, then more lines after the follower's last look and copytruncate at once, then
    lines after the last one: every line read once, in order, and nothing said (nothing was lost)."""
    follow = Follow(source)
    written: list[str] = []
    try:
        for cycle in range(3):
            write(path, range(cycle * 100, cycle * 100 + 50), written)
            await until(lambda: follow.got == written, wait, f"cycle {cycle}'s first lines")
            write(path, range(cycle * 100 + 50, cycle * 100 + 100), written)  # after its last look
            copytruncate(path)
            await until(lambda: follow.got == written, wait, f"cycle {cycle}'s last lines, from the copy")
        write(path, range(300, 310), written)
        await until(lambda: follow.got == written, wait, "the lines after the last copytruncate")
    finally:
        await follow.stop()
    assert follow.events == []  # nothing lost: nothing to say
    assert not [s for s in follow.states if s.state in (State.RETRYING, State.FAILED)]


async def test_copytruncate_between_two_looks_loses_nothing(tmp_path: Path) -> None:
    path = tmp_path / "app.log"
    path.touch()
    await three_copytruncates(FollowedFile(path, "app.log", "n1", poll=POLL), path, 10)


async def test_a_file_emptied_with_no_copy_says_what_may_be_lost(tmp_path: Path) -> None:
    path = tmp_path / "app.log"
    path.touch()
    follow = Follow(FollowedFile(path, "app.log", "n1", poll=POLL))
    written: list[str] = []
    try:
        write(path, range(0, 50), written)
        await until(lambda: follow.got == written, 10, "the first lines")
        unseen = path.stat().st_size
        write(path, range(50, 60), [])  # after its last look, then gone: `truncate -s 0`, no copy
        os.truncate(path, 0)
        await until(lambda: follow.events, 10, "the truncation said")
        write(path, range(60, 70), written)
        await until(lambda: follow.got == written, 10, "the lines after the truncation")
    finally:
        await follow.stop()
    assert follow.events == [
        f"lines may be lost: {path} was emptied in place while it was followed, and no copy of it was found"
        f" (copytruncate's, by its first bytes); what was written after byte {unseen} in the last 500 ms before"
        " it, if anything, was not read"
    ]


async def test_a_file_emptied_over_ssh_says_what_may_be_lost(cluster: SshdCluster, tmp_path: Path) -> None:
    path = tmp_path / "app.log"
    path.touch()
    follow = Follow(SshFileSource(cluster.node("node-a"), str(path)))
    written: list[str] = []
    try:
        write(path, range(0, 50), written)
        await until(lambda: follow.got == written, 30, "the first lines")
        size = path.stat().st_size
        os.truncate(path, 0)
        await until(lambda: follow.events, 30, "the truncation said")
        write(path, range(60, 70), written)
        await until(lambda: follow.got == written, 30, "the lines after the truncation")
    finally:
        await follow.stop()
    assert follow.events == [
        f"lines may be lost: {path} was emptied in place while it was followed, and no copy of it was found"
        f" (copytruncate's, by its first bytes); what was written after byte {size} in the last 50 ms before it,"
        " if anything, was not read"
    ]


async def test_copytruncate_over_ssh_reads_the_rest_from_the_copy(cluster: SshdCluster, tmp_path: Path) -> None:
    """Trial 2026-12c N5: over SSH, the lines written in the last look's 50 ms before copytruncate were lost
    (1,785 of 1,800). The node's copy (by its first bytes) is read from where tail stopped, then the file again."""
    path = tmp_path / "app.log"
    path.touch()
    await three_copytruncates(SshFileSource(cluster.node("node-a"), str(path)), path, 30)
