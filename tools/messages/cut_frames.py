"""How often a traceback cut at one of its frames would be filed right by that frame's area.

A log that ends inside a traceback (sparktui/core/analysis/scan.py, ``Scan.end``) shows frames but not the
exception. This measures whether the area of a frame (diagnostics/origins/areas.toml) would name the case's
cause were the traceback cut right after it: every whole traceback (frames, then an exception line the
fallback signature takes) of the fixtures (tests/fixtures/expected.toml's root signature's category) and of a
wild corpus (its labels, `accept` included), each of its frames under an area compared with the label.

    python tools/messages/cut_frames.py [--corpus ../shared/corpus/wild]
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import regex

from bench.accuracy import DEFAULT_CORPUS, DEFAULT_FIXTURES, fixture_cases, wild_cases
from sparktui.core import catalogue as cat
from sparktui.core.analysis.provenance import load as load_origins


def cases(corpus: Path | None) -> Iterator[tuple[str, set[str], Path]]:
    """(name, the categories that are right, log file) of every labelled failure case: the fixtures as
    bench/accuracy.py reads them (their root signature's category), and the wild corpus's."""
    category = {s.id: s.category for s in cat.load().signatures}
    fixtures, _ = fixture_cases(DEFAULT_FIXTURES)
    for case in fixtures:
        if case.root in category:
            for log in sorted(p for p in case.path.rglob("*") if p.is_file()):
                yield case.name, {category[case.root]}, log
    for case in wild_cases(corpus) if corpus is not None else ():
        if not case.healthy and case.category is not None:
            yield case.name, {case.category, *case.accept}, case.path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    args = parser.parse_args()
    fallback = next(s for s in cat.load().signatures if s.fallback)
    frame = regex.compile(fallback.frame)
    shapes = [regex.compile(p) for p in fallback.any if "exception" in p]
    families = {f.name: f.category for f in fallback.families}
    origins = load_origins()
    tally: Counter[str] = Counter()
    wrong: Counter[tuple[str, str]] = Counter()
    corpus = args.corpus if args.corpus.is_dir() else None
    for name, right, log in cases(corpus):
        frames: list[str] = []
        for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
            if (m := frame.search(line)) is not None:
                frames.append(m["file"])
            elif frames and any(s.search(line) for s in shapes):
                for path in frames:
                    area = origins.area_of(path)
                    if area is None:
                        tally["no area"] += 1
                    elif families.get(area.family) in right:
                        tally["agree"] += 1
                    else:
                        tally["disagree"] += 1
                        wrong[(area.prefix, name)] += 1
                frames = []
    print(f"frames of whole tracebacks: {dict(tally)}")
    for (prefix, name), n in sorted(wrong.items()):
        print(f"  {prefix}: {name} ({n})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
