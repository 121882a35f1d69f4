"""Writes diagnostics/origins/templates.tsv: the programs' failure-level messages (tools/messages/tables/) that
are raised under an area of diagnostics/origins/areas.toml, with the place each is raised at, for the
catalogue's fallback to file a failure line by where its message comes from when the line names no file of
its own (sparktui/core/analysis/templates.py).

    python tools/messages/origins.py            # rewrite templates.tsv

A message is kept only where it tells its place apart: every other failure-level message whose printed lines
read the same (its template matches this one's text, placeholders filled) is raised in the same family's
areas. "{} is not supported" raised in vLLM's configuration and also in a model's code is left out. Binaries'
strings carry no module path and are left out too.
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from sparktui.core.analysis.provenance import Origins
from sparktui.core.analysis.provenance import load as load_origins
from sparktui.core.analysis.templates import COLUMNS, line_patterns, printed
from sparktui.core.dirs import builtin
from sparktui.core.search.engines import word_engine
from tools.messages.templates import Entry, Tables, escape_cell
from tools.messages.uncovered import renderings

OUT = builtin("diagnostics") / "origins" / "templates.tsv"


def family(entry: Entry, origins: Origins) -> str:
    """The family of the area ``entry`` is raised in ("" where none is)."""
    area = origins.area_of(entry.where.rsplit(":", 1)[0])
    return area.family if area is not None else ""


def placed(tables: Tables, origins: Origins) -> tuple[list[Entry], Counter[str]]:
    """The failure-level entries raised under an area whose text no entry of another family (or of none)
    reads the same, and how many were left out for that, by family."""
    loud = [e for e in tables.entries if e.loud and not e.level.startswith("native") and line_patterns(e.template)]
    families = [family(e, origins) for e in loud]
    keys = [(i, w) for i, e in enumerate(loud) for _, w in printed(e.template)]
    engine = word_engine([w for _, w in keys])
    compiled = [e.regex for e in loud]
    kept, dropped = [], Counter[str]()
    for i, entry in enumerate(loud):
        if not families[i]:
            continue
        text = "\n".join(renderings(entry.template))
        same = {keys[k][0] for c in engine.scan(text) for k in c.keys}
        others = {families[j] for j in same if j != i and (r := compiled[j]) is not None and r.search(text)}
        if others - {families[i]}:
            dropped[families[i]] += 1
            continue
        kept.append(entry)
    return kept, dropped


def main() -> int:
    origins = load_origins()
    kept, dropped = placed(Tables.read(), origins)
    rows = sorted({(e.program, e.where, escape_cell(e.template)) for e in kept})
    OUT.write_text("\n".join("\t".join(r) for r in [COLUMNS, *rows]) + "\n", encoding="utf-8")
    by_family = Counter(family(e, origins) for e in kept)
    print(f"{OUT}: {len(rows)} templates ({', '.join(f'{f} {n}' for f, n in sorted(by_family.items()))})")
    print(f"left out, read the same as another family's: {sum(dropped.values())} ({dict(sorted(dropped.items()))})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
