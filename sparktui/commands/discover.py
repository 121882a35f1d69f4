"""``sparktui discover``: look at the nodes over SSH and write the cluster file."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from rich.text import Text

from sparktui.commands.common import UsageError, err, node_arguments, trust_option
from sparktui.core.text import display

NAME = "discover"


def add(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    v = sub.add_parser(NAME, help="look at the nodes over SSH and write the cluster file")
    v.add_argument("targets", nargs="+", metavar="[USER@]HOST[:PORT]")
    v.add_argument("--output", default="sparktui.toml", metavar="FILE", help="where to write (default sparktui.toml)")
    v.add_argument("--force", action="store_true", help="replace an existing file")
    trust_option(v)
    v.set_defaults(run=main)


def main(args: argparse.Namespace) -> int:
    from sparktui.core.inventory import discover  # asyncssh: only for this command

    problems = err()
    looks = asyncio.run(discover.discover(node_arguments(args.targets), trust_new_host_key=args.trust_new_host_key))
    for seen in looks:
        if seen.problem:
            problems.print(Text(display(f"sparktui: {seen.target}: {seen.problem}"), style="yellow"))
    if all(seen.problem and not seen.hostname for seen in looks):
        raise UsageError("no node could be reached; nothing written")
    text = discover.cluster_file(looks)
    try:
        discover.write(Path(args.output), text, force=args.force)
    except (FileExistsError, OSError) as exc:
        raise UsageError(str(exc)) from None
    sys.stdout.write(text)
    problems.print(Text(f"sparktui: wrote {args.output}", style="green"))
    return 0
