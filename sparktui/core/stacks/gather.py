"""Gathering every node's rank stacks at once: the script of :mod:`sparktui.core.stacks.script` run over
each node's runner (SSH, or this machine for ``local``), bounded in time per node, and read into
:class:`Rank` records and the node's GPU state. Read-only on the nodes."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from sparktui.core.audit import AuditEntry, AuditLog
from sparktui.core.remote.command import Command
from sparktui.core.remote.runner import Runner
from sparktui.core.stacks import ras, script
from sparktui.core.stacks.dump import Unreadable, parse
from sparktui.core.stacks.ranks import Gpu, Rank, Sample

#: The step name of the gathering (the runner's and the audit's).
STEP = "stacks"
#: What py-spy says when the kernel refuses it ptrace.
_PTRACE = re.compile(r"Operation not permitted|Permission denied|ptrace", re.IGNORECASE)
#: The most characters of the script's output kept in the audit log (as for a playbook's commands).
AUDIT_LIMIT = 1 << 20
#: Called with (node, what it is doing) as the gathering goes.
Progress = Callable[[str, str], None]


@dataclass
class NodeStacks:
    """One node's answer: its host name (as it says it), its GPUs, its rank processes, what NCCL's RAS says is
    wrong (each entry of its report in a line), and what kept anything from being read."""

    node: str
    hostname: str = ""
    gpus: list[Gpu] = field(default_factory=list)
    ranks: list[Rank] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    seconds: float = 0.0
    ras: list[str] = field(default_factory=list)
    arch: str = ""  # uname -m
    unspied: list[str] = field(default_factory=list)  # the places (host, a container) with ranks and no py-spy


async def gather(
    runner: Runner,
    nodes: Sequence[str],
    request: script.Request,
    *,
    timeout: float,
    progress: Progress | None = None,
    audit: AuditLog | None = None,
) -> list[NodeStacks]:
    """Every node at once, each within ``timeout`` seconds; each node's script, its output and exit recorded in
    ``audit`` when given."""
    return list(await asyncio.gather(*(gather_node(runner, n, request, timeout, progress, audit) for n in nodes)))


async def gather_node(
    runner: Runner,
    node: str,
    request: script.Request,
    timeout: float,
    progress: Progress | None = None,
    audit: AuditLog | None = None,
) -> NodeStacks:
    run = script.nonce()
    lines: list[str] = []
    marker = f"@@stacks {run} "

    def take(_node: str, line: str) -> None:
        lines.append(line)
        if progress is not None and line.startswith(marker):
            words = line[len(marker) :].split()
            if words[:1] == ["place"] and len(words) > 1:
                progress(node, f"looking for ranks in {words[1]}")
            elif words[:1] == ["dump"] and len(words) > 2:
                progress(node, f"py-spy dump of pid {words[1]} (sample {int(words[2]) + 1} of {request.samples})")

    command = Command(STEP, node, "host", script.script(request, run), changes=False)
    started, at = time.monotonic(), datetime.now(UTC)
    if progress is not None:
        progress(node, "connecting")
    try:
        code = await asyncio.wait_for(runner.run(command, take), timeout)
    except TimeoutError:
        code = None
        lines.append(f"[sparktui: no answer within {timeout:g} s]")
    if audit is not None:
        output = "".join(f"{line}\n" for line in lines)[:AUDIT_LIMIT]
        audit.add(AuditEntry(command.command, node, at, code, output, time.monotonic() - started, "host", "", STEP))
    result = read(node, lines, run, request)
    result.seconds = time.monotonic() - started
    said = next((ln.removeprefix("[sparktui: ").removesuffix("]") for ln in lines if ln.startswith("[sparktui: ")), "")
    if said:
        result.problems = [f"{node}: {said}"] + [p for p in result.problems if "cut off" not in p]
    elif code not in (0, None) and not result.ranks:
        result.problems.insert(0, f"{node}: the gathering ended with exit {code}")
    return result


def read(node: str, lines: Sequence[str], run: str, request: script.Request) -> NodeStacks:
    """One node's output read into its GPUs, ranks and problems (pure)."""
    out = script.read(lines, run)
    result = NodeStacks(node, out.hostname, [g for g in (_gpu(line) for line in out.gpus) if g is not None])
    result.ras = ras.said(out.ras)
    result.arch = out.arch
    by_uuid = {g.uuid: g for g in result.gpus}
    gpu_of = {}
    for line in out.apps:
        parts = [p.strip() for p in line.split(",")]
        if len(parts) >= 2 and parts[0].isdigit() and parts[1] in by_uuid:
            gpu_of[int(parts[0])] = by_uuid[parts[1]]
    for place in (p for p in out.no_py_spy if any(f.place == p for f in out.processes)):
        result.unspied.append(place)
        where = "" if place == "host" else f" in container {place}"
        result.problems.append(
            f"{node}: py-spy is not installed{where}: its ranks were found but not dumped "
            f"(sparktui stacks --bring-py-spy copies this machine's there for the run, sparktui play py-spy-stacks "
            f"installs one with pip; both remove it after)"
        )
    for place, count in out.hidden.items():
        where = "" if place == "host" else f" in container {place}"
        result.problems.append(
            f"{node}: {count} Python process{'es' if count != 1 else ''}{where} could not be inspected (not yours): "
            f"run as root or as their user"
        )
    for name in out.no_exec:
        result.problems.append(f"{node}: docker exec into container {name} failed: its ranks were not looked for")
    refused: set[str] = set()
    for found in out.processes:
        samples = []
        for _sample, when, text in sorted(found.dumps, key=lambda d: d[0]):
            try:
                samples.append(Sample(when, parse(text)[0]))
            except Unreadable as exc:
                samples.append(Sample(when, None, str(exc)))
                if _PTRACE.search(str(exc)):
                    refused.add(found.place)
        gpu = gpu_of.get(found.pid) if found.place == "host" else None
        rank = Rank(
            node, found.place, found.pid, found.command, found.env, tuple(samples), gpu, found.gone_at is not None
        )
        result.ranks.append(rank)
    for place in sorted(refused):
        where = "" if place == "host" else f" in container {place}"
        result.problems.append(
            f"{node}: ptrace refused{where}: py-spy cannot read the ranks; give the container SYS_PTRACE "
            f"(docker run --cap-add SYS_PTRACE) or allow it on the host (sysctl kernel.yama.ptrace_scope=0, or "
            f"run as root)"
        )
    if not out.ended:
        result.problems.append(f"{node}: the gathering was cut off before it ended")
    return result


def _gpu(line: str) -> Gpu | None:
    parts = [p.strip() for p in line.split(",")]
    return Gpu(*parts[:6]) if len(parts) >= 6 and parts[0].startswith("GPU-") else None
