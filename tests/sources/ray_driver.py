"""A Ray driver the Ray source tests steer through stdin: one actor pinned to each node prints lines
into that node's worker log file (``worker-<id>-<job>-<pid>.out``) on command.

Usage: ``python ray_driver.py ADDRESS NODE_ID...``. Prints ``READY <pid>...`` (the actors' process ids,
in the order of the node ids), then reads commands, answering each with ``DONE``:

- ``emit <node index> <tag> <start> <stop>``: the lines ``<tag> <i>`` for ``start <= i < stop``;
- ``raw <node index> <hex>``: these bytes exactly, with or without a newline.
"""

from __future__ import annotations

import os
import sys
import time

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy


@ray.remote(num_cpus=0)
class Printer:
    def pid(self) -> int:
        return os.getpid()

    def emit(self, tag: str, start: int, stop: int) -> None:
        for i in range(start, stop):
            print(f"{tag} {i}", flush=True)
            if i % 50 == 49:
                time.sleep(0.01)  # let the agent see the file grow while lines are still being written

    def raw(self, data: bytes) -> None:
        sys.stdout.flush()
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()


def main(address: str, node_ids: list[str]) -> None:
    ray.init(address=address, log_to_driver=False, logging_level="ERROR")
    printers = [
        Printer.options(scheduling_strategy=NodeAffinitySchedulingStrategy(node, soft=False)).remote()
        for node in node_ids
    ]
    pids = ray.get([p.pid.remote() for p in printers])
    print("READY", *pids, flush=True)
    for command in sys.stdin:
        verb, where, *args = command.split()
        printer = printers[int(where)]
        if verb == "emit":
            ray.get(printer.emit.remote(args[0], int(args[1]), int(args[2])))
        else:
            ray.get(printer.raw.remote(bytes.fromhex(args[0])))
        print("DONE", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
