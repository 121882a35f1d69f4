"""``sparktui diagnose`` against ripgrep over the same large logs, side by side in one run.

    python bench/diagnose_vs_rg.py [--mb 200] [--big-mb 1024 | --no-big] [--work DIR] [--json OUT]
    python bench/diagnose_vs_rg.py --mb 20 --no-big          # a quick run, well under a minute

The corpora (``bench/corpus.py``) are made of the real captures in ``tests/fixtures``, whole, with host
names and pids made unique per node and per restart:

* **directory**: 256 node logs (``node-000.log`` ...), ``--mb`` MiB in all, the way logs are collected
  from a cluster;
* **shuffled**: the same lines in one file, in a seeded random order, the hardest case for anything that
  keeps state per source, node or process.

Each comes in two sizes, ``--mb`` and ``--big-mb``, so that the growth from one to the other shows.
They are made once per run in a temporary folder, or once for all runs in ``--work DIR``.

What is timed, each as a process of its own: wall clock, and from ``wait4`` the CPU time (user and system,
steadier than the wall clock on a busy machine) and the peak RSS:

* ``rg -F -c -j1`` over the required literals of every signature and stage pattern
  (``sparktui.core.search.literals.required_literals``): the reference, ratio 1.0. No grep-like tool can
  find the lines the catalogue cares about with less work, so this is the fastest thing a user could run
  instead. Patterns without a usable literal are left out of it (their count is printed), which only makes
  the reference faster.
* ``rg -i -c -j1`` over eleven words a person types into a log they know nothing about (error, fail, warn,
  timeout, timed out, traceback, exception, refused, abort, killed, out of memory). ``-i`` because they
  do not know whether a program writes ``ERROR``, ``Error`` or ``error`` (and rg's ``--smart-case`` is
  ``-i`` for words in lower case).
* ``rg -c -j1`` over the full patterns (named groups unnamed, the few rg refuses left out): the third
  reference, what a faithful grep of the catalogue costs. It runs at one or two MiB/s, so by default only
  on the ``--mb`` directory (``--regex all`` or ``none`` to change that).
* ``python -m sparktui diagnose PATH --json``, the command a user runs, from start-up to the JSON on
  stdout (findings counted from it). It runs once untimed beforehand on one fixture, so the Hyperscan
  database is in the cache as it is for every run after a user's first.
* with ``--literal``: ``bench/literal_scan.py``, the pure-Python literal engine (the fallback that must
  stay) straight into the analyser. Opt-in: it is some ten times slower.

``-j1`` keeps rg on one core, as sparktui is in one process. sparktui's directory mode may come to use all
cores (a process pool per file), so on the directory the literal and word rows also run with rg's default
threads: the comparison to make once sparktui does the same. A single file is one thread for rg anyway.
Peak RSS is the largest process of the tree (``ru_maxrss``), not the sum of a pool of workers; rg's
includes the pages of the file it maps, so it grows with a single file's size.

Every corpus is read once before the runs, so all of them read from the page cache. Each row runs
``--repeat`` times (default 1) and the fastest is kept. Then the issue's criteria are checked against the
figures: diagnose on the directory at least 0.5x rg -F (goal 1.0x), diagnose's peak RSS under 300 MB,
the shuffled file within 2x of the directory's time, and the big size within 6x of the small one (for
1024 against 200 MiB; the bound scales with the sizes). ``--json OUT`` writes every figure.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.corpus import Capture, Corpus, load_captures, prepare, remove  # noqa: E402
from sparktui.core import catalogue as cat  # noqa: E402
from sparktui.core.search.literals import required_literals  # noqa: E402

WORDS = (
    "error",
    "fail",
    "warn",
    "timeout",
    "timed out",
    "traceback",
    "exception",
    "refused",
    "abort",
    "killed",
    "out of memory",
)
NAMED_GROUP = re.compile(r"\(\?P<\w+>")
REFERENCE = "rg-literals"


@dataclass(slots=True)
class Row:
    key: str
    run: str
    command: list[str]
    seconds: float = 0.0
    cpu_seconds: float = 0.0  # user and system time of the process tree: steadier than wall time on a busy machine
    peak_rss_mb: float = 0.0
    mib_per_s: float = 0.0
    lines_per_s: float = 0.0
    ratio: float = 0.0  # the reference's seconds over this row's: above 1 is faster than rg -F
    note: str = ""
    counted: int | None = None  # lines rg counted, or findings


@dataclass(slots=True)
class Result:
    kind: str
    mib: float
    lines: int
    files: int
    path: str
    made_s: float | None
    rows: dict[str, Row] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Criterion:
    name: str
    value: float | None
    bound: str
    passed: bool | None
    detail: str


@dataclass(frozen=True, slots=True)
class Patterns:
    literals: Path
    literal_count: int
    without_literal: int
    regexes: Path
    regex_count: int
    all_count: int


def catalogue_patterns(rg: str, work: Path) -> Patterns:
    """Write the pattern files rg reads: the required literals, and the full patterns rg accepts."""
    catalogue = cat.load()
    pats = [p for s in catalogue.signatures for p in s.any]
    pats += [p for t in catalogue.tracks for stage in t.stages for p in stage.any]
    found = [required_literals(p) for p in pats]
    literals = sorted({lit for lits in found for lit in lits or ()})
    # rg joins the patterns into one regex, where repeated group names clash: keep the groups, drop the names.
    unnamed = [NAMED_GROUP.sub("(", p) for p in pats]
    accepted = [p for p in unnamed if rg_accepts(rg, p)]
    (work / "literals.txt").write_text("\n".join(literals) + "\n")
    (work / "regexes.txt").write_text("\n".join(accepted) + "\n")
    return Patterns(
        work / "literals.txt",
        len(literals),
        sum(1 for lits in found if not lits),
        work / "regexes.txt",
        len(accepted),
        len(pats),
    )


def rg_accepts(rg: str, pattern: str) -> bool:
    probe = subprocess.run([rg, "-c", "-e", pattern, "-"], input=b"", capture_output=True)
    return probe.returncode in (0, 1)


def timed(command: list[str], out: Path, env: dict[str, str] | None = None) -> tuple[float, float, float, int]:
    """Run ``command`` with stdout to ``out``: wall seconds, CPU seconds, peak RSS in MiB, exit code."""
    with out.open("wb") as stdout, out.with_suffix(".err").open("wb") as stderr:
        start = time.perf_counter()
        proc = subprocess.Popen(command, stdout=stdout, stderr=stderr, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    return seconds, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, proc.returncode


def rg_count(out: Path) -> int:
    """The lines rg -c counted: one number, or ``path:number`` per file."""
    return sum(int(line.rsplit(b":", 1)[-1]) for line in out.read_bytes().splitlines() if line)


def rows_for(corpus: Corpus, rg: str, patterns: Patterns, *, regex: bool, literal: bool) -> list[Row]:
    path = str(corpus.path)
    rg_ = [rg, "-c", "--no-ignore"]  # --no-ignore: a --work folder may sit in a git checkout
    words = [a for w in WORDS for a in ("-e", w)]
    threads = f"default threads ({os.cpu_count()} cpus)"
    rows = [
        Row(
            REFERENCE,
            f"rg -F -c -j1, {patterns.literal_count} literals (reference)",
            [*rg_, "-j1", "-F", "-f", str(patterns.literals), path],
        )
    ]
    if corpus.kind == "directory":
        rows.append(
            Row(
                "rg-literals-threads",
                f"rg -F -c, literals, {threads}",
                [*rg_, "-F", "-f", str(patterns.literals), path],
            )
        )
    rows.append(Row("rg-words", f"rg -i -c -j1, {len(WORDS)} words a person types", [*rg_, "-j1", "-i", *words, path]))
    if corpus.kind == "directory":
        rows.append(Row("rg-words-threads", f"rg -i -c, words, {threads}", [*rg_, "-i", *words, path]))
    if regex:
        rows.append(
            Row(
                "rg-regex",
                f"rg -c -j1, {patterns.regex_count} full regexes",
                [*rg_, "-j1", "-f", str(patterns.regexes), path],
            )
        )
    rows.append(
        Row("diagnose", "sparktui diagnose --json", [sys.executable, "-m", "sparktui", "diagnose", path, "--json"])
    )
    if literal:
        rows.append(
            Row(
                "literal",
                "literal engine (bench/literal_scan.py)",
                [sys.executable, str(ROOT / "bench" / "literal_scan.py"), path],
            )
        )
    return rows


def child_env() -> dict[str, str]:
    """The environment for sparktui's processes: this checkout's copy of sparktui first."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    return env


