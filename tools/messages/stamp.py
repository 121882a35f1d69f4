"""Write each signature's ``checked = [...]``: the releases whose message tables hold a template that one of
its match examples matches (see provenance.py). Only that line of a file changes (added after the last
top-level key where absent, removed where nothing matches); every other byte stays as it was.

    python tools/messages/stamp.py            # rewrite diagnostics/*.toml
    python tools/messages/stamp.py --check    # exit 1 where a file's key is not what the tables say
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from sparktui.core import catalogue as cat
from tools.messages.provenance import checked
from tools.messages.templates import Tables

KEY = re.compile(r"^checked = \[.*\]\n", re.MULTILINE)


def stamped(text: str, entries: list[str]) -> str:
    """``text`` (a signature file) with its ``checked`` line saying ``entries`` (no line where empty)."""
    line = f"checked = {json.dumps(entries, ensure_ascii=False)}\n" if entries else ""
    if KEY.search(text):
        return KEY.sub(lambda _: line, text, count=1)
    if not line:
        return text
    lines = text.splitlines(keepends=True)
    header = next((i for i, ln in enumerate(lines) if ln.startswith("[")), len(lines))
    at = header
    while at > 0 and (not lines[at - 1].strip() or lines[at - 1].lstrip().startswith("#")):
        at -= 1
    if at > 0 and not lines[at - 1].endswith("\n"):
        lines[at - 1] += "\n"
    lines.insert(at, line)
    return "".join(lines)


def stampable(catalogue: cat.Catalogue) -> list[cat.Signature]:
    """The built-in line signatures whose examples are a program's words (not the fallback's shapes)."""
    home = cat.builtin_dir()
    return [
        s
        for s in catalogue.signatures
        if s.kind == "line" and s.path.parent == home and not s.fallback and not s.family_of
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="change nothing; list the files that are stale")
    args = parser.parse_args(argv)
    tables = Tables.read()
    stale = []
    for sig in stampable(cat.load()):
        text = sig.path.read_text(encoding="utf-8")
        new = stamped(text, checked(sig, tables))
        if new != text:
            stale.append(sig.path.name)
            if not args.check:
                sig.path.write_text(new, encoding="utf-8")
    verb = "stale" if args.check else "stamped"
    print(f"{len(stale)} file(s) {verb}" + (": " + ", ".join(stale) if stale else ""))
    return 1 if args.check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
