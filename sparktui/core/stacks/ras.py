"""What NCCL's RAS (reliability, availability, serviceability) thread of a node says is wrong with its
communicators, read from the text of its report. Pure.

Every NCCL process from 2.24 on runs a RAS thread; together they keep track of every rank of every
communicator, and answer on the node's ``localhost:28028`` (``NCCL_RAS_ADDR``). Asked ``VERBOSE STATUS``
(the node script does it, once per reading), one of them gathers what all know and prints a report: a job
summary, a table of the communicators, then ``Errors`` and ``Warnings``, each entry a header line and
indented lines under it::

    #0-0 (2c2a0dd45997557c) INCOMPLETE
      Missing communicator data from 1 rank
      Rank 3 -- GPU 0 managed by process 798 on node 192.0.2.2

A missing rank is one its peers lost (``INCOMPLETE``, ``DEAD``); ``ERROR`` is a rank's asynchronous error;
``MISMATCH`` ranks whose operation counts differ. A rank that never joins a communicator, or a symmetric hang,
leaves the report clean: RAS is evidence where it speaks, and says nothing of the hangs it cannot see. The
text form is read, not the JSON one: NCCL 2.28.9's JSON leaves out a comma in its missing ranks.
"""

from __future__ import annotations

from collections.abc import Sequence

#: The report's sections that hold entries, each underlined with ``=``.
SECTIONS = ("Errors", "Warnings")


def said(lines: Sequence[str]) -> list[str]:
    """Each entry of the report's Errors and Warnings, in one line: its header, then its lines, joined by
    ": "; nothing for a clean report, or for lines that are no report (no answer, a cut one)."""
    entries: list[list[str]] = []
    section = ""
    for i, line in enumerate(lines):
        text = line.rstrip()
        underline = i + 1 < len(lines) and set(lines[i + 1].strip()) == {"="}
        if underline or set(text.strip()) == {"="}:
            section = text.strip() if underline else section
            continue
        if section not in SECTIONS or not text.strip():
            continue
        if text.startswith(" ") and entries:
            entries[-1].append(text.strip())
        elif not text.startswith(" "):
            entries.append([text.strip()])
    return [": ".join(entry) for entry in entries]
