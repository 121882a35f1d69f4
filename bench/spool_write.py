"""What keeping the spool costs a live session, redacted (the default) and raw, in one run.

    python bench/spool_write.py [--mb 20] [--repeat 3]

Builds a log of the real captured fixtures (repeated until it reaches the size asked for) and follows it
from its start, as ``sparktui diagnose --follow`` does, through the whole pipeline (reading, matching,
stage tracking), until every line has arrived:
  * with no spool (``--no-spool``);
  * with the spool as received (``--spool-raw``);
  * with the redacted spool, the default;
and, as the reference, ``cp`` of the same file: the least a user could run to keep a copy. Prints wall
and CPU seconds and lines per second side by side, the best of a few runs of each taken in turns.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from sparktui.core import catalogue as cat
from sparktui.core.pipeline import run
from sparktui.core.settings import SpoolSettings
from sparktui.core.sources.follow import FollowedFile
from sparktui.core.sources.spool import Spool

ROOT = Path(__file__).resolve().parents[1]


def build_log(path: Path, megabytes: int) -> int:
    corpus = b"".join(p.read_bytes() for p in sorted((ROOT / "tests" / "fixtures").rglob("*.log")))
    with path.open("wb") as fh:
        for _ in range(max(1, (megabytes << 20) // len(corpus))):
            fh.write(corpus)
    return path.read_bytes().count(b"\n")


def follow(catalogue: cat.Catalogue, log: Path, lines: int, spool: Spool | None) -> tuple[float, float]:
    """Seconds until every line arrived: on the wall clock, and of CPU (every thread of the process; the
    figure to compare on a busy machine)."""
    start, cpu = time.perf_counter(), time.process_time()
    pipeline = run(catalogue, [FollowedFile(log, log.name, poll=0.01)], spool=spool, show=False, refresh=False)
    while pipeline.lines < lines:
        time.sleep(0.005)
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    pipeline.stop()
    asyncio.run(asyncio.to_thread(pipeline.wait))
    return seconds, cpu


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mb", type=int, default=20, help="size of the generated log in MiB (default 20)")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each, the best kept (default 3)")
    args = parser.parse_args()
    catalogue = cat.load()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        log = work / "big.log"
        lines = build_log(log, args.mb)
        follow(catalogue, log, lines, None)  # imports, the pattern database, the page cache
        start = time.perf_counter()
        subprocess.run(["cp", str(log), str(work / "copy.log")], check=True)
        copied = time.perf_counter() - start
        keep = SpoolSettings()
        runs = {"diagnose --follow --no-spool": None, "diagnose --follow --spool-raw": True}
        runs["diagnose --follow (redacted spool)"] = False
        best: dict[str, tuple[float, float]] = {}
        for _ in range(args.repeat):  # in turns, so that a busy moment of the machine hits each alike
            for label, raw in runs.items():
                spool = None if raw is None else Spool.new("bench", raw=raw, root=work, keep=keep)
                wall, cpu = follow(catalogue, log, lines, spool)
                best[label] = min(best.get(label, (wall, cpu)), (wall, cpu), key=lambda t: t[1])
                shutil.rmtree(work / "incidents", ignore_errors=True)
        print(f"log: {log.stat().st_size / (1 << 20):.0f} MiB, {lines:,} lines; best of {args.repeat} by CPU")
        print(f"{'run':<38}{'seconds':>9}{'CPU s':>8}{'lines/s':>12}{'lines/CPU s':>13}")
        print(f"{'cp (reference)':<38}{copied:>9.2f}{'':>8}{lines / copied:>12,.0f}")
        for label, (wall, cpu) in best.items():
            print(f"{label:<38}{wall:>9.2f}{cpu:>8.2f}{lines / wall:>12,.0f}{lines / cpu:>13,.0f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
