"""Where the catalogue's fallback files the programs' failures that no signature names: each uncovered
exception of the parts start-up goes through (uncovered.py's choice), written as a program would print it
(a Python exception under the traceback frame that raised it, at the file and line the tables give; a
logged error behind vLLM's prefix, which names the file's base name for vLLM's own lines), is read by the
analyzer, and the family its finding comes under is counted, with the step that filed it (the raising
frame or the logger's file, the exception's class, the words). Writes tools/messages/families.md, for
whoever widens or narrows a family's words or an area: a family that takes another category's messages
says so here before any log does.

    python tools/messages/families.py            # rewrite families.md
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from sparktui.core import catalogue as cat
from sparktui.core.analysis.analyzer import Analyzer
from sparktui.core.analysis.scan import Rules, Scan
from tools.messages.releases import HERE
from tools.messages.templates import Entry, Tables
from tools.messages.uncovered import relevant, renderings, uncovered

OUT = HERE / "families.md"
SHOWN = 12
#: The module paths' first parts by which the messages left to the bare fallback are counted, and how many shown.
PREFIX_PARTS = 3
PREFIXES_SHOWN = 40


def printed(entry: Entry) -> str:
    """The template's first line, with its placeholders filled, as the program prints it: an exception's
    class (its level, capitalised) and message; or a logged line at error level behind vLLM's prefix."""
    return printed_lines(entry)[-1]


def printed_lines(entry: Entry) -> list[str]:
    """:func:`printed`, after what the program prints above it: a Python exception's raising frame (the
    file and line of ``where``, below an installed package's folder); for a logged line, vLLM's prefix names
    the file's base name (for another program's line, a file that says nothing)."""
    text = renderings(entry.template)[1].split("\n")[0]
    path, _, line = entry.where.partition(":")
    python = path.endswith(".py") and line.isdigit()
    if entry.level[:1].isupper():
        frame = [f'  File "/usr/lib/python3/dist-packages/{path}", line {line}, in raising'] if python else []
        return [*frame, f"{entry.level}: {text}"]
    file = f"{path.rsplit('/', 1)[-1]}:{line}" if python and entry.program == "vllm" else "x.py:1"
    return [f"ERROR 01-01 00:00:00 [{file}] {text}"]


def alone(entry: Entry) -> list[str]:
    """The entry's last printed line alone: an exception with no traceback above it (a logger's ``str(e)``,
    Ray's wrapped error, a paste cut above the frame), or a logged line."""
    return printed_lines(entry)[-1:]


def filed(
    entries: list[Entry], catalogue: cat.Catalogue, lines: Callable[[Entry], list[str]] = printed_lines
) -> list[tuple[str, str]]:
    """The signature whose finding each entry's lines give ("" for none), and how the fallback filed it
    (its ``filed``), in the entries' order. One analyzer reads them all, each entry a node of its own; the
    fallback's ``filed`` of each comes from a scan of that entry alone (an analyzer's finding of a family
    gathers the entries of every node, and keeps the first one's)."""
    analyzer = Analyzer(catalogue)
    for i, entry in enumerate(entries):
        analyzer.add_source(f"m{i}.log", f"m{i}")
        analyzer.feed(f"m{i}.log", "\n".join(lines(entry)) + "\n")
    first: dict[str, str] = {}
    for finding in analyzer.finish().findings:
        for node in finding.nodes:
            first.setdefault(node, finding.signature)
    rules = Rules(catalogue)
    found = []
    for i, entry in enumerate(entries):
        scan = Scan(rules, f"m{i}.log", f"m{i}")
        scan.feed("\n".join(lines(entry)) + "\n")
        how = {hits.signature: hits.filed for hits in scan.take().hits}
        signature = first.get(f"m{i}", "")
        found.append((signature, how.get(signature, "")))
    return found


#: What a finding's ``filed`` says of the step that filed it.
STEPS = (
    ("its message is ", "its template's place"),
    ("raised in ", "the raising frame"),
    ("logged by ", "the logger's file"),
    (": a ", "the exception's class"),
)


