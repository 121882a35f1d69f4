"""Diagnosis accuracy: how often the first finding of ``sparktui diagnose`` names the labelled root cause.

    python bench/accuracy.py [--corpus DIR] [--fixtures DIR] [--only wild|fixtures] [--sealed BATCH] [--json OUT]

Two corpora, each case diagnosed by the CLI in a subprocess (``python -m sparktui diagnose --json --quiet``),
several at a time:
  * wild (``--corpus``, default ``<repo>/../shared/corpus/wild``): real logs from public bug reports, one folder
    per case with ``log.txt`` and ``label.toml``. A failure case is right when the first finding's category is
    the label's ``category`` or one of its ``accept`` categories.
  * fixtures (``--fixtures``, default ``<repo>/tests/fixtures``): every ``<group>/<case>/`` directory, judged by
    ``expected.toml``. A ``root`` case is right when the first finding has that signature; its category (for
    grouping) is the one the JSON output gives that signature. ``quiet = true`` cases are healthy. A capture
    scored before anyone studied it says so: ``unseen = { date = "YYYY-MM-DD", right = true|false }``, whether
    its first finding then had the category now expected, with ``wave = N`` where one day saw several waves of
    captures each studied before the next; they are reported per date and wave, then and now.
A healthy case is right when no finding has severity ``error`` or ``critical``; one that has is a false positive.

The wild corpus is reported per collection batch (a label's ``batch``, 1 where it has none): a batch that nobody
has studied yet is scored with ``--sealed BATCH``, which prints its figures but not which of its cases were wrong
nor what they gave, and leaves its cases out of ``--json``, so that scoring it does not teach its contents.

Prints, per corpus, top-1 accuracy per label category, over all failure cases and over the hang cases
(``nccl_multinode_hang``), the healthy false positives, then one line per wrong case. ``--json OUT`` also
writes the per-case results, for comparing two runs. Exit status 0, or 2 when a corpus directory is missing.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import tomllib
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
DEFAULT_CORPUS = REPO.parent / "shared" / "corpus" / "wild"
DEFAULT_FIXTURES = REPO / "tests" / "fixtures"
HEALTHY = "healthy_startup"
HANG = "nccl_multinode_hang"
SEVERE = frozenset({"error", "critical"})
CASE_TIMEOUT_S = 120


@dataclass(frozen=True)
class Case:
    """One input to diagnose and what its first finding should be."""

    corpus: str
    name: str
    path: Path
    healthy: bool
    category: str | None = None  # None for a fixture: its category comes from the signature `root`
    accept: tuple[str, ...] = ()
    root: str | None = None
    batch: int | None = None  # the wild corpus's collection batch; None for a fixture
    unseen: tuple[str, bool] | None = None  # a fixture scored before study: the date, and whether it was right


@dataclass(frozen=True)
class Run:
    """What one diagnose run produced: its findings, or why it gave none."""

    findings: list[dict[str, Any]]
    error: str | None
    seconds: float


@dataclass
class Result:
    """One judged case, as printed and as written by ``--json``."""

    corpus: str
    case: str
    expected: str
    healthy: bool
    correct: bool
    first: dict[str, str] | None
    severe: list[str]
    error: str | None
    seconds: float
    accept: list[str] = field(default_factory=list)
    root: str | None = None
    batch: int | None = None
    unseen: tuple[str, bool] | None = None


def wild_cases(corpus: Path) -> list[Case]:
    cases = []
    for label_path in sorted(corpus.glob("*/label.toml")):
        label = tomllib.loads(label_path.read_text(encoding="utf-8"))
        healthy = bool(label.get("healthy", False))
        cases.append(
            Case(
                corpus="wild",
                name=label_path.parent.name,
                path=label_path.parent / "log.txt",
                healthy=healthy,
                category=HEALTHY if healthy else label["category"],
                accept=tuple(label.get("accept", ())),
                batch=int(label.get("batch", 1)),
            )
        )
    return cases


def fixture_cases(fixtures: Path) -> tuple[list[Case], list[str]]:
    """The labelled fixture cases, and the names of case directories that ``expected.toml`` does not label."""
    expected = tomllib.loads((fixtures / "expected.toml").read_text(encoding="utf-8"))
    cases, unlabelled = [], []
    for directory in sorted(p for p in fixtures.glob("*/*") if p.is_dir()):
        name = f"{directory.parent.name}/{directory.name}"
        entry = expected.get(name, {})
        unseen = (_captured(entry["unseen"]), bool(entry["unseen"]["right"])) if "unseen" in entry else None
        if entry.get("quiet"):
            case = Case(corpus="fixtures", name=name, path=directory, healthy=True, category=HEALTHY, unseen=unseen)
            cases.append(case)
        elif "root" in entry:
            case = Case(corpus="fixtures", name=name, path=directory, healthy=False, root=entry["root"], unseen=unseen)
            cases.append(case)
        else:
            unlabelled.append(name)
    return cases, unlabelled


def diagnose(path: Path) -> Run:
    command = [sys.executable, "-m", "sparktui", "diagnose", "--json", "--quiet", str(path)]
    start = time.perf_counter()
    try:
        proc = subprocess.run(command, capture_output=True, text=True, cwd=REPO, timeout=CASE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return Run([], f"timed out after {CASE_TIMEOUT_S} s", time.perf_counter() - start)
    seconds = time.perf_counter() - start
    stderr_tail = (proc.stderr.strip().splitlines() or [""])[-1]
    if proc.returncode not in (0, 1):
        return Run([], f"exit {proc.returncode}: {stderr_tail}", seconds)
    try:
        findings = json.loads(proc.stdout)["findings"]
    except (json.JSONDecodeError, KeyError, TypeError):
        return Run([], f"exit {proc.returncode}, no JSON findings: {stderr_tail}", seconds)
    return Run(findings, None, seconds)


def signature_categories(runs: Iterable[Run]) -> dict[str, str]:
    return {f["signature"]: f["category"] for run in runs for f in run.findings}


def judge(case: Case, run: Run, categories: dict[str, str]) -> Result:
    first = run.findings[0] if run.findings else None
    severe = [f["signature"] for f in run.findings if f["severity"] in SEVERE]
    if run.error is not None:
        correct = False
    elif case.healthy:
        correct = not severe
    elif case.root is not None:
        correct = first is not None and first["signature"] == case.root
    else:
        correct = first is not None and first["category"] in (case.category, *case.accept)
    expected = case.category or categories.get(case.root or "", f"unknown ({case.root})")
    return Result(
        corpus=case.corpus,
        case=case.name,
        expected=expected,
        healthy=case.healthy,
        correct=correct,
        first={k: first[k] for k in ("category", "signature", "severity", "title")} if first else None,
        severe=severe,
        error=run.error,
        seconds=round(run.seconds, 3),
        accept=list(case.accept),
        root=case.root,
        batch=case.batch,
        unseen=case.unseen,
    )


def score_line(label: str, results: list[Result]) -> str:
    right = sum(r.correct for r in results)
    accuracy = f"{100 * right / len(results):.1f}%" if results else "-"
    return f"  {label:<40} {len(results):>5} {right:>6} {accuracy:>9}"


def outcome(result: Result) -> str:
    if result.error is not None:
        return f"error: {result.error}"
    if result.first is None:
        return "no finding"
    first = result.first
    return f"{first['category']}/{first['signature']} [{first['severity']}]"


def report(title: str, results: list[Result], unlabelled: list[str], sealed: bool = False) -> None:
    failures = [r for r in results if not r.healthy]
    healthy = [r for r in results if r.healthy]
    print(f"== {title}: {len(results)} cases ==")
    print(f"  {'category':<40} {'cases':>5} {'top-1':>6} {'accuracy':>9}")
    for category in sorted({r.expected for r in failures}):
        print(score_line(category, [r for r in failures if r.expected == category]))
    print(score_line("total (failure cases)", failures))
    print(score_line(f"hang ({HANG})", [r for r in failures if r.expected == HANG]))
    false_positives = [r for r in healthy if r.severe]
    print(f"  healthy: {len(healthy)} cases, {len(false_positives)} with an error/critical finding (false positives)")
    silent = [r for r in failures if r.error is None and r.first is None]
    print(f"  failure cases with no finding at all: {len(silent)}")
    if sealed:
        print("  sealed: which cases were wrong is not shown")
        print()
        return
    for r in false_positives:
        print(f"    {r.case}: {', '.join(r.severe)}")
    errors = [r for r in results if r.error is not None]
    if errors:
        print(f"  errors: {len(errors)} cases did not diagnose (listed below)")
    if unlabelled:
        print(f"  not in expected.toml, skipped: {', '.join(unlabelled)}")
    wrong = [r for r in results if not r.correct]
    print(f"  wrong: {len(wrong)}")
    for r in wrong:
        expected = f"{r.expected} (root {r.root})" if r.root else r.expected
        print(f"    {r.case}: expected {expected}; first: {outcome(r)}")
    print()


def _captured(unseen: dict[str, object]) -> str:
    """When a wave of captures was scored: its date, and its wave where that day had several."""
    wave = unseen.get("wave")
    return f"{unseen['date']}{f' (wave {wave})' if wave else ''}"


def report_unseen(results: list[Result]) -> None:
    """The fixtures scored before anyone studied them, per date and wave: right first then, and now."""
    if any(r.unseen is not None for r in results):
        print("== fixtures scored before study ==")
    for date in sorted({r.unseen[0] for r in results if r.unseen is not None}):
        batch = [r for r in results if r.unseen is not None and r.unseen[0] == date]
        then = sum(r.unseen[1] for r in batch if r.unseen is not None)
        now = sum(r.correct for r in batch)
        print(f"  captured {date}, scored before study: {then} of {len(batch)} right then, {now} now")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS, metavar="DIR", help="wild corpus directory")
    parser.add_argument("--fixtures", type=Path, default=DEFAULT_FIXTURES, metavar="DIR", help="fixtures directory")
    parser.add_argument("--only", choices=("wild", "fixtures"), help="run one corpus only")
    parser.add_argument(
        "--sealed",
        type=int,
        action="append",
        default=[],
        metavar="BATCH",
        help="a wild batch not yet studied: print its figures only (repeatable)",
    )
    parser.add_argument("--json", type=Path, metavar="OUT", help="also write the per-case results to OUT")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    corpora = {"wild": args.corpus, "fixtures": args.fixtures}
    selected = [args.only] if args.only else list(corpora)
    for name in selected:
        required = corpora[name] / "expected.toml" if name == "fixtures" else corpora[name]
        if not required.exists():
            print(f"accuracy: {name} corpus not found: {required}", file=sys.stderr)
            return 2
    cases = wild_cases(args.corpus) if "wild" in selected else []
    unlabelled: list[str] = []
    if "fixtures" in selected:
        fixtures, unlabelled = fixture_cases(args.fixtures)
        cases += fixtures
    workers = os.cpu_count() or 4
    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=workers) as pool:
        runs = list(pool.map(diagnose, (case.path for case in cases)))
    elapsed = time.perf_counter() - start
    categories = signature_categories(runs)
    results = [judge(case, run, categories) for case, run in zip(cases, runs, strict=True)]
    if "wild" in selected:
        wild = [r for r in results if r.corpus == "wild"]
        for batch in sorted({r.batch for r in wild if r.batch is not None}):
            title = f"wild batch {batch} ({args.corpus})"
            report(title, [r for r in wild if r.batch == batch], [], sealed=batch in args.sealed)
    if "fixtures" in selected:
        fixture_results = [r for r in results if r.corpus == "fixtures"]
        report(f"fixtures ({args.fixtures})", fixture_results, unlabelled)
        report_unseen(fixture_results)
    print(f"{len(cases)} cases in {elapsed:.1f} s ({workers} workers)")
    if args.json:
        shown = [r for r in results if r.batch not in args.sealed]
        payload = {"elapsed_s": round(elapsed, 2), "results": [asdict(r) for r in shown]}
        args.json.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
