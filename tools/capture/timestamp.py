#!/usr/bin/env python3
"""Record a program's output byte for byte, and when each of its lines arrived.

Usage::

    timestamp.py --now
    timestamp.py --log PATH [--times PATH] [--origin-ns NS] -- COMMAND [ARG ...]
    COMMAND 2>&1 | timestamp.py --log PATH [--times PATH] [--origin-ns NS]

With a COMMAND, the timestamper starts it with stdout and stderr on one pipe (merged in the order the
program wrote them) and returns its exit status (128 + N when signal N ended it). Without one, it
reads its own standard input. Every byte read goes to ``--log`` unchanged, as soon as it arrives.

``--times`` (default: the log's path plus ``.times``) gets one line per log line, in the same order:
the moment that line arrived, as whole milliseconds since the origin. A line is everything up to and
including a newline byte; it arrives when its newline is read. Bytes after the last newline, if any,
count as one more line, arriving with the last of them. The clock is CLOCK_MONOTONIC, which every
process of a Linux host shares: give each timestamper of one capture the same ``--origin-ns``
(printed by ``timestamp.py --now`` at the start of the capture) and their times share that origin.
Without ``--origin-ns`` the origin is the timestamper's own start.

SIGTERM, SIGINT and SIGHUP sent to the timestamper are passed on to the COMMAND; the timestamper
keeps reading until the pipe closes, so nothing the program wrote before it died is lost.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from types import FrameType
from typing import BinaryIO

CHUNK = 1 << 16
NS_PER_MS = 1_000_000


class Recorder:
    """Writes the bytes to the log and one arrival time per completed line to the times file."""

    def __init__(self, log: BinaryIO, times: BinaryIO, origin_ns: int) -> None:
        self.log = log
        self.times = times
        self.origin_ns = origin_ns
        self.last_ms = 0
        self.partial = False  # bytes of an unfinished line have been written
        self.lines = 0

    def _ms(self) -> int:
        ms = (time.monotonic_ns() - self.origin_ns) // NS_PER_MS
        self.last_ms = max(self.last_ms, ms)  # never let the times go backwards
        return self.last_ms

    def feed(self, chunk: bytes) -> None:
        ms = self._ms()
        self.log.write(chunk)
        self.log.flush()
        ended = chunk.count(b"\n")
        if ended:
            self.times.write(f"{ms}\n".encode() * ended)
            self.times.flush()
            self.lines += ended
        self.partial = not chunk.endswith(b"\n")

    def close(self) -> None:
        if self.partial:  # the last line has no newline: it arrived with its last bytes
            self.times.write(f"{self.last_ms}\n".encode())
            self.lines += 1
            self.partial = False
        self.log.flush()
        self.times.flush()


def pump(fd: int, recorder: Recorder) -> None:
    while True:
        try:
            chunk = os.read(fd, CHUNK)
        except InterruptedError:  # pragma: no cover - os.read retries by itself (PEP 475)
            continue
        if not chunk:
            break
        recorder.feed(chunk)
    recorder.close()


def run(command: Sequence[str], recorder: Recorder) -> int:
    child = subprocess.Popen(list(command), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)

    def forward(signum: int, _frame: FrameType | None) -> None:
        if child.poll() is None:
            child.send_signal(signum)

    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, forward)
    assert child.stdout is not None
    pump(child.stdout.fileno(), recorder)
    rc = child.wait()
    return 128 - rc if rc < 0 else rc


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--now", action="store_true", help="print the clock (CLOCK_MONOTONIC, ns) and exit")
    parser.add_argument("--log", help="where the output goes, unchanged")
    parser.add_argument("--times", help="where the arrival times go (default: LOG.times)")
    parser.add_argument("--origin-ns", type=int, default=None, help="the clock's zero, from `timestamp.py --now`")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND [ARG ...] (default: read stdin)")
    ns = parser.parse_args(list(argv))
    if ns.command and ns.command[0] == "--":
        ns.command = ns.command[1:]
    if not ns.now and not ns.log:
        parser.error("--log is required")
    return ns


def main(argv: Sequence[str] | None = None) -> int:
    ns = parse_args(sys.argv[1:] if argv is None else argv)
    if ns.now:
        print(time.monotonic_ns())
        return 0
    origin_ns = time.monotonic_ns() if ns.origin_ns is None else ns.origin_ns
    times_path = ns.times or ns.log + ".times"
    with open(ns.log, "wb") as log, open(times_path, "wb") as times:
        recorder = Recorder(log, times, origin_ns)
        if ns.command:
            return run(ns.command, recorder)
        pump(sys.stdin.fileno(), recorder)
        return 0


if __name__ == "__main__":
    sys.exit(main())
