"""Live sources over SSH at scale: lines per second per stream and in aggregate, and line latency.

    python bench/ssh_throughput.py [--nodes 16] [--lines 100000]

Starts ``--nodes`` real OpenSSH servers on loopback addresses (127.0.1.1, 127.0.1.2, ...), each with a
log file of ``--lines`` real captured lines, then:
  * streams every file through sparktui's SSH sources into one live session (the analyser matching every
    line) and reports per-stream and aggregate lines per second, beside the reference: OpenSSH's own
    client running ``cat`` on every node at once;
  * appends time-stamped lines on every node at 50 lines per second while the streams follow, and reports
    the delay from a line written on a node to its arrival at the front end (median and 99th percentile).
Needs root (sshd) and OpenSSH's server (tools/test.sh installs it).
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sparktui.core import catalogue as cat  # noqa: E402
from sparktui.core.pipeline import run  # noqa: E402
from sparktui.core.remote.ssh import SshNode  # noqa: E402
from sparktui.core.sources.ssh import SshFileSource  # noqa: E402
from tests.servers.sshd import Sshd, free_port, keygen  # noqa: E402

STAMP = "sparktui-bench-ts="


def corpus() -> list[str]:
    lines: list[str] = []
    for path in sorted((ROOT / "tests" / "fixtures").rglob("*.log")):
        lines += [line for line in path.read_text(errors="replace").splitlines() if line]
    return lines


def start_nodes(root: Path, count: int) -> tuple[list[Sshd], Path, Path]:
    root.mkdir(mode=0o700)
    Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
    user_key = keygen(root / "id_user", "sparktui-bench")
    (root / "authorized_keys").write_text(user_key.with_suffix(".pub").read_text())
    nodes = []
    for i in range(count):
        alias, address = f"n{i + 1}", f"127.0.1.{i + 1}"
        port = free_port(address)
        host_key = keygen(root / f"host_{alias}", alias)
        config = root / f"sshd_config.{alias}"
        config.write_text(
            f"ListenAddress {address}:{port}\nHostKey {host_key}\nAuthorizedKeysFile {root / 'authorized_keys'}\n"
            "PidFile none\nPermitRootLogin prohibit-password\nPasswordAuthentication no\nUsePAM no\n"
            "StrictModes no\nMaxSessions 64\n"
        )
        node = Sshd(alias, address, port, host_key, config, root / f"sshd.{alias}.log")
        node.start()
        nodes.append(node)
    known = root / "known_hosts"
    known.write_text(
        "".join(
            f"[{n.address}]:{n.port} {' '.join(n.host_key.with_suffix('.pub').read_text().split()[:2])}\n"
            for n in nodes
        )
    )
    config = root / "ssh_config"
    config.write_text(
        "".join(
            f"Host {n.alias}\n  HostName {n.address}\n  Port {n.port}\n  User root\n  IdentityFile {user_key}\n"
            f"  UserKnownHostsFile {known}\n  StrictHostKeyChecking yes\n"
            for n in nodes
        )
    )
    return nodes, config, known


def reference(nodes: list[Sshd], config: Path, files: list[Path]) -> float:
    start = time.perf_counter()
    procs = [
        subprocess.Popen(["ssh", "-F", str(config), n.alias, "cat", str(f)], stdout=subprocess.DEVNULL)
        for n, f in zip(nodes, files, strict=True)
    ]
    for p in procs:
        p.wait()
    return time.perf_counter() - start


async def stream_all(
    nodes: list[Sshd], config: Path, known: Path, files: list[Path], lines_each: int, follow_seconds: float
) -> dict[str, float]:
    ssh_nodes = [SshNode(n.alias, config=[config], known_hosts=known, agent=False) for n in nodes]
    sources = [SshFileSource(s, str(f), name=s.name) for s, f in zip(ssh_nodes, files, strict=True)]
    done: dict[str, float] = {}
    counts = dict.fromkeys((s.name for s in sources), 0)
    delays: list[float] = []
    start = time.perf_counter()

    pipeline = run(cat.load(), sources)

    def watch() -> None:
        for update in pipeline.updates():
            now = time.time()
            for line in update.lines:
                counts[line.source] += 1
                if counts[line.source] >= lines_each and line.source not in done:
                    done[line.source] = time.perf_counter() - start
                at = line.text.find(STAMP)
                if at >= 0:
                    delays.append(now - float(line.text[at + len(STAMP) :]))

    watching = asyncio.create_task(asyncio.to_thread(watch))
    while len(done) < len(sources):
        await asyncio.sleep(0.05)
    bulk = time.perf_counter() - start
    writing_until = time.time() + follow_seconds
    while time.time() < writing_until:  # 50 lines per second on every node
        for f in files:
            with f.open("a") as fh:
                fh.write(f"latency probe {STAMP}{time.time():.6f}\n")
        await asyncio.sleep(0.02)
    await asyncio.sleep(1.0)
    pipeline.stop()
    await watching
    per_stream = [lines_each / t for t in done.values()]
    delays.sort()
    return {
        "bulk_seconds": bulk,
        "stream_median": statistics.median(per_stream),
        "stream_min": min(per_stream),
        "aggregate": lines_each * len(sources) / bulk,
        "latency_p50": statistics.median(delays) * 1000 if delays else float("nan"),
        "latency_p99": delays[int(len(delays) * 0.99)] * 1000 if delays else float("nan"),
        "probes": len(delays),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=16)
    parser.add_argument("--lines", type=int, default=100_000, help="lines in each node's log (default 100000)")
    parser.add_argument("--follow", type=float, default=5.0, help="seconds of latency probes (default 5)")
    args = parser.parse_args()
    if shutil.which("sshd") is None and not Path("/usr/sbin/sshd").exists():
        print("bench: OpenSSH's server is not installed (apt-get install openssh-server)", file=sys.stderr)
        return 2
    text = corpus()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        nodes, config, known = start_nodes(root / "nodes", args.nodes)
        try:
            files = []
            for i in range(args.nodes):
                f = root / f"node{i + 1}.log"
                f.write_text("".join(text[(i * 131 + j) % len(text)] + "\n" for j in range(args.lines)))
                files.append(f)
            ref = reference(nodes, config, files)
            r = asyncio.run(stream_all(nodes, config, known, files, args.lines, args.follow))
        finally:
            for n in nodes:
                n.stop()
    total = args.lines * args.nodes
    print(f"{args.nodes} nodes x {args.lines:,} lines over SSH on loopback")
    print(f"{'run':<40}{'seconds':>9}{'aggregate lines/s':>20}{'vs ssh cat':>12}")
    print(f"{'ssh NODE cat FILE, all nodes at once':<40}{ref:>9.2f}{total / ref:>20,.0f}{1.0:>12.2f}")
    print(
        f"{'sparktui live session (matching)':<40}{r['bulk_seconds']:>9.2f}{r['aggregate']:>20,.0f}"
        f"{ref / r['bulk_seconds']:>12.2f}"
    )
    print(f"per stream: median {r['stream_median']:,.0f} lines/s, slowest {r['stream_min']:,.0f} lines/s")
    print(
        f"written-to-pipeline delay over {r['probes']:,.0f} probes: median {r['latency_p50']:.1f} ms, "
        f"p99 {r['latency_p99']:.1f} ms"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
