"""``sparktui stacks [NODE...]``: where every rank of a hung job is. On each node (over SSH; this machine for
none named and no cluster file) the rank processes, on the host and inside its containers, are dumped with
``py-spy dump`` a few times, seconds apart, with the GPUs' state; then the ranks of each group are compared:
who waits where, which rank is elsewhere or missing, and whether the dumps show progress.

Exit status: 1 when ranks wait on a rank that is elsewhere or missing; 2 when no such hang was seen but a
node, a container or a group's ranks could not be read (py-spy missing, ptrace refused, a node that did not
answer, Python processes not ours to inspect: then "no rank process" is no all-clear), and for input that
cannot be used; 0 otherwise (progressing, together, nothing found). ``--flight DIR`` reads PyTorch flight-recorder dumps
instead.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table
from rich.text import Text

from sparktui.commands.common import UsageError, err, node_arguments, out, trust_option
from sparktui.core import cluster as clusterfile
from sparktui.core.errors import Refused
from sparktui.core.stacks import compare as comparing
from sparktui.core.stacks import flight
from sparktui.core.stacks.kinds import KindError, builtin_kinds
from sparktui.core.stacks.script import Request
from sparktui.core.text import display, json_inert

if TYPE_CHECKING:
    from sparktui.core.stacks import session
    from sparktui.core.stacks.gather import NodeStacks

NAME = "stacks"
VERDICT_STYLE = {"hang": "bold red", "progressing": "green", "together": "yellow", "no-wait": "dim", "unread": "red"}


def add(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    s = sub.add_parser(NAME, help="when it hangs: every rank's stack and GPU state, compared across the nodes")
    s.add_argument("nodes", nargs="*", metavar="NODE", help="[USER@]HOST[:PORT] or an ssh alias (default: the cluster)")
    s.add_argument("--container", action="append", default=[], metavar="NAME", help="look only in these containers")
    s.add_argument("--native", action="store_true", help="dump native frames too (py-spy --native)")
    s.add_argument("--samples", type=int, default=3, metavar="N", help="dumps of each rank (default 3)")
    s.add_argument("--interval", type=float, default=1.0, metavar="SECONDS", help="between dumps (default 1)")
    s.add_argument("--timeout", type=float, default=60.0, metavar="SECONDS", help="per node (default 60)")
    s.add_argument(
        "--py-spy",
        default="",
        metavar="PATH",
        help="py-spy's path on the nodes and in their containers (default: the PATH's, else the one brought by "
        "the py-spy-stacks playbook)",
    )
    s.add_argument(
        "--ras-port",
        type=int,
        default=28028,
        metavar="PORT",
        help="NCCL's RAS port on each node's loopback, asked once for what it sees wrong (default 28028; 0: not asked)",
    )
    s.add_argument(
        "--bring-py-spy",
        action="store_true",
        help="where ranks run without py-spy (a node, a container), copy this machine's there over the same "
        "channel, dump, and remove it (asks first; a node of another architecture is left alone)",
    )
    s.add_argument("--yes", action="store_true", help="with --bring-py-spy: do not ask")
    s.add_argument("--json", action="store_true", help="print the result as JSON")
    s.add_argument("--flight", metavar="DIR", help="read PyTorch flight-recorder dumps from DIR instead")
    s.add_argument("--prefix", default="", metavar="NAME", help="the dump files' prefix (default: inferred)")
    trust_option(s)
    s.set_defaults(run=main)


def main(args: argparse.Namespace) -> int:
    if args.flight:
        return _flight(args)
    if args.samples < 1 or args.interval < 0 or args.timeout <= 0 or not 0 <= args.ras_port <= 65535:
        raise UsageError(
            "--samples needs 1 or more, --interval 0 or more seconds, --timeout more than 0, --ras-port a TCP port or 0"
        )
    try:
        kinds = builtin_kinds()
    except KindError as exc:
        raise UsageError(str(exc)) from None
    targets, where = _targets(args.nodes)
    request = Request(
        args.samples,
        args.interval,
        args.native,
        containers=tuple(args.container),
        py_spy=args.py_spy,
        ras_port=args.ras_port,
    )
    progress = err()

    def said(node: str, what: str) -> None:
        progress.print(Text(f"sparktui: {node}: {what}", style="dim"))

    try:
        found = asyncio.run(_gather(targets, request, args, said, _bring(args, progress)))
    except Refused as exc:
        raise UsageError(str(exc)) from None
    ranks = [r for node in found for r in node.ranks]
    problems = [p for node in found for p in node.problems]
    groups = comparing.compare(ranks, kinds)
    if args.json:
        result = comparing.as_dict(groups, problems)
        result["where"] = where
        result["gpus"] = {n.node: [str(g) for g in n.gpus] for n in found}
        result["hosts"] = {n.node: n.hostname for n in found if n.hostname}
        result["ras"] = {n.node: n.ras for n in found if n.ras}
        sys.stdout.write(json_inert(json.dumps(result, indent=2, ensure_ascii=False)) + "\n")
    else:
        show(groups, problems, where, out(), [(n.node, said) for n in found for said in n.ras])
    return comparing.exit_code(groups, problems)


def _targets(nodes: list[str]) -> tuple[dict[str, str], str]:
    if node_arguments(nodes):
        if len(set(nodes)) < len(nodes):
            raise UsageError(f"{next(n for n in nodes if nodes.count(n) > 1)}: named twice")
        return {n: n for n in nodes}, "the nodes named"
    from sparktui.core.stacks import session  # asyncssh: only for this command

    found = clusterfile.find()
    return session.targets_of(clusterfile.load(found) if found is not None else None)


async def _gather(
    targets: dict[str, str],
    request: Request,
    args: argparse.Namespace,
    said: Callable[[str, str], None],
    bring: session.Bring | None,
) -> list[NodeStacks]:
    from sparktui.core.remedy.plan import audit_log  # asyncssh: only for this command
    from sparktui.core.stacks import session

    return await session.capture(
        targets,
        request,
        timeout=args.timeout,
        progress=said,
        trust_new_host_key=args.trust_new_host_key,
        audit=audit_log([]) if bring is not None else None,
        bring=bring,
    )


def _bring(args: argparse.Namespace, progress: Console) -> session.Bring | None:
    """What --bring-py-spy asks for: this machine's py-spy, the question (unless --yes) and where its commands'
    output goes. Refused without py-spy here, or without a terminal to ask on."""
    if not args.bring_py_spy:
        return None
    from sparktui.core.stacks import bring, session

    binary = bring.local_binary()
    if binary is None:
        raise UsageError("--bring-py-spy: this machine has no py-spy to bring (pip install py-spy)")
    if not args.yes and not sys.stdin.isatty():
        raise UsageError("--bring-py-spy: not asking without a terminal: add --yes to bring it, or leave it out")

    async def ask(plan: bring.Plan) -> bool:
        for line in plan.said(binary):
            progress.print(Text(display(f"sparktui: {line}"), style="yellow"))
        if args.yes:
            return True
        answer = await asyncio.to_thread(input, f"Bring py-spy to {len(plan.places)} place(s)? [y/N] ")
        return answer.strip().lower() in ("y", "yes")

    def said(node: str, line: str) -> None:
        progress.print(Text(display(f"sparktui: {node}: {line}"), style="dim"))

    return session.Bring(binary, ask, said)


def show(
    groups: list[comparing.Group],
    problems: list[str],
    where: str,
    console: Console,
    ras: Sequence[tuple[str, str]] = (),
) -> None:
    """The per-rank table of each group and its verdict, what NCCL's RAS said on each node, then what could not
    be read."""
    console.print(Text(f"sparktui stacks: {where}", style="dim"))
    if not groups:
        headline = Text(f"{comparing.NOT_ALL_CLEAR}:", style="bold yellow") if problems else None
        console.print(headline or Text(comparing.NONE_FOUND))  # what could not be read comes below
    for g in groups:
        table = Table(title=f"job {g.job}", title_justify="left", show_lines=False)
        for column in ("rank", "node", "pid", "status", "now", "gpu"):
            table.add_column(column, overflow="fold")
        for v in g.views:
            r = v.rank
            status = v.place.thread.status_text if v.place is not None else ""
            style = "bold yellow" if v.odd else ""
            node = r.node if r.place == "host" else f"{r.node}/{r.place}"
            table.add_row(
                "" if r.rank is None else str(r.rank),
                node,
                str(r.pid),
                status + (" moving" if v.moved else ""),
                Text(display(v.now()), style=style),
                "" if r.gpu is None else str(r.gpu),
            )
        console.print(table)
        line = Text("verdict: ")
        line.append(g.verdict.upper(), style=VERDICT_STYLE.get(g.verdict, ""))
        console.print(line)
        for finding in g.findings:
            console.print(Text(f"  {display(finding)}"))
    for node, said in ras:
        console.print(Text(display(f"NCCL's RAS on {node}: {said}")))
    for problem in problems:
        console.print(Text(display(problem), style="yellow"))


def _flight(args: argparse.Namespace) -> int:
    folder = Path(args.flight)
    try:
        dumps = flight.read_folder(folder, args.prefix or None)
    except flight.Unreadable as exc:
        raise UsageError(f"--flight {folder}: {exc}") from None
    result = flight.analyse(dumps)
    if args.json:
        sys.stdout.write(json_inert(json.dumps(result.as_dict(), indent=2, ensure_ascii=False)) + "\n")
    else:
        console = out()
        console.print(
            Text(f"sparktui stacks --flight {folder}: ranks {', '.join(map(str, result.ranks))}", style="dim")
        )
        for finding in result.findings:
            console.print(Text(f"  {display(finding)}"))
        if not result.findings:
            console.print(Text("every collective recorded matches across the ranks", style="green"))
    return 1 if result.findings else 0
