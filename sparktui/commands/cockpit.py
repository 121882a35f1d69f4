"""``sparktui [open] [SOURCE...]``, ``sparktui demo`` and ``sparktui replay BUNDLE``: the cockpit, on live
sources, the cluster file's nodes, a bundle replayed, or the demo (a welcome screen when given nothing)."""

from __future__ import annotations

import argparse
import contextlib
import math
import os
from pathlib import Path
from typing import TYPE_CHECKING

from rich.text import Text

from sparktui.commands import native_stderr
from sparktui.commands.common import (
    UsageError,
    catalogue,
    err,
    open_sources,
    signatures_option,
    spool_raw_option,
    trust_option,
)
from sparktui.core import cluster as clusterfile
from sparktui.core.sources import bundle, files
from sparktui.core.sources.open import ssh_targets
from sparktui.core.text import display

if TYPE_CHECKING:
    from sparktui.tui.session import Session  # Textual loads only for the interface

NAMES = ("open", "demo", "replay")
DEMO = "second-communicator"
DEMO_SPEED = 20.0


def add(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    o = sub.add_parser("open", help="open the cockpit on sources (also: sparktui SOURCE...)")
    o.add_argument("sources", nargs="*", metavar="SOURCE")
    trust_option(o)
    spool_raw_option(o)
    signatures_option(o)
    m = sub.add_parser("demo", help="replay a built-in incident captured from real runs")
    m.add_argument("--speed", type=float, default=DEMO_SPEED, help=f"times real time (default {DEMO_SPEED:g})")
    r = sub.add_parser("replay", help="replay an incident bundle as if live")
    r.add_argument("bundle", metavar="BUNDLE")
    r.add_argument("--speed", type=float, default=1.0, help="times real time; 0 for all at once (default 1)")
    signatures_option(r)
    for cockpit in (o, m, r):
        cockpit.add_argument("--readonly", action="store_true", help="run only read-only playbooks from the cockpit")
        cockpit.set_defaults(run=main)


def demo_bundle() -> Path:
    return Path(__file__).resolve().parents[1] / "demo" / DEMO


def keys_from_terminal() -> None:
    """Make sure the cockpit's keys come from the terminal. Textual reads them from descriptor 0: when standard
    input is a pipe or a file (``cat rank0.log | sparktui -``), log bytes would become key presses (and ``-``
    and Textual would share what comes). Standard input then moves to a descriptor of its own, which ``-``
    reads, and the terminal (``/dev/tty``) takes descriptor 0. With no terminal at all, a one-line refusal."""
    if os.isatty(0):
        return
    try:
        terminal = os.open("/dev/tty", os.O_RDWR | os.O_NOCTTY)
    except OSError as exc:
        raise UsageError(
            f"the cockpit needs a terminal for its keys, and there is none (/dev/tty: {exc.strerror or exc}); "
            "without one, use `sparktui diagnose`"
        ) from None
    with contextlib.suppress(OSError):  # no standard input at all: nothing to keep for `-`
        files.stdin_fd = os.dup(0)
    if terminal != 0:  # 0 when standard input was closed: the terminal took its place already
        os.dup2(terminal, 0)
        os.close(terminal)


def live_session(sources: list[str], *, trust_new_host_key: bool = False) -> Session:
    """The cockpit's session on live ``sources``, with the SSH nodes they are read from (where ``W`` reads the
    stacks when no cluster file names the nodes)."""
    from sparktui.tui.session import Session

    live = tuple(open_sources(sources, trust_new_host_key=trust_new_host_key))
    return Session(" ".join(sources), live=live, nodes=tuple(ssh_targets(sources).items()))


def main(args: argparse.Namespace) -> int:
    speed = getattr(args, "speed", 1.0)
    if not (math.isfinite(speed) and speed >= 0):
        raise UsageError(f"--speed: {speed:g} is no speed: give times real time, or 0 for all at once")
    keys_from_terminal()
    from sparktui.tui.factory import demo, make_app  # Textual loads only for the interface
    from sparktui.tui.session import Session

    found = catalogue(getattr(args, "signatures", []))
    trust = getattr(args, "trust_new_host_key", False)
    session: Session | None = None
    if args.command == "demo":
        session = demo(demo_bundle(), args.speed)
    elif args.command == "replay":
        path = Path(args.bundle)
        if not bundle.is_bundle(path):
            raise UsageError(f"{path}: not a bundle (no bundle.toml)")
        loaded = bundle.load(path)
        session = Session(f"replay: {loaded.title}", loaded, speed=args.speed)
    elif args.sources:
        if len(args.sources) == 1 and bundle.is_bundle(Path(args.sources[0])):
            loaded = bundle.load(Path(args.sources[0]))
            session = Session(f"replay: {loaded.title}", loaded, speed=1.0)
        else:
            session = live_session(args.sources, trust_new_host_key=trust)
    where = clusterfile.find()
    cluster = clusterfile.load(where) if where is not None else None
    if session is None and cluster is not None:
        sources = open_sources(cluster.source_uris(), trust_new_host_key=trust)
        session = Session(f"cluster {where}", live=tuple(sources))
    raw = getattr(args, "spool_raw", False)
    app = make_app(
        session,
        catalogue=found,
        demo_at=demo_bundle(),
        demo_speed=DEMO_SPEED,
        cluster=cluster,
        readonly=args.readonly,
        spool_raw=raw,
    )
    app.run()
    if native := native_stderr.said():  # Ray's own warnings, kept off the screen while it ran
        err().print(Text(display(f"sparktui: {native}"), style="dim"))
    return 0
