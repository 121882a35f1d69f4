#!/usr/bin/env python3
"""Derive a fixture from a real capture by dropping whole lines, never by editing one.

Usage::

    python3 tools/capture/nccl/derive.py [--check]

Each derivation below names a capture in ``tests/fixtures/nccl/``, the fixture it makes there, and what
it drops. Every kept line is a line of the capture, byte for byte and in its order, so the fixture holds
only what NCCL printed during the capture on GPUs; the script checks that before it writes anything.

* Only NCCL's own lines are kept (``host:pid:tid [dev] NCCL INFO|WARN ...``): the capture program's
  ``scenario:`` lines go, as a user's engine log would have none of them.
* A rank's log can be cut right after a line: the ``N``-th line holding a given text, and every line
  after it dropped (the state of that rank's log when the logs were taken, post mortem).

``meta.txt`` of the fixture is the capture's ``meta.txt`` followed by lines that say how the fixture was
derived. ``--check`` writes nothing and fails when a fixture on disk differs from what the script makes.
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[3] / "tests" / "fixtures" / "nccl"
#: A line NCCL printed itself: ``host:pid:tid [cudaDev] NCCL INFO ...`` (or WARN).
NCCL_LINE = re.compile(rb"^\S+:\d+:\d+ \[\d+\] NCCL (?:INFO|WARN) ")


@dataclass(frozen=True)
class Cut:
    """Keep ``log`` up to and including the ``occurrence``-th line holding ``text``; drop the rest."""

    log: str
    text: bytes
    occurrence: int


@dataclass(frozen=True)
class Derivation:
    capture: str  # a directory of tests/fixtures/nccl
    fixture: str  # the directory made beside it
    cuts: tuple[Cut, ...]
    why: str


DERIVATIONS = (
    Derivation(
        capture="two-hosts-second-group-not-joined",
        fixture="two-hosts-second-group-cut-at-comm-config",
        # The second `Comm config` of rank 0 is the first line of its second communicator (the group the
        # other rank never joins); its `Init START` comes four lines later in the capture.
        cuts=(Cut("rank0.log", b"NCCL INFO Comm config Blocking set to 1", 2),),
        why=(
            "NCCL lines only; rank 0 cut right after the first line of its second communicator (Comm config),"
            " before that communicator's Init START: both ranks completed the first communicator and"
            " connected its rings, then rank 0 began a second one and rank 1 printed nothing more"
        ),
    ),
)


def derive(d: Derivation) -> dict[str, bytes]:
    """The files of the derived fixture, by name."""
    source = FIXTURES / d.capture
    out: dict[str, bytes] = {}
    cuts = {c.log: c for c in d.cuts}
    for log in sorted(source.glob("rank*.log")):
        lines = log.read_bytes().splitlines(keepends=True)
        kept = [line for line in lines if NCCL_LINE.match(line)]
        cut = cuts.pop(log.name, None)
        if cut is not None:
            hits = [i for i, line in enumerate(kept) if cut.text in line]
            if len(hits) < cut.occurrence:
                raise SystemExit(f"{log}: only {len(hits)} lines hold {cut.text!r}, not {cut.occurrence}")
            kept = kept[: hits[cut.occurrence - 1] + 1]
        _check_subsequence(kept, lines, log)
        out[log.name] = b"".join(kept)
    if cuts:
        raise SystemExit(f"{source}: no log named {', '.join(cuts)}")
    meta = (source / "meta.txt").read_bytes()
    meta += b"" if meta.endswith(b"\n") else b"\n"
    meta += f"derived_from=tests/fixtures/nccl/{d.capture}\n".encode()
    meta += b"derived_by=tools/capture/nccl/derive.py (whole lines dropped, none edited)\n"
    meta += f"derivation={d.why}\n".encode()
    out["meta.txt"] = meta
    return out


def _check_subsequence(kept: list[bytes], lines: list[bytes], log: Path) -> None:
    """Every kept line is a line of the capture, unchanged and in the capture's order."""
    it = iter(lines)
    if not all(any(line == original for original in it) for line in kept):
        raise SystemExit(f"{log}: a derived line is not a line of the capture")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="write nothing; fail where a fixture differs")
    args = parser.parse_args(argv)
    stale = []
    for d in DERIVATIONS:
        target = FIXTURES / d.fixture
        for name, content in derive(d).items():
            path = target / name
            if args.check:
                if not path.exists() or path.read_bytes() != content:
                    stale.append(str(path))
                continue
            target.mkdir(exist_ok=True)
            path.write_bytes(content)
            print(f"{path}: {len(content.splitlines())} lines")
    if stale:
        print("differs from what derive.py makes:", *stale, sep="\n  ", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
