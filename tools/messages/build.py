"""Download released wheels of the programs in releases.toml and write the table of their messages.

    python tools/messages/build.py                   # every program: download what is not cached, extract
    python tools/messages/build.py --programs nccl ray
    python tools/messages/build.py --offline         # extract from the cache only, download nothing

Wheels are kept under ~/.cache/sparktui-messages/<package>/<version>/ (never in the repository). A table
is written only when every release of its program could be read, so a failed download never shrinks one.
"""

from __future__ import annotations

import argparse
import fnmatch
import sys
import zipfile
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tools.messages import native, pysource
from tools.messages.releases import TABLES, Program, Release, download, programs
from tools.messages.templates import COLUMNS, compress, escape_cell

#: Python messages at these levels are left out of the tables (they say nothing about a failure, and would
#: double the tables' size).
DROPPED_LEVELS = {"debug"}
#: Parts of a package that never run at start-up of a server (benchmarks, tests, examples).
SKIPPED = ("/tests/", "/test/", "/benchmarks/", "/examples/", "_test.py")


def extract(program: Program, release: Release, wheel: Path) -> dict[tuple[str, str], str]:
    """(level, template) -> where (file:line, or the binary's path) of one release's messages."""
    found: dict[tuple[str, str], str] = {}
    with zipfile.ZipFile(wheel) as z:
        for name in sorted(z.namelist()):
            if name.endswith(".py") and program.reads(name):
                if any(s in name for s in SKIPPED):
                    continue
                source = z.read(name).decode("utf-8", errors="replace")
                for msg in pysource.messages(source):
                    if msg.level not in DROPPED_LEVELS:
                        found.setdefault((msg.level, msg.template), f"{name}:{msg.line}")
            elif program.native and any(fnmatch.fnmatch(name, p) for p in program.native):
                for level, tmpl in native.messages(z.read(name), program.strings):
                    found.setdefault((level, tmpl), name)
    return found


def _extract_job(args: tuple[Program, Release, Path]) -> tuple[str, dict[tuple[str, str], str]]:
    program, release, wheel = args
    return release.label, extract(program, release, wheel)


def wheels(program: Program, offline: bool) -> Iterator[tuple[Release, Path | None]]:
    for release in program.releases:
        yield release, (release.wheel() if offline else download(release))


def build(program: Program, offline: bool, jobs: int) -> Path | None:
    have = list(wheels(program, offline))
    missing = [r.label for r, w in have if w is None]
    if missing:
        print(f"{program.name}: no wheel for {', '.join(missing)}; table left as it was", file=sys.stderr)
        return None
    per_release: dict[str, dict[tuple[str, str], str]] = {}
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        for label, found in pool.map(_extract_job, [(program, r, w) for r, w in have if w is not None]):
            per_release[label] = found
    order = program.labels()
    rows: dict[tuple[str, str], tuple[list[str], str]] = {}
    for label in order:  # oldest first: `where` is the first release's
        for key, where in per_release[label].items():
            rows.setdefault(key, ([], where))[0].append(label)
    path = TABLES / f"{program.name}.tsv"
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = ["\t".join(COLUMNS)]
    for (level, tmpl), (labels, where) in sorted(rows.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        lines.append("\t".join((level, escape_cell(tmpl), compress(labels, order), where)))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"{program.name}: {len(rows)} templates from {len(order)} releases -> {path}")
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--programs", nargs="+", help="only these programs (default: all in releases.toml)")
    parser.add_argument("--offline", action="store_true", help="read the cached wheels only")
    parser.add_argument("--jobs", type=int, default=2, help="releases read at once (default 2)")
    args = parser.parse_args(argv)
    known = programs()
    chosen = args.programs or list(known)
    unknown = [p for p in chosen if p not in known]
    if unknown:
        parser.error(f"unknown program(s) {', '.join(unknown)} (known: {', '.join(known)})")
    failed = [name for name in chosen if build(known[name], args.offline, args.jobs) is None]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
