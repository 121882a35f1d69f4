"""A hand-check of the fallback's filing: 200 of the programs' failures that no signature names, drawn at
random (a fixed seed) from what families.py measures, each with the category a person gave it by reading
its message and where it is raised, beside the category the analyzer files it under. Writes
tools/messages/handcheck.tsv and prints how often the two agree.

    python tools/messages/handcheck.py            # draw (the same 200 each time), file, score
    python tools/messages/handcheck.py --alone    # score the filing of each printed alone (no traceback above)

The `label` column is the person's: a category of diagnostics/taxonomy.md, read from the template and its
`where` (the source line in the release the tables name). A rerun keeps the labels already given (by
program, where and template) and leaves new rows' labels empty; only labelled rows are scored.
"""

from __future__ import annotations

import argparse
import csv
import random
import sys
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from sparktui.core import catalogue as cat
from tools.messages.families import alone, filed, printed_lines
from tools.messages.releases import HERE
from tools.messages.templates import Entry, Tables
from tools.messages.uncovered import relevant, uncovered

OUT = HERE / "handcheck.tsv"
SEED = 20261206
SIZE = 200
COLUMNS = ("program", "level", "where", "template", "filed", "step", "label")


def drawn(catalogue: cat.Catalogue) -> list[Entry]:
    """The sample: :data:`SIZE` of families.py's messages, drawn with :data:`SEED`, in table order."""
    entries = [e for e in uncovered(Tables.read(), catalogue) if relevant(e) and e.level != "warning"]
    picked = sorted(random.Random(SEED).sample(range(len(entries)), SIZE))
    return [entries[i] for i in picked]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--output", type=Path, default=OUT, help=f"where to write (default {OUT})")
    parser.add_argument(
        "--alone", action="store_true", help="each message printed with no traceback above it (the file not rewritten)"
    )
    args = parser.parse_args(argv)
    catalogue = cat.load()
    categories = {sig.id: sig.category for sig in catalogue.signatures}
    labels: dict[tuple[str, str, str], str] = {}
    if args.output.exists():
        with args.output.open(encoding="utf-8", newline="") as f:
            for row in csv.DictReader(f, delimiter="\t"):
                labels[(row["program"], row["where"], row["template"])] = row["label"]
    entries = drawn(catalogue)
    rows = []
    found = filed(entries, catalogue, alone if args.alone else printed_lines)
    for entry, (signature, how) in zip(entries, found, strict=True):
        category = categories.get(signature, "")
        step = how.split(": ", 1)[1] if how else ""
        label = labels.get((entry.program, entry.where, entry.template), "")
        rows.append((entry.program, entry.level, entry.where, entry.template, category, step, label))
    if not args.alone:
        with args.output.open("w", encoding="utf-8", newline="") as f:
            writer = csv.writer(f, delimiter="\t", lineterminator="\n")
            writer.writerow(COLUMNS)
            writer.writerows(rows)
    scored = [r for r in rows if r[-1]]
    agree = sum(1 for r in scored if r[4] == r[-1])
    said = "each printed alone" if args.alone else f"-> {args.output}"
    print(f"{len(rows)} messages {said}; {len(scored)} labelled, the filing agrees on {agree}", end="")
    print(f" ({100 * agree / len(scored):.1f}%)" if scored else "")
    # (engine_crash is most of both columns: how the filing does where either says something more)
    sorted_ = [r for r in scored if r[4] not in ("", "engine_crash")]
    told = [r for r in scored if r[-1] != "engine_crash"]
    print(f"filed under another category than engine_crash: {len(sorted_)}, of which the label agrees on", end=" ")
    print(f"{sum(1 for r in sorted_ if r[4] == r[-1])}; labelled so: {len(told)}, of which filed so", end=" ")
    print(f"{sum(1 for r in told if r[4] == r[-1])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
