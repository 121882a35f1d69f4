"""Diagnose logs with the pure-Python literal engine, in a process of its own: the ``--literal`` row of
``bench/diagnose_vs_rg.py``.

    python bench/literal_scan.py PATH...

The engine sparktui falls back to where Hyperscan is missing (and which must stay). This reads each file
in turn straight into the analyser (no pipeline thread, no live-source machinery), so the row measures the
engine and the analysis around it. Prints ``{"findings": N, "lines": N}`` as JSON.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sparktui.core import catalogue as cat  # noqa: E402
from sparktui.core.analysis.analyzer import Analyzer  # noqa: E402
from sparktui.core.search.engines import LiteralEngine  # noqa: E402
from sparktui.core.sources.open import file_sources  # noqa: E402


def main(arguments: list[str]) -> int:
    sources, problems = file_sources(arguments)
    for problem in problems:
        print(problem, file=sys.stderr)
    analyzer = Analyzer(cat.load(), LiteralEngine)
    lines = 0
    for source in sources:
        analyzer.add_source(source.name, source.default_node())
        for block in source.blocks():
            analyzer.feed(source.name, block)
            lines += block.count("\n") + 1
    print(json.dumps({"findings": len(analyzer.finish().findings), "lines": lines}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