def run_row(row: Row, corpus: Corpus, work: Path, repeat: int) -> None:
    out = work / f"{row.key}.out"
    env = child_env() if row.key in ("diagnose", "literal") else None
    best: tuple[float, float, float, int] | None = None
    for _ in range(repeat):
        got = timed(row.command, out, env)
        if got[3] not in (0, 1):
            err = out.with_suffix(".err").read_text(errors="replace").strip().splitlines()
            raise SystemExit(f"bench: {row.run} failed ({got[3]}): {err[-1] if err else 'no message'}")
        best = got if best is None or got[0] < best[0] else best
    assert best is not None
    row.seconds, row.cpu_seconds, row.peak_rss_mb, _ = best
    row.mib_per_s = corpus.mib / row.seconds
    row.lines_per_s = corpus.lines / row.seconds
    if row.key.startswith("rg-"):
        row.counted = rg_count(out)
        row.note = f"{row.counted:,} lines counted"
    elif row.key == "diagnose":
        report = json.loads(out.read_bytes())
        row.counted = len(report["findings"])
        seen = sum(s.get("lines", 0) for s in report["sources"])
        sources = len(report["sources"])
        row.note = f"{row.counted} findings, {sources} source{'s' if sources != 1 else ''}"
        if seen != corpus.lines:
            row.note += f", read {seen:,} lines"
    else:
        report = json.loads(out.read_bytes())
        row.counted = report["findings"]
        row.note = f"{row.counted} findings"


