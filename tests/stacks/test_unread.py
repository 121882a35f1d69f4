"""No false all-clear from ``sparktui stacks``: a real 2-rank gloo job (torch's CPU build) runs as root while
the node script runs as ``nobody`` (runuser), who may not read the ranks' environment, so the ranks are
counted as Python processes that could not be inspected, and said; a node that does not answer (a real
loopback peer that accepts and never speaks, as a hung sshd does) is said unread, not "no rank process
found"."""

from __future__ import annotations

import asyncio
import shlex
import socket
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from rich.console import Console

from sparktui.cli import main
from sparktui.commands.stacks import show
from sparktui.core.remote.command import Command
from sparktui.core.remote.runner import LocalRunner, Output, Runner
from sparktui.core.stacks.compare import NONE_FOUND, compare, exit_code
from sparktui.core.stacks.gather import gather
from sparktui.core.stacks.kinds import builtin_kinds
from sparktui.core.stacks.script import Request

from .jobs import job


class AsNobody(LocalRunner):
    """This machine, every command run as the unprivileged user ``nobody``."""

    async def run(self, command: Command, output: Output) -> int | None:
        as_nobody = f"runuser -u nobody -- sh -c {shlex.quote(command.command)}"
        return await super().run(replace(command, command=as_nobody), output)


def test_ranks_of_another_user_are_counted_not_missed(tmp_path: Path) -> None:
    runner: Runner = AsNobody()
    with job("second-group", tmp_path) as j:
        (node,) = asyncio.run(gather(runner, ["local"], Request(1, 0.0), timeout=30))
    groups = compare(node.ranks, builtin_kinds())
    assert not any(g.job == j.job for g in groups)  # nobody cannot tell them for ranks
    (said,) = [p for p in node.problems if "could not be inspected" in p]
    count = int(said.split(": ", 1)[1].split(" ", 1)[0])
    assert count >= len(j.pids)  # the two ranks, and whatever other Python runs here as root
    assert said == f"local: {count} Python processes could not be inspected (not yours): run as root or as their user"
    assert exit_code(groups, node.problems) == 2
    console = Console(width=400, record=True)
    show(groups, node.problems, "this machine", console)
    shown = console.export_text()
    assert NONE_FOUND not in shown
    if not groups:
        head = "sparktui stacks: this machine\nno rank process read, and this is no all-clear:\n"
        assert shown.startswith(head) and f"\n{said}\n" in shown


@pytest.fixture
def silent_peer() -> Iterator[int]:
    """A loopback port that takes connections and never says anything."""
    with socket.create_server(("127.0.0.1", 0)) as server:
        yield server.getsockname()[1]


def test_a_node_that_does_not_answer_is_no_all_clear(
    silent_peer: int, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    node = f"127.0.0.1:{silent_peer}"
    assert main(["stacks", "--timeout", "2", node]) == 2
    shown = capsys.readouterr().out
    assert "no rank process found" not in shown
    assert f"no rank process read, and this is no all-clear:\n{node}: no answer within 2 s\n" in shown
