"""Memory per NCCL communicator the analysis tracks (trial 2026-12b §4 item 17, N25: 10^6 communicators took
4.1 GB, about 4 kB each where the README said about 2 kB).

A captured ``Init START`` line (tests/fixtures/nccl4/four-hosts-rank-oom/rank1.log) is repeated N times with its
``comm`` pointer and ``commId`` made distinct, as a process that makes communicators endlessly would print it,
and fed to the analysis in blocks as ``diagnose`` feeds a file. tracemalloc measures what the analysis holds
once every line is in (after a collection), less what it held before the first: that over N is the figure.

    python bench/communicators.py [--n 100000] [--block 10000]
"""

from __future__ import annotations

import argparse
import gc
import re
import time
import tracemalloc
from pathlib import Path

from sparktui.core import catalogue
from sparktui.core.analysis.analyzer import Analyzer

CAPTURE = Path(__file__).resolve().parents[1] / "tests/fixtures/nccl4/four-hosts-rank-oom/rank1.log"


def init_start() -> str:
    """The capture's first ``Init START`` line."""
    return next(line for line in CAPTURE.read_text().splitlines() if line.endswith("Init START"))


def lines(n: int) -> list[str]:
    """``n`` copies of the line, the ``n``-th with ``comm`` and ``commId`` of its own (as wide as the real ones)."""
    line = init_start()
    comm = re.search(r"comm (0x[0-9a-f]+)", line)
    ident = re.search(r"commId (0x[0-9a-f]+)", line)
    assert comm and ident
    head, middle, tail = line[: comm.start(1)], line[comm.end(1) : ident.start(1)], line[ident.end(1) :]
    return [f"{head}0x{i:08x}{middle}0x{i:016x}{tail}" for i in range(1, n + 1)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000, help="communicators (default 100,000)")
    parser.add_argument("--block", type=int, default=10_000, help="lines per block fed (default 10,000)")
    args = parser.parse_args()
    made = lines(args.n)
    analyzer = Analyzer(catalogue.load())
    analyzer.add_source("rank1.log", "")
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    started = time.perf_counter()
    for at in range(0, len(made), args.block):
        analyzer.feed("rank1.log", "\n".join(made[at : at + args.block]))
    fed = time.perf_counter() - started
    gc.collect()
    held, peak = tracemalloc.get_traced_memory()
    snapshot = tracemalloc.take_snapshot()
    tracemalloc.stop()
    units = len(analyzer.correlation.tracker.units)
    print(f"{args.n:,} communicators ({units:,} units tracked), fed in {fed:.1f} s under tracemalloc")
    print(f"held: {(held - before) / args.n:,.0f} bytes per communicator; peak {(peak - before) / args.n:,.0f}")
    print("largest holders (by line of allocation):")
    for stat in snapshot.statistics("lineno")[:8]:
        print(f"  {stat.size / args.n:8,.0f} B/comm  {stat.traceback[0]}")


if __name__ == "__main__":
    main()
