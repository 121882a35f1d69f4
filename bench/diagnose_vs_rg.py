"""Throughput of the diagnosis pipeline against ripgrep counting the same patterns, in the same run.

    python bench/diagnose_vs_rg.py [--mb 200]

Builds a large log from the real captured fixtures (repeated until it reaches the size asked for),
then times, on that one file:
  * ``rg -c`` with every signature and stage pattern (``-f`` pattern file), the reference;
  * ``rg -c -F`` with only the patterns' required literals: the floor for any grep-like prefilter;
  * sparktui's full pipeline (read, decode, match, classify hits, stage tracking, ranking) with the
    Hyperscan engine and with the pure-Python literal engine.
Prints lines per second and the ratio to ripgrep side by side. Needs ``rg`` on the PATH.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from sparktui.core import catalogue as cat
from sparktui.core.analysis.analyzer import Analyzer
from sparktui.core.analysis.literals import required_literals
from sparktui.core.analysis.matcher import Engine, HyperscanEngine, LiteralEngine
from sparktui.core.sources.files import FileSource

ROOT = Path(__file__).resolve().parents[1]
NAMED_GROUP = re.compile(r"\(\?P<\w+>")


def build_log(path: Path, megabytes: int) -> int:
    corpus = b"".join(p.read_bytes() for p in sorted((ROOT / "tests" / "fixtures").rglob("*.log")))
    want = megabytes << 20
    with path.open("wb") as fh:
        written = 0
        while written < want:
            fh.write(corpus)
            written += len(corpus)
    return path.read_bytes().count(b"\n")


def patterns(catalogue: cat.Catalogue) -> list[str]:
    out = [p for s in catalogue.signatures for p in s.any]
    out += [p for t in catalogue.tracks for stage in t.stages for p in stage.any]
    return out


def rg_accepts(rg: str, pattern: str) -> bool:
    probe = subprocess.run([rg, "-c", "-e", pattern, "-"], input=b"", capture_output=True)
    return probe.returncode in (0, 1)


def time_rg(rg: str, pats: list[str], log: Path, workdir: Path, *flags: str) -> float:
    pattern_file = workdir / "patterns.txt"
    pattern_file.write_text("\n".join(pats) + "\n")
    start = time.perf_counter()
    subprocess.run([rg, "-c", "-j1", *flags, "-f", str(pattern_file), str(log)], check=True, capture_output=True)
    return time.perf_counter() - start


def time_sparktui(catalogue: cat.Catalogue, log: Path, engine: type[Engine]) -> tuple[float, int]:
    analyzer = Analyzer(catalogue, engine)  # compiled (and cached) before the clock starts
    source = FileSource(log, log.name)
    start = time.perf_counter()
    analyzer.add_source(source.name, source.default_node())
    for block in source.blocks():
        analyzer.feed(source.name, block)
    diagnosis = analyzer.finish()
    return time.perf_counter() - start, len(diagnosis.findings)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mb", type=int, default=200, help="size of the generated log in MiB (default 200)")
    args = parser.parse_args()
    rg = shutil.which("rg")
    if rg is None:
        print("bench: ripgrep (rg) is not on the PATH; install it (Debian: apt-get install ripgrep)", file=sys.stderr)
        return 2
    catalogue = cat.load()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        log = work / "big.log"
        lines = build_log(log, args.mb)
        size = log.stat().st_size / (1 << 20)
        all_pats = patterns(catalogue)
        # rg joins the patterns into one regex, where repeated group names clash: keep the groups, drop the names.
        unnamed = [NAMED_GROUP.sub("(", p) for p in all_pats]
        rg_pats = [p for p in unnamed if rg_accepts(rg, p)]
        rg_time = time_rg(rg, rg_pats, log, work)
        literals = sorted({lit for p in all_pats for lit in required_literals(p) or ()})
        fixed_time = time_rg(rg, literals, log, work, "-F")
        print(f"log: {size:.0f} MiB, {lines:,} lines; patterns: {len(all_pats)} ({len(rg_pats)} accepted by rg)")
        print(f"{'run':<34}{'seconds':>9}{'lines/s':>14}{'vs rg -c':>10}")
        print(f"{'rg -c -j1 (reference)':<34}{rg_time:>9.2f}{lines / rg_time:>14,.0f}{1.0:>10.2f}")
        label = f"rg -c -j1 -F, {len(literals)} literals only"
        print(f"{label:<34}{fixed_time:>9.2f}{lines / fixed_time:>14,.0f}{rg_time / fixed_time:>10.2f}")
        for label, engine in (
            ("sparktui diagnose, hyperscan", HyperscanEngine),
            ("sparktui diagnose, literal", LiteralEngine),
        ):
            seconds, findings = time_sparktui(catalogue, log, engine)
            print(
                f"{label:<34}{seconds:>9.2f}{lines / seconds:>14,.0f}{rg_time / seconds:>10.2f}  ({findings} findings)"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
