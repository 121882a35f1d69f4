"""Scanned at the edge or pulled: the bytes moved and the time to the diagnosis of a real Ray cluster's logs.

    python bench/ray_edge.py [--nodes 4] [--mb 100] [--seed 1]

Starts a real multi-node Ray cluster (CPU only) on loopback addresses inside a network namespace that has
only ``lo`` (the bench runs itself under ``unshare --net``; it needs root), as the Ray tests do
(``tests/servers/raynodes.py``). Each node's Ray log folder gets one large worker log, ``--mb`` MiB of whole
real captures from ``tests/fixtures`` (``bench/corpus.py``: host names and pids made the node's own), named
as Ray names a worker's stdout (``worker-<id>-01000000-<pid>.out``), beside Ray's own logs. Then, in one run:

* pull only: every listed file's bytes through Ray's log API (``get_log``, all files at once), nothing
  scanned: the fastest way to bring the logs to one place with Ray's own tools (the reference);
* pulled: ``sparktui diagnose ray://head`` (the same files through the log API, scanned and correlated here);
* edge: ``sparktui diagnose --edge ray://head`` (each node scans its own files in a pinned 0-CPU actor; the
  results come back, plus sparktui's core and the catalogue shipped through Ray's runtime environment).

Bytes moved: pulled, the bytes of the files the log API streams to this machine (counted once, though a
worker node's bytes cross twice: agent to head, head to here); edge, the results as they came back plus the
package once per node and once more for its upload to the head (the first run; later runs find it there).
Both diagnoses run through the pipeline exactly as the command does, timed from the start to the diagnosis,
the edge's including connecting a Ray driver and placing the actors. Ends with one line: how many times
fewer bytes the edge moved, and whether the findings are equal. On a machine with fewer cores than nodes, the nodes'
scans share the cores (in a real cluster each node scans with its own).
"""

from __future__ import annotations

import argparse
import os
import secrets
import shutil
import socket
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.corpus import load_captures, node_logs  # noqa: E402
from sparktui.core import catalogue as cat  # noqa: E402
from sparktui.core.analysis.diagnosis import Diagnosis  # noqa: E402
from sparktui.core.edge.head import RayEdge  # noqa: E402
from sparktui.core.pipeline import Input, run  # noqa: E402
from sparktui.core.sources.ray import RayLogs, RayLogSource, ray_log_sources  # noqa: E402
from tests.servers.raynodes import ADDRESS, RayNode, start_cluster  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=4, help="Ray nodes, the head among them (default 4)")
    parser.add_argument("--mb", type=float, default=100, help="MiB of captured logs per node (default 100)")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    if [name for _, name in socket.if_nameindex()] != ["lo"]:
        os.execvp("unshare", ["unshare", "--net", sys.executable, *sys.argv])
    root = Path(tempfile.mkdtemp(prefix="sparktui-edge-"))  # short: Ray's socket paths live below it
    nodes: list[RayNode] = []
    try:
        started = time.monotonic()
        nodes = start_cluster(root, workers=args.nodes - 1)
        print(f"{len(nodes)} Ray nodes up in {time.monotonic() - started:.0f} s", flush=True)
        corpus = write_corpus(nodes, args.mb, args.seed)
        print(f"each node's log folder holds a worker log of {corpus / len(nodes) / (1 << 20):.1f} MiB", flush=True)
        return compare(nodes, cat.load())
    finally:
        for node in nodes:
            node.stop()
        shutil.rmtree(root, ignore_errors=True)


def write_corpus(nodes: list[RayNode], mib: float, seed: int) -> int:
    """One worker log of whole real captures in each node's Ray log folder; their bytes in all."""
    total = 0
    logs = node_logs(load_captures(), len(nodes), int(mib * len(nodes) * (1 << 20)), seed)
    for node, (_name, data) in zip(nodes, logs, strict=True):
        (node.logs / f"worker-{secrets.token_hex(28)}-01000000-{40000 + total % 9999}.out").write_bytes(data)
        total += len(data)
    return total


def compare(nodes: list[RayNode], catalogue: cat.Catalogue) -> int:
    listed = ray_log_sources(ADDRESS, follow=False)
    started = time.monotonic()
    pulled_bytes = pull_only(listed)
    pull_seconds = time.monotonic() - started

    pulled, pulled_seconds = diagnose(catalogue, RayLogs(ADDRESS, follow=False))
    edge = RayEdge(ADDRESS, catalogue, follow=False)
    edged, edge_seconds = diagnose(catalogue, edge)
    t = edge.totals
    edge_bytes = t.results + t.package * (len(nodes) + 1)

    rows = [
        ("pull only (Ray's get_log, nothing scanned)", pulled_bytes, pull_seconds),
        ("pulled: diagnose ray://head", pulled_bytes, pulled_seconds),
        ("edge: diagnose --edge ray://head", edge_bytes, edge_seconds),
    ]
    print(f"\n{len(listed)} log files on {len(nodes)} nodes, {pulled_bytes / (1 << 20):,.1f} MiB in all")
    print(f"{'':46} {'bytes moved':>16} {'seconds':>9}")
    for label, moved, seconds in rows:
        print(f"{label:46} {moved:>16,} {seconds:>9.1f}")
    print(
        f"edge: {t.results:,} bytes of results, the {t.package:,}-byte package (code and catalogue) "
        f"x {len(nodes) + 1}; {t.read:,} bytes of logs read on the nodes; "
        f"scanned at the edge on {len(t.nodes)} nodes, pulled for {len(t.pulled)}"
    )
    same = pulled.as_dict()["findings"] == edged.as_dict()["findings"]
    print(f"findings: pulled {[f.signature for f in pulled.findings]}")
    print(f"          edge   {[f.signature for f in edged.findings]}")
    print(f"stages equal: {'yes' if pulled.stages == edged.stages else 'no'}")
    print(f"edge faster than pulled: {'yes' if edge_seconds < pulled_seconds else 'no'}")
    ratio = pulled_bytes / edge_bytes
    print(f"edge moved {ratio:.1f}× fewer bytes; findings equal: {'yes' if same else 'no'}")  # noqa: RUF001
    return 0 if same else 1


def pull_only(sources: list[RayLogSource]) -> int:
    """Every file's bytes through Ray's log API at once; how many came."""
    from ray.util.state import get_log

    def fetch(source: RayLogSource) -> int:
        chunks = get_log(
            address="127.0.0.1:6379", node_id=source.node_id, filename=source.filename, tail=-1, encoding=None
        )
        return sum(len(c) for c in chunks)

    with ThreadPoolExecutor(len(sources)) as pool:
        return sum(pool.map(fetch, sources))


def diagnose(catalogue: cat.Catalogue, source: Input) -> tuple[Diagnosis, float]:
    started = time.monotonic()
    diagnosis = run(catalogue, [source], show=False, refresh=False).wait()
    return diagnosis, time.monotonic() - started


if __name__ == "__main__":
    sys.exit(main())
