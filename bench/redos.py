"""A user signature that backtracks without bound, against a line that sets it off, with each engine.

    python bench/redos.py [--kb 100] [--cap 30]

Writes one log line of ``--kb`` kB of ``a`` followed by ``!`` (what makes ``(a+)+$`` try every way of
splitting the run) and three user signature folders: ``(a+)+$`` itself (no literal: left out on load),
``aaaa(a+)+$`` (a literal, so it loads), and ``aaaa(a+)+$(?(1)|x)`` (syntax Hyperscan rejects, so the
literal engine proposes it). Then times ``sparktui diagnose --signatures DIR`` on it, in a process of its
own, with Hyperscan and with the pure-Python engine, side by side with the same run without the time budget
and without the checks on load (what sparktui did before them), stopped after ``--cap`` seconds, and with
the references: the run without the signature, and ``rg -c`` with the pattern (ripgrep has no
backtracking). Needs ``rg`` on the PATH.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.catalogue.test_loader import NESTED_REPEATS  # noqa: E402  (the tests' own signature)

PATTERNS = {"no-literal": "(a+)+$", "literal": "aaaa(a+)+$", "hyperscan-rejects": "aaaa(a+)+$(?(1)|x)"}
#: The CLI as it was before the time budget and the checks on load: neither is applied.
UNGUARDED = """
import sys
from sparktui.cli import main
from sparktui.commands import common
from sparktui.core import catalogue
from sparktui.core.analysis import matcher
matcher.BUDGET_FLOOR = 1e9
common.userfiles.load = catalogue.load
sys.exit(main(sys.argv[1:]))
"""


def timed(command: list[str], engine: str, cap: float) -> tuple[float | None, str]:
    """Seconds the command took (None past ``cap``) and the warnings of its diagnosis."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "SPARKTUI_ENGINE": engine}
    start = time.perf_counter()
    try:
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=cap)
    except subprocess.TimeoutExpired:
        return None, ""
    seconds = time.perf_counter() - start
    warnings = json.loads(done.stdout)["warnings"] if done.stdout.startswith("{") else [done.stderr.strip()]
    return seconds, "; ".join(w.split(": ", 2)[-1][:60] for w in warnings)


def shown(seconds: float | None, cap: float) -> str:
    return f"> {cap:.0f} (stopped)" if seconds is None else f"{seconds:.2f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kb", type=int, default=100, help="length of the run of a, in kB (default 100)")
    parser.add_argument("--cap", type=float, default=30.0, help="seconds after which a run is stopped (default 30)")
    args = parser.parse_args()
    rg = shutil.which("rg")
    if rg is None:
        print("bench: ripgrep (rg) is not on the PATH; install it (Debian: apt-get install ripgrep)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        log = work / "a.log"
        log.write_text("a" * (args.kb * 1000) + "!\n")
        diagnose = [sys.executable, "-m", "sparktui", "diagnose", "--json", "--quiet", "-j", "1", str(log)]
        start = time.perf_counter()
        subprocess.run([rg, "-c", "(a+)+$", str(log)], capture_output=True)
        print(f"line: {args.kb} kB of a, then !; rg -c '(a+)+$' (reference): {time.perf_counter() - start:.2f} s")
        print(f"{'engine':<10}{'user pattern':<22}{'seconds':>10}{'unguarded':>16}  warning")
        for engine, label in (("", "hyperscan"), ("pure", "pure")):
            alone, _ = timed(diagnose, engine, args.cap)
            print(f"{label:<10}{'(none: reference)':<22}{shown(alone, args.cap):>10}")
            for name, pattern in PATTERNS.items():
                folder = work / name
                folder.mkdir(exist_ok=True)
                (folder / f"redos-{name}.toml").write_text(NESTED_REPEATS.format(id=f"redos-{name}", pattern=pattern))
                with_sig = [*diagnose, "--signatures", str(folder)]
                seconds, warning = timed(with_sig, engine, args.cap)
                before, _ = timed([sys.executable, "-c", UNGUARDED, *with_sig[3:]], engine, args.cap)
                print(f"{label:<10}{pattern:<22}{shown(seconds, args.cap):>10}{shown(before, args.cap):>16}  {warning}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