def warm(corpus: Corpus) -> None:
    """Read every file of the corpus once, so that every run reads from the page cache."""
    files = sorted(corpus.path.iterdir()) if corpus.path.is_dir() else [corpus.path]
    for file in files:
        with file.open("rb") as fh:
            while fh.read(1 << 24):
                pass


def print_table(result: Result) -> None:
    made = "kept from an earlier run" if result.made_s is None else f"made in {result.made_s:.1f} s"
    files = f"{result.files} files" if result.files > 1 else "one file"
    print(f"\n{result.kind}, {result.mib:,.0f} MiB in {files}, {result.lines:,} lines ({made})")
    print(f"{'run':<46}{'seconds':>9}{'cpu s':>8}{'MiB/s':>9}{'lines/s':>12}{'peak RSS MB':>13}{'vs rg -F':>10}  note")
    for row in result.rows.values():
        print(
            f"{row.run:<46}{row.seconds:>9.2f}{row.cpu_seconds:>8.2f}{row.mib_per_s:>9.1f}{row.lines_per_s:>12,.0f}"
            f"{row.peak_rss_mb:>13.0f}{row.ratio:>10.2f}  {row.note}"
        )


def criteria(results: dict[tuple[str, str], Result], small: int, big: int | None) -> list[Criterion]:
    """Issue 13's criteria, from the figures of this run; ``None`` where a row they need did not run."""

    def seconds(kind: str, size: str, key: str = "diagnose") -> float | None:
        result = results.get((kind, size))
        row = result.rows.get(key) if result else None
        return row.seconds if row else None

    out: list[Criterion] = []
    d, ref = seconds("directory", "small"), seconds("directory", "small", REFERENCE)
    threaded = seconds("directory", "small", "rg-literals-threads")
    if d and ref:
        ratio = ref / d
        detail = f"diagnose {d:.2f} s, rg -F -j1 {ref:.2f} s"
        if threaded:
            detail += f"; against rg -F with default threads ({threaded:.2f} s): {threaded / d:.2f}x"
        detail += "; goal 1.0x " + ("met" if ratio >= 1.0 else "not met")
        out.append(Criterion(f"diagnose directory {small} MiB vs rg -F", ratio, ">= 0.50x", ratio >= 0.5, detail))
    else:
        out.append(Criterion(f"diagnose directory {small} MiB vs rg -F", None, ">= 0.50x", None, "not run"))
    rss = {
        f"{k} {r.mib:.0f} MiB": r.rows["diagnose"].peak_rss_mb for (k, _), r in results.items() if "diagnose" in r.rows
    }
    if rss:
        worst = max(rss.values())
        detail = ", ".join(f"{name}: {mb:.0f} MB" for name, mb in rss.items())
        out.append(Criterion("diagnose peak RSS", worst, "< 300 MB", worst < 300, detail))
    s = seconds("shuffled", "small")
    if d and s:
        out.append(
            Criterion(
                f"shuffled {small} MiB vs directory",
                s / d,
                "<= 2.00x",
                s / d <= 2,
                f"shuffled {s:.2f} s, directory {d:.2f} s",
            )
        )
    else:
        out.append(Criterion(f"shuffled {small} MiB vs directory", None, "<= 2.00x", None, "not run"))
    for kind in ("directory", "shuffled"):
        a, b = seconds(kind, "small"), seconds(kind, "big")
        name = f"{kind} {big} MiB vs {small} MiB" if big else f"{kind} --big-mb vs {small} MiB"
        if not (a and b and big):
            out.append(Criterion(name, None, "<= 6x at 1024/200", None, "not run"))
            continue
        bound = 6 * (results[(kind, "big")].mib / results[(kind, "small")].mib) / (1024 / 200)
        out.append(Criterion(name, b / a, f"<= {bound:.2f}x", b / a <= bound, f"{b:.2f} s against {a:.2f} s"))
    return out


