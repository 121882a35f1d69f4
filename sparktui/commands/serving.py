"""``sparktui check --serving URL``: the smoke test of a started server, from this machine.

Each ``--serving`` URL (the server's root, ``http://spark-a:8000``, with or without ``/v1``) gets one short
completion of the model it serves; each gets a verdict (``ready``, ``slow``, ``block``) with its figures or the
reason it failed, and the whole run the worst of them. Exit status as ``diagnose``: 1 when any is ``block``
(the server does not serve), 0 otherwise, 2 for bad usage.

The pre-launch checks of ``sparktui check`` (inventory, drift, the launch command) live in
:mod:`sparktui.commands.check`; this module holds the serving half: :func:`add_arguments` adds its options to
that command's parser and :func:`run` runs them (``--model`` is the command's own: the model to ask).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys

from rich.text import Text

from sparktui.commands.common import UsageError, out
from sparktui.core.errors import Refused
from sparktui.core.serving.smoke import MAX_TOKENS, SLOW_BELOW, Smoke, smoke

#: From the best verdict to the worst.
VERDICTS = ("ready", "slow", "block")
_STYLES = {"ready": "green", "slow": "yellow", "block": "bold red"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The serving options, for ``sparktui check``'s parser."""
    s = parser.add_argument_group("serving (after launch)")
    s.add_argument(
        "--serving",
        action="append",
        default=[],
        metavar="URL",
        help="a started server's address (http://host:8000): send it one short completion; repeatable",
    )
    s.add_argument("--max-tokens", type=int, default=MAX_TOKENS, help=f"tokens to generate (default {MAX_TOKENS})")
    s.add_argument("--timeout", type=float, default=60.0, help="seconds the completion may take (default 60)")
    s.add_argument(
        "--slow-below",
        type=float,
        default=SLOW_BELOW,
        metavar="TOKENS_PER_S",
        help=f"the verdict is slow below this generation speed (default {SLOW_BELOW:g} tokens/s)",
    )


def run(args: argparse.Namespace) -> int:
    """Smoke-test every ``--serving`` URL at once; print the verdicts; the exit status."""
    if args.max_tokens < 1 or args.timeout <= 0 or args.slow_below < 0:
        raise UsageError("--max-tokens must be at least 1, --timeout above 0 and --slow-below at least 0")
    try:
        found = asyncio.run(_all(args))
    except Refused as exc:  # an address that is not one (not http://...): one line, exit 2
        raise UsageError(f"--serving: {exc}") from None
    worst = max((s.verdict for s in found), key=VERDICTS.index)
    if getattr(args, "json", False):
        sys.stdout.write(json.dumps({"verdict": worst, "serving": [as_dict(s) for s in found]}, indent=2) + "\n")
    else:
        console = out()
        for s in found:
            line = Text()
            line.append(f"{s.verdict:<6}", style=_STYLES[s.verdict])
            line.append(f" {s.url}")
            if s.model:
                line.append(f" ({s.model})")
            line.append(f": {s.reason}")
            console.print(line)
    return 1 if worst == "block" else 0


async def _all(args: argparse.Namespace) -> list[Smoke]:
    return list(
        await asyncio.gather(
            *(
                smoke(
                    url,
                    model=args.model,
                    max_tokens=args.max_tokens,
                    timeout=args.timeout,
                    slow_below=args.slow_below,
                )
                for url in args.serving
            )
        )
    )


def as_dict(s: Smoke) -> dict[str, object]:
    return {
        "url": s.url,
        "verdict": s.verdict,
        "reason": s.reason,
        "model": s.model,
        "tokens": s.tokens,
        "seconds": round(s.seconds, 3),
        "first_token_s": None if s.first_token is None else round(s.first_token, 3),
        "tokens_per_s": None if s.tokens_per_s is None else round(s.tokens_per_s, 1),
    }
