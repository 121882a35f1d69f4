"""Deciding whether a run worked: the playbook's ``[verify]`` check, polled until it passes or time runs out.

The check runs where the playbook says (the head, through its SSH connection, or this machine) with the
same :class:`~sparktui.core.remote.runner.Runner` the steps used: an HTTP check opens a TCP connection from the
node itself, so ``http://localhost:8000/health`` is the head's own port; a log check runs a command (say
``docker logs --since {since} -f C``) and waits for a line of its output to match a pattern; a Ray check runs
``ray status`` until the cluster holds enough nodes and GPUs; a completion check is the smoke test
(:mod:`sparktui.core.serving.smoke`), one short completion sent over a connection the node opens itself, until
tokens come back. Reading ``ray status`` is pure and separate.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import regex

from sparktui.core.inventory import parse
from sparktui.core.remedy.render import Check
from sparktui.core.remote.command import Command
from sparktui.core.remote.runner import Runner
from sparktui.core.serving.smoke import smoke

#: Seconds between two tries of a check that did not pass yet.
INTERVAL = 2.0
#: Seconds one completion may take before it is tried again.
COMPLETION_LIMIT = 60.0


@dataclass(frozen=True, slots=True)
class Verdict:
    """Whether a remediation's check passed, and what it saw last."""

    passed: bool
    note: str  # one line: what was seen last


def ray_cluster_size(status: str) -> tuple[int, float] | None:
    """Active nodes and total GPUs in ``ray status`` output, or None when it is not that output."""
    found = parse.ray_status(status)
    return (found.nodes, found.gpus) if found.running else None


async def run_check(
    check: Check,
    runner: Runner,
    output: Callable[[str, str], None],
    *,
    interval: float = INTERVAL,
    clock: Callable[[], float] = time.monotonic,
) -> Verdict:
    """Poll ``check`` until it passes or ``check.within`` seconds have gone."""
    if check.kind == "none":
        return Verdict(True, "no verification: the steps' exit codes decide")
    deadline = clock() + check.within
    last = f"no answer within {check.within} s"
    while True:
        remaining = max(deadline - clock(), 0.1)
        try:
            # a completion is given the time left itself, so that it says how far it got (the margin lets it)
            verdict = await asyncio.wait_for(_once(check, runner, output, remaining), timeout=remaining + 1)
        except TimeoutError:
            verdict = Verdict(False, last)
        if verdict.passed:
            return verdict
        last = verdict.note
        if clock() + interval > deadline:
            return Verdict(False, f"not within {check.within} s: {last}")
        output(check.node, f"[verify] {last}; again in {interval:g} s")
        await asyncio.sleep(interval)


async def _once(check: Check, runner: Runner, output: Callable[[str, str], None], within: float) -> Verdict:
    if check.kind == "completion":
        tried = await smoke(check.url, partial(runner.connect, check.node), timeout=min(within, COMPLETION_LIMIT))
        return Verdict(tried.verdict != "block", f"completion from {tried.url}: {tried.summary}")
    if check.kind == "http":
        status = await runner.fetch(check.node, check.url)
        passed = status[:1] == "2"
        return Verdict(passed, f"GET {check.url}: {status}")
    printed: list[str] = []
    found = asyncio.Event()
    pattern = regex.compile(check.pattern) if check.kind == "log" else None

    def seen(node: str, line: str) -> None:
        printed.append(line)
        output(node, line)
        if pattern is not None and pattern.search(line):
            found.set()

    command = Command("verify", check.node, "host", check.command)
    run = asyncio.ensure_future(runner.run(command, seen))
    waiter = asyncio.ensure_future(found.wait())
    try:
        await asyncio.wait({run, waiter}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (run, waiter):
            task.cancel()
        await asyncio.gather(run, waiter, return_exceptions=True)
    if check.kind == "log":
        if found.is_set():
            return Verdict(True, f"{check.pattern!r} seen in `{check.command}`")
        return Verdict(False, f"{check.pattern!r} not yet in `{check.command}`")
    size = ray_cluster_size("\n".join(printed))
    if size is None:
        return Verdict(False, f"`{check.command}` printed no cluster status")
    nodes, gpus = size
    passed = nodes >= check.nodes and gpus >= check.gpus
    return Verdict(passed, f"Ray: {nodes} nodes, {gpus:g} GPUs (needs {check.nodes} and {check.gpus})")
