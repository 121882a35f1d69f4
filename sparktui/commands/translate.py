"""``sparktui translate``: an SGLang launch command as the ``vllm serve`` that does the same, with each flag
that does not carry over and why (on stderr)."""

from __future__ import annotations

import argparse
import shlex
import sys

from sparktui.commands.common import UsageError, err
from sparktui.richtext import translation_text

NAME = "translate"


def add(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    t = sub.add_parser(NAME, help="translate an SGLang launch command into vllm serve")
    t.add_argument(
        "launch",
        nargs=argparse.REMAINDER,
        metavar="WORD",
        help="the SGLang launch (quoted as one, or its words); stdin if none",
    )
    t.add_argument(
        "--native",
        action="store_true",
        help="vLLM's own multi-node flags (--nnodes, --node-rank, --master-addr) instead of a Ray launch on the head",
    )
    t.set_defaults(run=main)


def main(args: argparse.Namespace) -> int:
    from sparktui.core.launch.sglang_to_vllm import sglang_to_vllm  # its tables load on first use

    words = args.launch
    if not words and sys.stdin.isatty():
        raise UsageError(
            "give the SGLang launch: sparktui translate python3 -m sglang.launch_server ... (or pipe it in)"
        )
    launch = words[0] if len(words) == 1 else shlex.join(words) if words else sys.stdin.read()
    found = sglang_to_vllm(launch, mode="native" if args.native else "ray")
    sys.stdout.write(found.launch + "\n")
    sys.stdout.flush()
    if found.dropped or found.notes:
        err().print(translation_text(found))
    return 0
