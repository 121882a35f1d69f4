"""The programs' error- and warning-level messages that no signature of the catalogue names, for whoever
looks for failures the catalogue lacks. Writes tools/messages/uncovered.md.

    python tools/messages/uncovered.py            # rewrite uncovered.md
    python tools/messages/uncovered.py --all      # every uncovered message, not only the relevant ones

A message is covered when a signature's pattern is found in its literal form (each placeholder filled in with
a few likely values: ``1``, ``x``, ``10.0.0.1:29500``) or when one of a signature's example lines matches
its template. The fallback signature (unrecognised-failure) is left out: it takes any failure line, naming
none. What is left is grouped by program, under the word that the most uncovered messages of the program
share first; the file keeps the parts that start-up failures come from (NCCL's warnings, c10d, Ray's GCS
and raylet, vLLM's and SGLang's engine, executor, distributed and configuration code), and of those the
messages with the most words of a multi-node start-up (rank, node, connect, timeout, GCS, ...), a limited
number per program.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import regex

from sparktui.core import catalogue as cat
from sparktui.core.search.literals import required_literals
from tools.messages.provenance import example_lines
from tools.messages.releases import HERE, programs
from tools.messages.stamp import stampable
from tools.messages.templates import Entry, Tables, compress, literal, pieces

OUT = HERE / "uncovered.md"
FILLERS = ("1", "x", "10.0.0.1:29500")
WORDS = re.compile(r"[A-Za-z][A-Za-z_]{3,}")
STOP = {
    "with",
    "that",
    "this",
    "from",
    "have",
    "there",
    "which",
    "when",
    "will",
    "your",
    "than",
    "been",
    "does",
    "into",
    "only",
    "must",
    "should",
    "could",
    "would",
    "they",
    "them",
    "then",
    "were",
    "please",
    "make",
    "sure",
    "also",
    "using",
    "used",
    "same",
    "more",
    "some",
    "other",
    "after",
    "before",
    "because",
    "check",
    "value",
    "expected",
    "failed",
    "error",
    "found",
    "got",
    "given",
    "following",
    "either",
    "provided",
    "specified",
}
#: Per program: what makes a message relevant to a start-up failure (its text or where it is), and how many
#: of the program's messages the file keeps.
RELEVANT: dict[str, tuple[str, int]] = {
    "nccl": (
        r"socket|[Bb]ootstrap|NET/|[Cc]onnect|\bIB\b|ibv_|[Pp]roxy|shm|[Tt]imeout|[Rr]emote|peer|"
        r"[Ii]nterface|[Pp]lugin|version|NVLS|[Rr]ank",
        70,
    ),
    "torch": (
        r"c10d|TCPStore|ProcessGroup|[Ww]atchdog|NCCL|[Ss]tore|[Ss]ocket|[Rr]endezvous|[Bb]arrier|"
        r"[Tt]imed out|heartbeat|torch/distributed/",
        60,
    ),
    "ray": (r"GCS|gcs|[Rr]aylet|[Nn]ode|[Cc]luster|[Pp]lacement|[Oo]bject store|plasma|[Hh]ead|[Vv]ersion", 60),
    "vllm": (
        r"distributed|executor|engine|worker|platforms|config|ray|parallel|entrypoints|model_loader|"
        r"NCCL|[Rr]ay|GPU|CUDA|memory|[Pp]lacement",
        60,
    ),
    "sglang": (
        r"distributed|server_args|scheduler|model_executor|entrypoints|managers|nccl|NCCL|CUDA|memory|"
        r"dist_init|nnodes",
        45,
    ),
}
OTHERS = 12
#: Words of a multi-node start-up failure: a message with more of them ranks higher.
STARTUP = re.compile(
    r"(?i)\b(?:nccl|gloo|ray|gcs|raylet|node|nodes|distributed|rank|ranks|world|connect\w*|timed?\s?out|timeout|"
    r"socket|memory|gpus?|cuda|device|driver|placement|init\w*|port|address|network|interface|ib|shm|store|"
    r"barrier|watchdog|heartbeats?|process|died|dead|killed|peer|bootstrap|cluster|head|tcpstore|rendezvous|"
    r"parallel|tensor|pipeline|executor|worker|engine|version|mismatch|unreachable|refused)\b"
)


class Catalogue:
    """The built-in signatures' patterns, with their required literals to skip most searches."""

    def __init__(self, catalogue: cat.Catalogue) -> None:
        self.sigs = stampable(catalogue)
        self.patterns = []
        for sig in self.sigs:
            for p in sig.any:
                lits = required_literals(p)
                self.patterns.append((sig.id, regex.compile(p), lits))

    def names(self, text: str) -> bool:
        for _, pattern, lits in self.patterns:
            if lits is not None and not any(lit in text for lit in lits):
                continue
            if pattern.search(text):
                return True
        return False