def step(filed: str) -> str:
    """The step that filed a fallback finding, from its ``filed`` ("" where none did)."""
    if not filed:
        return ""
    return next((name for words, name in STEPS if words in filed), "the words")


def _steps(found: list[tuple[str, str]]) -> Counter[str]:
    """How many of ``found`` each step filed under a family, every step named (in :data:`STEPS`' order)."""
    counts = Counter(step(f) for s, f in found if s and s != "unrecognised-failure")
    return Counter({name: counts[name] for name in [n for _, n in STEPS] + ["the words"]})


def _other(found: list[tuple[str, str]], categories: dict[str, str]) -> int:
    return sum(1 for s, _ in found if s and categories.get(s) != "engine_crash")


def prefix(where: str) -> str:
    """The first :data:`PREFIX_PARTS` parts of a table's ``where`` (no line number)."""
    return "/".join(where.partition(":")[0].split("/")[:PREFIX_PARTS])


def render(
    entries: list[Entry], found: list[tuple[str, str]], bare: list[tuple[str, str]], catalogue: cat.Catalogue
) -> str:
    """families.md: ``found`` is each entry's filing as printed, ``bare`` as printed :func:`alone`."""
    signatures = [sig for sig, _ in found]
    counts = Counter(zip((e.program for e in entries), signatures, strict=True))
    categories = {sig.id: sig.category for sig in catalogue.signatures}
    sorted_ = [s for s in signatures if s and s != "unrecognised-failure"]
    other = [s for s in sorted_ if categories.get(s) != "engine_crash"]
    steps = _steps(found)
    total = len(entries)
    lines = [
        "# Where the fallback files the programs' failures",
        "",
        "Written by `python tools/messages/families.py`: every exception of the programs' releases",
        "(`tools/messages/tables/`) that no signature names, in the parts start-up goes through, written as the",
        "program prints it and read by the analyzer. `unrecognised-failure` alone means no family took it",
        "(engine_crash); a family's column says which category it files the message under.",
        "",
        f"Of {total} messages, {len(sorted_)} ({100 * len(sorted_) / max(total, 1):.1f}%) are filed under a family,",
        f"{len(other)} ({100 * len(other) / max(total, 1):.1f}%) under a category other than engine_crash. Filed by:",
        "",
        "| step | messages |",
        "|---|---|",
        *(f"| {name} | {n} |" for name, n in steps.items()),
        "",
        "Printed alone, with no traceback above (a logger's `str(e)`, a wrapped error, a paste cut above the",
        f"frame), {_other(bare, categories)} of them are filed under a category other than engine_crash. Filed by:",
        "",
        "| step | messages |",
        "|---|---|",
        *(f"| {name} | {n} |" for name, n in _steps(bare).items()),
        "",
        "| program | signature | messages |",
        "|---|---|---|",
    ]
    lines += [f"| {p} | {s or '(no finding)'} | {n} |" for (p, s), n in sorted(counts.items())]
    bare = Counter(
        prefix(e.where) for e, s in zip(entries, signatures, strict=True) if s in ("", "unrecognised-failure")
    )
    lines += [
        "",
        f"## Where the rest is raised ({sum(bare.values())} messages)",
        "",
        "The messages left to the bare fallback (or to no finding), by the first parts of the file the tables give",
        "for each (`where`): the places an area of diagnostics/origins/areas.toml could file, where most of what is",
        "raised there is of one family.",
        "",
        "| where | messages |",
        "|---|---|",
    ]
    lines += [
        f"| `{where}` | {n} |" for where, n in sorted(bare.items(), key=lambda kv: (-kv[1], kv[0]))[:PREFIXES_SHOWN]
    ]
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
    found, bare = filed(entries, catalogue), filed(entries, catalogue, alone)
    args.output.write_text(render(entries, found, bare, catalogue), encoding="utf-8")
    print(f"{len(entries)} messages -> {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
