"""``sparktui [open] [SOURCE...]``, ``sparktui demo`` and ``sparktui replay BUNDLE``: the cockpit, on live
sources, the cluster file's nodes, a bundle replayed, or the demo (a welcome screen when given nothing)."""

from __future__ import annotations

import argparse
from pathlib import Path

from sparktui.commands.common import (
    UsageError,
    catalogue,
    open_sources,
    signatures_option,
    spool_raw_option,
    trust_option,
)
from sparktui.core import cluster as clusterfile
from sparktui.core.sources import bundle

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


def main(args: argparse.Namespace) -> int:
    from sparktui.tui.app import Session, SparkApp  # Textual loads only for the interface

    found = catalogue(getattr(args, "signatures", []))
    demo = Session("demo: " + DEMO, bundle.load(demo_bundle()), speed=DEMO_SPEED)
    trust = getattr(args, "trust_new_host_key", False)
    session: Session | None = None
    if args.command == "demo":
        session = Session("demo: " + DEMO, demo.bundle, speed=args.speed)
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
            session = Session(" ".join(args.sources), live=tuple(open_sources(args.sources, trust_new_host_key=trust)))
    where = clusterfile.find()
    cluster = clusterfile.load(where) if where is not None else None
    if session is None and cluster is not None:
        sources = open_sources(cluster.source_uris(), trust_new_host_key=trust)
        session = Session(f"cluster {where}", live=tuple(sources))
    raw = getattr(args, "spool_raw", False)
    SparkApp(session, found, demo=demo, cluster=cluster, readonly=args.readonly, spool_raw=raw).run()
    return 0