def renderings(template: str) -> list[str]:
    parts = pieces(template)
    return ["".join(p if p is not None else f for p in parts) for f in FILLERS]


def uncovered(tables: Tables, catalogue: cat.Catalogue) -> list[Entry]:
    patterns = Catalogue(catalogue)
    named: set[int] = set()
    for sig in patterns.sigs:
        for line in example_lines(sig):
            named.update(id(e) for e in tables.matches(line))
    out = []
    for entry in tables.entries:
        if not entry.loud or id(entry) in named or entry.regex is None:
            continue
        if any(patterns.names(text) for text in renderings(entry.template)):
            continue
        out.append(entry)
    return out


def words(entry: Entry) -> set[str]:
    text = " ".join(p for p in pieces(entry.template) if p is not None)
    return {w.lower() for w in WORDS.findall(text)} - STOP


def relevant(entry: Entry) -> bool:
    rule = RELEVANT.get(entry.program)
    return rule is None or re.search(rule[0], entry.template + " " + entry.where) is not None


def score(entry: Entry) -> int:
    """How much a message reads like a multi-node start-up failure: its start-up words, and its level."""
    found = {m.group().lower() for m in STARTUP.finditer(literal(entry.template, " "))}
    return len(found) + (1 if entry.level not in ("warning", "native-error") else 0)


def render(found: list[Entry], everything: bool) -> str:
    order = list(programs())
    lines = [
        "# Messages no signature names",
        "",
        "Written by `python tools/messages/uncovered.py` from `tools/messages/tables/` and the catalogue: the",
        "error- and warning-level messages (exceptions raised, `logger.warning` and up, and strings of the binaries",
        "that read as failures) that no signature's pattern matches and no signature's example shows. Grouped by",
        "program, under the word most of the program's uncovered messages share; a line gives the level, the",
        "template (placeholders in braces) and the releases that print it. "
        + (
            "Every uncovered message is listed."
            if everything
            else "Only the parts that start-up failures come from are kept (see RELEVANT in uncovered.py), a limited"
            " number per program; `--all` lists everything."
        ),
        "",
    ]
    labels = {name: prog.labels() for name, prog in programs().items()}
    by_program: dict[str, list[Entry]] = {}
    for e in found:
        by_program.setdefault(e.program, []).append(e)
    for program in sorted(by_program, key=order.index):
        entries = by_program[program]
        relevant_ones = entries if everything else [e for e in entries if relevant(e)]
        limit = len(relevant_ones) if everything else RELEVANT.get(program, ("", OTHERS))[1]
        kept = sorted(relevant_ones, key=lambda e: (-score(e), e.template))[:limit]
        counts = Counter(w for e in kept for w in words(e))
        topic: dict[str, list[Entry]] = {}
        for e in kept:
            ws = sorted(words(e), key=lambda w: (-counts[w], w))
            topic.setdefault(ws[0] if ws else "", []).append(e)
        ranked = sorted(topic.items(), key=lambda kv: (-len(kv[1]), kv[0]))
        lines += [
            f"## {program}",
            "",
            f"{len(entries)} uncovered, {len(relevant_ones)} in the parts start-up goes through, {len(kept)} shown.",
        ]
        lines.append("Most common words: " + ", ".join(f"{w} ({n})" for w, n in counts.most_common(12)) + ".")
        lines.append("")
        for word, group in ranked:
            take = sorted(group, key=lambda e: (e.template, e.level))
            lines.append(f"**{word or '(no word)'}** ({len(group)})")
            lines.append("")
            for e in take:
                versions = compress(e.versions, labels[program])
                text = e.template.replace("\n", " ⏎ ").replace("|", "\\|").replace("`", "'")
                if len(text) > 220:
                    text = text[:217] + "..."
                lines.append(f"- `{e.level}` {text} — {versions}")
            lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--all", action="store_true", help="every uncovered message, not only the relevant ones")
    parser.add_argument("--output", type=Path, default=OUT, help=f"where to write (default {OUT})")
    args = parser.parse_args(argv)
    found = uncovered(Tables.read(), cat.load())
    args.output.write_text(render(found, args.all), encoding="utf-8")
    print(f"{len(found)} uncovered messages -> {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