def print_criteria(found: list[Criterion]) -> None:
    print("\ncriteria")
    for c in found:
        verdict = "n/a " if c.passed is None else "PASS" if c.passed else "FAIL"
        value = "" if c.value is None else f"{c.value:.2f}"
        print(f"  {verdict}  {c.name:<38}{value:>8}  ({c.bound}; {c.detail})")


def rg_version(rg: str) -> str:
    return subprocess.run([rg, "--version"], capture_output=True, text=True).stdout.splitlines()[0]


def measure(
    work: Path,
    scratch: Path,
    kind: str,
    megabytes: int,
    args: argparse.Namespace,
    rg: str,
    patterns: Patterns,
    captures: list[Capture],
    *,
    regex: bool,
) -> Result:
    """Make (or find) one corpus and time every row on it."""
    start = time.perf_counter()
    corpus, made = prepare(work, kind, megabytes, args.nodes, args.seed, captures)
    made_s = time.perf_counter() - start if made else None
    result = Result(kind, corpus.mib, corpus.lines, corpus.files, str(corpus.path), made_s)
    warm(corpus)
    for row in rows_for(corpus, rg, patterns, regex=regex, literal=args.literal):
        run_row(row, corpus, scratch, args.repeat)
        result.rows[row.key] = row
    reference = result.rows[REFERENCE].seconds
    for row in result.rows.values():
        row.ratio = reference / row.seconds
    return result


