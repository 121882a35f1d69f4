"""Secret redaction of this checkout against another commit's, on the same text, in one process.

    python bench/redact_speed.py [--against 3f2e52c] [--repeat 7] [--block 64]

The text is every captured fixture log (``tests/fixtures``), redacted three ways: each file whole (what a
report or a bundle does), in blocks of about ``--block`` kB of whole lines through a :class:`PieceRedactor`
(what the spool does with a live source's batches), and one line at a time (what the clipboard and an
evidence line do). ``--against`` names the commit whose ``sparktui/core/redact.py`` is the reference (read
with ``git show`` into a module of its own; the rest of sparktui is this checkout's). Times are CPU seconds
(:func:`time.process_time`), the best of ``--repeat`` runs taken in turns, so a busy machine hits both
alike; the figure to read is the ratio.
"""

from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def module_at(commit: str, folder: Path) -> ModuleType:
    """``sparktui/core/redact.py`` as it was at ``commit``, imported under a name of its own."""
    source = subprocess.run(
        ["git", "-C", str(ROOT), "show", f"{commit}:sparktui/core/redact.py"], check=True, capture_output=True
    ).stdout
    path = folder / f"redact_{commit}.py"
    path.write_bytes(source)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def blocks(text: str, size: int) -> list[str]:
    """``text`` cut into pieces of about ``size`` characters, each of whole lines."""
    out = []
    start = 0
    while start < len(text):
        end = text.find("\n", start + size)
        end = len(text) if end < 0 else end + 1
        out.append(text[start:end])
        start = end
    return out


def ways(module: ModuleType, files: list[str], pieces: list[str], lines: list[str]) -> dict[str, Callable[[], None]]:
    def whole() -> None:
        for text in files:
            module.redact(text)

    def spool() -> None:
        redactor = module.PieceRedactor()
        for piece in pieces:
            redactor(piece)

    def by_line() -> None:
        for line in lines:
            module.redact(line)

    return {"each file whole": whole, "spool blocks": spool, "line by line": by_line}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--against", default="3f2e52c", help="the commit whose redaction is the reference")
    parser.add_argument("--repeat", type=int, default=7, help="runs of each, the best kept (default 7)")
    parser.add_argument("--block", type=int, default=64, help="size of a spool block in kB (default 64)")
    args = parser.parse_args()
    paths = sorted((ROOT / "tests" / "fixtures").rglob("*.log"))
    files = [p.read_text(errors="surrogateescape") for p in paths]
    corpus = "".join(files)
    pieces = blocks(corpus, args.block * 1000)
    lines = corpus.splitlines()
    from sparktui.core import redact as ours

    with tempfile.TemporaryDirectory() as tmp:
        theirs = module_at(args.against, Path(tmp))
        same = all(ours.redact(t) == theirs.redact(t) for t in files)
        runs = {"this checkout": ways(ours, files, pieces, lines), args.against: ways(theirs, files, pieces, lines)}
        best: dict[tuple[str, str], float] = {}
        for _ in range(args.repeat):  # in turns, so that a busy moment of the machine hits each alike
            for who, run in runs.items():
                for way, call in run.items():
                    start = time.process_time()
                    call()
                    cpu = time.process_time() - start
                    best[who, way] = min(best.get((who, way), cpu), cpu)
    mb = len(corpus.encode()) / 1e6
    print(f"{len(paths)} fixture logs, {mb:.1f} MB, {len(lines):,} lines; best of {args.repeat} by CPU")
    print(f"output the same as {args.against}'s on every file: {'yes' if same else 'no'}")
    print(f"{'way':<18}{'this, CPU s':>13}{args.against + ', CPU s':>16}{'this/' + args.against:>16}")
    for way in runs["this checkout"]:
        mine, ref = best["this checkout", way], best[args.against, way]
        print(f"{way:<18}{mine:>13.3f}{ref:>16.3f}{mine / ref:>16.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
