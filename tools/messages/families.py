"""Where the catalogue's fallback files the programs' failures that no signature names: each uncovered
exception of the parts start-up goes through (uncovered.py's choice), written as a program would print it,
is read by the analyzer, and the family its finding comes under is counted. Writes
tools/messages/families.md, for whoever widens or narrows a family's words: a family that takes another
category's messages says so here before any log does.

    python tools/messages/families.py            # rewrite families.md
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from sparktui.core import catalogue as cat
from sparktui.core.analysis.analyzer import Analyzer
from tools.messages.releases import HERE
from tools.messages.templates import Entry, Tables
from tools.messages.uncovered import relevant, renderings, uncovered

OUT = HERE / "families.md"
SHOWN = 12


def printed(entry: Entry) -> str:
    """The template's first line, with its placeholders filled, as the program prints it: an exception's
    class (its level, capitalised) and message, or a logged line at error level behind vLLM's prefix."""
    text = renderings(entry.template)[1].split("\n")[0]
    return f"{entry.level}: {text}" if entry.level[:1].isupper() else f"ERROR 01-01 00:00:00 [x.py:1] {text}"


def filed(entries: list[Entry], catalogue: cat.Catalogue) -> list[str]:
    """The signature whose finding each entry's line gives ("" for none), in the entries' order. One
    analyzer reads them all, each line a node of its own."""
    analyzer = Analyzer(catalogue)
    for i, entry in enumerate(entries):
        analyzer.add_source(f"m{i}.log", f"m{i}")
        analyzer.feed(f"m{i}.log", printed(entry))
    first: dict[str, str] = {}
    for finding in analyzer.finish().findings:
        for node in finding.nodes:
            first.setdefault(node, finding.signature)
    return [first.get(f"m{i}", "") for i in range(len(entries))]


def render(entries: list[Entry], signatures: list[str]) -> str:
    counts = Counter(zip((e.program for e in entries), signatures, strict=True))
    lines = [
        "# Where the fallback files the programs' failures",
        "",
        "Written by `python tools/messages/families.py`: every exception of the programs' releases",
        "(`tools/messages/tables/`) that no signature names, in the parts start-up goes through, written as the",
        "program prints it and read by the analyzer. `unrecognised-failure` alone means no family took it",
        "(engine_crash); a family's column says which category it files the message under.",
        "",
        "| program | signature | messages |",
        "|---|---|---|",
    ]
    lines += [f"| {p} | {s or '(no finding)'} | {n} |" for (p, s), n in sorted(counts.items())]
    lines.append("")
    for signature in sorted({s for s in signatures if s and s != "unrecognised-failure"}):
        taken = sorted(printed(e) for e, s in zip(entries, signatures, strict=True) if s == signature)
        lines += [f"## {signature} ({len(taken)})", ""]
        lines += [f"- `{text[:200].replace('`', chr(39))}`" for text in taken[:SHOWN]]
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--output", type=Path, default=OUT, help=f"where to write (default {OUT})")
    args = parser.parse_args(argv)
    catalogue = cat.load()
    entries = [e for e in uncovered(Tables.read(), catalogue) if relevant(e) and e.level != "warning"]
    args.output.write_text(render(entries, filed(entries, catalogue)), encoding="utf-8")
    print(f"{len(entries)} messages -> {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