def write_json(
    out: Path, rg: str, patterns: Patterns, results: dict[tuple[str, str], Result], found: list[Criterion]
) -> None:
    figures = {
        "machine": {"rg": rg_version(rg), "python": platform.python_version(), "cpus": os.cpu_count()},
        "patterns": {k: v for k, v in asdict(patterns).items() if not isinstance(v, Path)},
        "words": list(WORDS),
        "corpora": [
            {"size": size, **asdict(r), "rows": [asdict(row) for row in r.rows.values()]}
            for (_, size), r in results.items()
        ],
        "criteria": [asdict(c) for c in found],
    }
    out.write_text(json.dumps(figures, indent=1) + "\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mb", type=int, default=200, help="size of each corpus in MiB (default 200)")
    parser.add_argument("--big-mb", type=int, default=1024, help="size of the big corpora in MiB (default 1024)")
    parser.add_argument("--no-big", action="store_true", help="leave out the big corpora")
    parser.add_argument("--nodes", type=int, default=256, help="node logs in the directory corpus (default 256)")
    parser.add_argument(
        "--corpus", choices=("directory", "shuffled"), action="append", help="run only this corpus (repeatable)"
    )
    parser.add_argument(
        "--regex",
        choices=("small", "all", "none"),
        default="small",
        help="where the full-regex rg row runs: the --mb directory (default), every corpus, or none",
    )
    parser.add_argument("--literal", action="store_true", help="also time the pure-Python literal engine")
    parser.add_argument("--repeat", type=int, default=1, help="runs per row, the fastest kept (default 1)")
    parser.add_argument("--seed", type=int, default=13, help="seed of the corpora (default 13)")
    parser.add_argument("--work", type=Path, help="keep the corpora in DIR and reuse them in later runs")
    parser.add_argument("--json", type=Path, metavar="OUT", help="write every figure to OUT as JSON")
    args = parser.parse_args()
    rg = shutil.which("rg")
    if rg is None:
        print("bench: ripgrep (rg) is not on the PATH; install it (Debian: apt-get install ripgrep)", file=sys.stderr)
        return 2
    kinds = args.corpus or ["directory", "shuffled"]
    sizes = [("small", args.mb)] + ([] if args.no_big else [("big", args.big_mb)])
    tmp = None if args.work else tempfile.TemporaryDirectory(prefix="sparktui-bench-", dir="/tmp")
    work = Path(tmp.name) if tmp else args.work
    work.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="runs-", dir=work))
    try:
        patterns = catalogue_patterns(rg, scratch)
        captures = load_captures()
        print(
            f"{rg_version(rg)}, Python {platform.python_version()}, {os.cpu_count()} cpus; catalogue: "
            f"{patterns.all_count} patterns, {patterns.literal_count} required literals "
            f"({patterns.without_literal} patterns have none), {patterns.regex_count} regexes rg accepts; "
            f"{len(captures)} captures"
        )
        warmup = ROOT / "tests" / "fixtures" / "nccl4" / "four-hosts-rank-oom"
        subprocess.run(
            [sys.executable, "-m", "sparktui", "diagnose", str(warmup), "--json"], env=child_env(), capture_output=True
        )
        results: dict[tuple[str, str], Result] = {}
        for size, mb in sizes:
            for kind in kinds:
                regex = args.regex == "all" or (args.regex == "small" and (size, kind) == ("small", "directory"))
                result = measure(work, scratch, kind, mb, args, rg, patterns, captures, regex=regex)
                results[(kind, size)] = result
                print_table(result)
            if tmp is not None:  # the corpora of one size are done with: make room for the next
                for stale in work.glob(f"*-{mb}mb*"):
                    remove(stale)
        found = criteria(results, args.mb, None if args.no_big else args.big_mb)
        print_criteria(found)
        if args.json:
            write_json(args.json, rg, patterns, results, found)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        if tmp is not None:
            tmp.cleanup()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
