"""64 live nodes over SSH: delay from a line written on a node to the finding it makes being shown, lines
lost, sparktui's CPU and memory, and streaming speed beside OpenSSH's own client.

    python bench/fanout.py [--nodes 64] [--rate 20000] [--seconds 20] [--probes 4] [--lines 20000]
                           [--part live|streaming|both] [--json OUT]

Starts ``--nodes`` real OpenSSH servers on loopback addresses (127.0.1.1, 127.0.1.2, ...), each with its
own log file, all followed by one sparktui live session (SSH sources, the pipeline, the analysis and a
spool, as the cockpit runs them) in a process of its own, so that its CPU time and peak RSS are its own.

Live part. One writer process appends real captured lines (the fixtures' ``*.log``, cycled, each node from
another place) to every node's log, ``--rate`` lines per second in all, for ``--seconds``. A few times a
second on each node (``--probes``) the line it appends is a probe: the one captured line of
``vllm/port-in-use`` that raises the catalogue's ``server-port-in-use`` finding, followed by the time it was
written (``sparktui-bench-ts=<unix time>``, which the signature's pattern ignores and which names no node).
The background lines never raise that finding (every line matching one of its patterns is left out of
them), so its count is exactly the number of probes analysed, and since the probe line names no host, its
node is the source's node.

Each probe is one unambiguous event: it is line N of node K's log, and every diagnosis says how many lines
of each source it was made from (``Diagnosis.sources``). The probe is *shown* at the first update from
``Pipeline.updates()`` whose diagnosis was made from at least N lines of node K; written-to-finding is that
moment less the time written in the probe. Every update with a diagnosis is checked: the finding's count
must equal the number of probes those line counts cover, and its nodes must be exactly the nodes with a
covered probe (each node's first probe adds its node), else the update is counted as a mismatch.
Written-to-arrival is measured for every probe as it arrives among the update's lines. Lines lost are the
lines written less the lines the updates delivered, per node, once the writer has stopped and the session
has had time to drain (they must all arrive).

Streaming part. ``--lines`` real captured lines per node are read to their end on all nodes at once:
by OpenSSH's ``ssh NODE cat FILE`` over connections already open (ControlMaster; the reference: the
fastest thing a user could run), by the same over connections of its own, and by sparktui's SSH sources
alone (read and cut into lines, nothing else) and in a live session (sources, pipeline, analysis, spool,
updates). sparktui's sides stream over connections they opened before the clock starts, too: each
follows an empty file, and once all follow, every file is replaced by its content (renamed over it).
Connecting is left out of the comparison because it is not streaming: OpenSSH negotiates a post-quantum
key exchange that asyncssh does not, so a cold ``ssh`` spends most of a small transfer on its handshake
(its row shows it). Aggregate lines per second, and the ratio to the reference.

Prints one table with the issue's criteria as PASS or FAIL (exit status 1 when one fails), and the CPU
the nodes (sshd, tail) and the writer used beside sparktui's, since on a small machine they share its
cores. Needs root (sshd, a mount namespace) and OpenSSH's server (tools/test.sh installs it). A quick
run: ``--nodes 8 --seconds 5 --lines 5000``.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import regex

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sparktui.core import catalogue as cat  # noqa: E402
from sparktui.core.analysis.analyzer import Analyzer  # noqa: E402
from sparktui.core.classify import classify  # noqa: E402
from sparktui.core.events import State  # noqa: E402
from sparktui.core.pipeline import Pipeline  # noqa: E402
from sparktui.core.remote.ssh import SshNode  # noqa: E402
from sparktui.core.sources.spool import Spool  # noqa: E402
from sparktui.core.sources.ssh import SshFileSource  # noqa: E402
from tests.servers.sshd import (  # noqa: E402
    Sshd,
    free_port,
    keygen,
    plain_namespace,
    sshd_config,
    wait_until,
)

STAMP = " sparktui-bench-ts="
PROBE_SIGNATURE = "server-port-in-use"
PROBE_FIXTURE = "vllm/port-in-use/server.log"
#: Seconds between two rounds of the writer's appends.
WRITER_TICK = 0.01
#: Seconds the live session may take, after the writer stopped, to deliver every line written.
DRAIN = 15.0
#: The issue's criteria.
P99_FINDING_MS = 250.0
RSS_MB = 300.0
STREAM_RATIO = 0.8


# -- the lines --------------------------------------------------------------------------------------


def corpus(signature: cat.Signature) -> tuple[list[bytes], bytes]:
    """The background (every fixture line that cannot raise ``signature``) and the probe (the captured line
    that raises it). Lines are split at ``\\n`` only, as the sources split them."""
    patterns = [regex.compile(p) for p in signature.any]

    def raises(line: bytes) -> bool:
        text = line.decode(errors="replace")
        return any(p.search(text) for p in patterns)

    background: list[bytes] = []
    for path in sorted((ROOT / "tests" / "fixtures").rglob("*.log")):
        background += [
            line for raw in path.read_bytes().split(b"\n") if (line := raw.rstrip(b"\r")) and not raises(line)
        ]
    probe = next(
        line for line in (ROOT / "tests" / "fixtures" / PROBE_FIXTURE).read_bytes().split(b"\n") if raises(line)
    )
    return background, probe


def check_probe(catalogue: cat.Catalogue, probe: bytes) -> None:
    """The stamped probe, alone, must raise the finding once, on the source's node."""
    line = probe.decode() + STAMP + "1700000000.000000"
    analyzer = Analyzer(catalogue)
    analyzer.add_source("s", "node-of-s")
    analyzer.feed("s", line)
    found = [f for f in analyzer.finish().findings if f.signature == PROBE_SIGNATURE]
    if classify(line).node is not None or len(found) != 1 or found[0].count != 1 or found[0].nodes != ("node-of-s",):
        raise SystemExit(f"bench: the stamped probe does not raise {PROBE_SIGNATURE} on its source's node: {line}")


def write_log(path: Path, background: list[bytes], start: int, count: int) -> None:
    with path.open("wb") as fh:
        fh.writelines(background[(start + j) % len(background)] + b"\n" for j in range(count))


# -- the nodes --------------------------------------------------------------------------------------


@dataclass
class Cluster:
    nodes: list[Sshd]
    config: Path  # ssh_config naming every node by its alias
    known: Path
    plain: subprocess.Popen[bytes] | None = None  # holds the namespace the nodes run in

    def stop(self) -> None:
        for n in self.nodes:
            n.stop()
        if self.plain is not None:
            self.plain.terminate()
            self.plain.wait()


def start_nodes(root: Path, count: int) -> Cluster:
    if count > 254:
        raise SystemExit("bench: at most 254 nodes (127.0.1.1 to 127.0.1.254)")
    root.mkdir(mode=0o700)
    Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
    user_key = keygen(root / "id_user", "sparktui-bench")
    (root / "authorized_keys").write_text(user_key.with_suffix(".pub").read_text())
    cluster = Cluster([], root / "ssh_config", root / "known_hosts", plain_namespace())
    try:
        for i in range(count):
            alias, address = f"n{i + 1}", f"127.0.1.{i + 1}"
            port = free_port(address)
            host_key = keygen(root / f"host_{alias}", alias)
            config = root / f"sshd_config.{alias}"
            config.write_text(sshd_config([f"{address}:{port}"], host_key, root / "authorized_keys", "MaxSessions 64"))
            log = root / f"sshd.{alias}.log"
            node = Sshd(alias, address, port, host_key, config, log, cluster.plain.pid if cluster.plain else None)
            node.start()
            cluster.nodes.append(node)
    except BaseException:
        cluster.stop()
        raise
    cluster.known.write_text(
        "".join(
            f"[{n.address}]:{n.port} {' '.join(n.host_key.with_suffix('.pub').read_text().split()[:2])}\n"
            for n in cluster.nodes
        )
    )
    cluster.config.write_text(
        "".join(
            f"Host {n.alias}\n  HostName {n.address}\n  Port {n.port}\n  User root\n  IdentityFile {user_key}\n"
            f"  IdentitiesOnly yes\n  BatchMode yes\n  UserKnownHostsFile {cluster.known}\n"
            "  StrictHostKeyChecking yes\n"
            for n in cluster.nodes
        )
    )
    return cluster


def sources(spec: dict[str, Any]) -> list[SshFileSource]:
    """One SSH source per node, each on its node's own connection, named after the node."""
    return [
        SshFileSource(SshNode(alias, config=[spec["config"]], known_hosts=spec["known"], agent=False), path, alias)
        for alias, path in spec["files"].items()
    ]


def session(spec: dict[str, Any]) -> Pipeline:
    """The live session as the cockpit runs it: every source into one pipeline that spools what arrives."""
    spool = Spool(Path(spec["spool"]), title="fanout bench")
    return Pipeline(cat.load(), sources(spec), spool=spool)


def cpu() -> tuple[float, float]:
    """This process's CPU seconds (user + system, all threads) and peak RSS in MB."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


# -- the sides, each a process of its own ---------------------------------------------------------------


def side(role: str, spec: dict[str, Any]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, __file__, "--role", role, json.dumps(spec)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        bufsize=1,
    )


def said(process: subprocess.Popen[str]) -> dict[str, Any]:
    """The next message of a side (one JSON line)."""
    assert process.stdout is not None
    line = process.stdout.readline()
    if not line:
        process.wait()
        raise SystemExit(f"bench: a side ended early (exit {process.returncode})")
    message: dict[str, Any] = json.loads(line)
    return message


def tell(out: TextIO, message: dict[str, Any]) -> None:
    out.write(json.dumps(message) + "\n")
    out.flush()


def writer_side(spec: dict[str, Any]) -> None:
    """Appends the background and the probes to every node's log at the set rate, then says how many lines
    and probes went to each."""
    background = Path(spec["background"]).read_bytes().split(b"\n")[:-1]
    probe = Path(spec["probe"]).read_bytes()
    paths: dict[str, str] = spec["files"]
    per_node = spec["rate"] / len(paths)
    every = 1.0 / spec["probes"]
    seconds = spec["seconds"]
    fds = {alias: os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644) for alias, path in paths.items()}
    at = {alias: (i * 131) % len(background) for i, alias in enumerate(paths)}
    written = dict.fromkeys(paths, 0)
    probes = dict.fromkeys(paths, 0)
    next_probe = {alias: every * (i + 0.5) / len(paths) for i, alias in enumerate(paths)}  # spread out
    start, start_cpu = time.monotonic(), cpu()[0]
    late = 0.0  # the most the writer fell behind its schedule
    while True:
        elapsed = time.monotonic() - start
        due = int(per_node * min(elapsed, seconds))
        for alias, fd in fds.items():
            count = due - written[alias]
            if count <= 0:
                continue
            first = at[alias]
            chunk = [background[(first + j) % len(background)] for j in range(count)]
            at[alias] = (first + count) % len(background)
            if elapsed >= next_probe[alias]:
                chunk[-1] = probe + f"{STAMP}{time.time():.6f}".encode()
                probes[alias] += 1
                late = max(late, elapsed - next_probe[alias])
                next_probe[alias] += every
            os.write(fd, b"\n".join(chunk) + b"\n")
            written[alias] += count
        if elapsed >= seconds:
            break
        time.sleep(max(0.0, WRITER_TICK - (time.monotonic() - start - elapsed)))
    for fd in fds.values():
        os.close(fd)
    seconds = time.monotonic() - start
    tell(
        sys.stdout,
        {"written": written, "probes": probes, "seconds": seconds, "late": late, "cpu": cpu()[0] - start_cpu},
    )


def live_side(spec: dict[str, Any]) -> None:
    """The sparktui side of the live part: follows every node, measures each probe's arrival and the update
    that shows its finding, and counts the lines that arrived."""
    pipeline = session(spec).start()
    got: collections.Counter[str] = collections.Counter()
    waiting: dict[str, collections.deque[tuple[int, float]]] = collections.defaultdict(collections.deque)
    covered: collections.Counter[str] = collections.Counter()
    arrival: list[float] = []
    finding: list[float] = []
    mismatches = 0
    expected: dict[str, int] = {}
    told = threading.Event()

    def listen() -> None:  # the parent says how many lines were written once the writer is done
        expected.update(json.loads(sys.stdin.readline())["written"])
        told.set()

    threading.Thread(target=listen, daemon=True).start()
    ready = False
    start_cpu = 0.0
    deadline = float("inf")
    last = None
    for update in pipeline.updates():
        now = time.time()
        for line in update.lines:
            got[line.source] += 1
            at = line.text.find(STAMP)
            if at >= 0:
                written = float(line.text[at + len(STAMP) :])
                arrival.append(now - written)
                waiting[line.source].append((line.number, written))
        if update.diagnosis is not None:
            last = update.diagnosis
            lines_of = {s.name: s.lines for s in update.diagnosis.sources}
            for source, queue in waiting.items():
                while queue and queue[0][0] <= lines_of.get(source, 0):
                    finding.append(now - queue.popleft()[1])
                    covered[source] += 1
            shown = next((f for f in update.diagnosis.findings if f.signature == PROBE_SIGNATURE), None)
            count, nodes = (shown.count, set(shown.nodes)) if shown else (0, set())
            if count != sum(covered.values()) or nodes != {s for s, n in covered.items() if n}:
                mismatches += 1
        streaming = [s for s in update.states.values() if s.state is State.STREAMING]
        if not ready and len(streaming) == len(spec["files"]):
            ready = True
            start_cpu = cpu()[0]
            tell(sys.stdout, {"ready": True})
        if told.is_set() and deadline == float("inf"):
            deadline = time.monotonic() + DRAIN
        if told.is_set() and (all(got[a] >= n for a, n in expected.items()) or time.monotonic() > deadline):
            pipeline.stop()
        if update.done:
            break
    seconds, rss = cpu()
    shown = next((f for f in last.findings if f.signature == PROBE_SIGNATURE), None) if last else None
    tell(
        sys.stdout,
        {
            "got": dict(got),
            "read": pipeline.lines,
            "arrival": arrival,
            "finding": finding,
            "uncovered": sum(len(q) for q in waiting.values()),
            "mismatches": mismatches,
            "shown_count": shown.count if shown else 0,
            "shown_nodes": len(shown.nodes) if shown else 0,
            "cpu": seconds - start_cpu,
            "rss": rss,
            "error": update.error,
        },
    )


def stream_side(spec: dict[str, Any]) -> None:
    """The sparktui side of the streaming part, by the SSH sources alone or by a live session: once every
    source is connected and following its (empty) file, every file is replaced by a copy of the content
    (the remote ``tail -F`` follows the new file from its start), and the clock runs from there until
    every line has been delivered."""
    each = spec["lines"]
    clock: dict[str, float] = {}

    def fill() -> None:  # each file replaced by its content at once, as a rotated log is
        clock["start"], clock["cpu"] = time.perf_counter(), cpu()[0]
        for path, content in zip(spec["files"].values(), spec["content"], strict=True):
            os.replace(content, path)

    if spec["mode"] == "sources":

        async def every() -> None:
            following = asyncio.Barrier(len(spec["files"]) + 1)

            async def drain(source: SshFileSource) -> None:
                count = -1
                async for received in source.stream(None):
                    if count < 0:
                        count = 0
                        await following.wait()
                    count += len(received.lines)
                    if count >= each:
                        return

            tasks = [asyncio.create_task(drain(s)) for s in sources(spec)]
            await following.wait()
            fill()
            await asyncio.gather(*tasks)

        asyncio.run(every())
    else:
        pipeline = session(spec).start()
        got: collections.Counter[str] = collections.Counter()
        for update in pipeline.updates():
            for line in update.lines:
                got[line.source] += 1
            streaming = [s for s in update.states.values() if s.state is State.STREAMING]
            if not clock and len(streaming) == len(spec["files"]):
                fill()
            if len(got) == len(spec["files"]) and min(got.values()) >= each:
                break
        pipeline.stop()
    elapsed = time.perf_counter() - clock["start"]
    seconds, rss = cpu()
    tell(sys.stdout, {"seconds": elapsed, "cpu": seconds - clock["cpu"], "rss": rss})


# -- the parent -----------------------------------------------------------------------------------------


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))]


def live(cluster: Cluster, root: Path, args: argparse.Namespace) -> dict[str, Any]:
    files = {n.alias: str(root / f"live.{n.alias}.log") for n in cluster.nodes}
    for path in files.values():
        Path(path).touch()
    spec = {"config": str(cluster.config), "known": str(cluster.known), "files": files, "spool": str(root / "spool")}
    sparktui = side("live", spec)
    try:
        said(sparktui)  # every source is streaming
        nodes_before = nodes_cpu(cluster)
        writer = side(
            "writer",
            {
                "files": files,
                "rate": args.rate,
                "seconds": args.seconds,
                "probes": args.probes,
                "background": str(root / "background"),
                "probe": str(root / "probe"),
            },
        )
        wrote = said(writer)
        nodes = nodes_cpu(cluster) - nodes_before
        writer.wait()
        assert sparktui.stdin is not None
        tell(sparktui.stdin, wrote)
        result = said(sparktui)
        sparktui.wait()
    finally:
        if sparktui.poll() is None:
            sparktui.kill()
    written = sum(wrote["written"].values())
    lost = sum(max(0, n - result["got"].get(a, 0)) for a, n in wrote["written"].items())
    return {
        "written": written,
        "write_seconds": wrote["seconds"],
        "writer_late_ms": wrote["late"] * 1000,
        "writer_cpu_seconds": wrote["cpu"],
        "nodes_cpu_seconds": nodes,
        "probes": sum(wrote["probes"].values()),
        "delivered": sum(result["got"].values()),
        "lost": lost,
        "finding_p50_ms": percentile(result["finding"], 0.5) * 1000,
        "finding_p99_ms": percentile(result["finding"], 0.99) * 1000,
        "finding_max_ms": max(result["finding"], default=float("nan")) * 1000,
        "findings_measured": len(result["finding"]),
        "arrival_p50_ms": percentile(result["arrival"], 0.5) * 1000,
        "arrival_p99_ms": percentile(result["arrival"], 0.99) * 1000,
        "arrivals_measured": len(result["arrival"]),
        "never_shown": result["uncovered"],
        "mismatches": result["mismatches"],
        "shown_count": result["shown_count"],
        "shown_nodes": result["shown_nodes"],
        "cpu_seconds": result["cpu"],
        "rss_mb": result["rss"],
        "error": result["error"],
    }


def ssh_cat(
    cluster: Cluster, files: dict[str, str], masters: Path | None = None, held: Sequence[int] = ()
) -> dict[str, float]:
    """OpenSSH's client reading every file at once, each over a connection of its own, or over the open
    connection of a master in ``masters`` (ControlMaster); CPU seconds are the clients' and those the
    masters (the processes ``held``) spent meanwhile."""
    shared = ["-S", str(masters / "%n")] if masters else []
    used = -sum(cpu_of(pid) for pid in held)
    start = time.perf_counter()
    procs = [
        subprocess.Popen(["ssh", "-F", str(cluster.config), *shared, alias, "cat", path], stdout=subprocess.DEVNULL)
        for alias, path in files.items()
    ]
    for p in procs:
        _, status, usage = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        used += usage.ru_utime + usage.ru_stime
        if p.returncode != 0:
            raise SystemExit(f"bench: ssh cat exited {p.returncode}")
    seconds = time.perf_counter() - start
    return {"seconds": seconds, "cpu": used + sum(cpu_of(pid) for pid in held), "rss": float("nan")}


def nodes_cpu(cluster: Cluster) -> float:
    """CPU seconds used so far by what runs on the nodes now (each sshd's sessions, their shells and tails)."""
    parents: dict[int, list[int]] = collections.defaultdict(list)
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                parents[int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])].append(int(entry.name))
    todo = [n.process.pid for n in cluster.nodes if n.process is not None]
    used = 0.0
    while todo:
        for child in parents.get(todo.pop(), []):
            with contextlib.suppress(OSError):
                used += cpu_of(child)
            todo.append(child)
    return used


def cpu_of(pid: int) -> float:
    """CPU seconds (user + system) a running process has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def streaming(cluster: Cluster, root: Path, args: argparse.Namespace, background: list[bytes]) -> dict[str, Any]:
    """Every node's file read to its end on all nodes at once: by ``ssh NODE cat FILE`` over connections
    already open (ControlMaster) and over connections of its own, then by sparktui's sources alone and by a
    live session, each on connections it opened before the clock started."""
    content = {n.alias: root / f"stream.{n.alias}.log" for n in cluster.nodes}
    for i, path in enumerate(content.values()):
        write_log(path, background, i * 131, args.lines)
    files = {alias: str(path) for alias, path in content.items()}
    masters = root / "masters"
    masters.mkdir()
    opened = [
        subprocess.Popen(["ssh", "-F", str(cluster.config), "-M", "-S", str(masters / alias), "-N", alias])
        for alias in files
    ]
    try:
        wait_until(lambda: all((masters / alias).exists() for alias in files), 60, "ssh's master connections")
        runs = {"ssh cat": ssh_cat(cluster, files, masters, [p.pid for p in opened])}
    finally:
        for p in opened:
            p.terminate()
            p.wait()
    runs["ssh cat cold"] = ssh_cat(cluster, files)
    for mode in ("sources", "session"):
        targets = {alias: str(root / f"{mode}.{alias}.log") for alias in files}
        copies = [str(root / f"{mode}.{alias}.next") for alias in files]
        for path, copy, content in zip(targets.values(), copies, files.values(), strict=True):
            Path(path).touch()
            shutil.copyfile(content, copy)
        spec = {
            "config": str(cluster.config),
            "known": str(cluster.known),
            "files": targets,
            "content": copies,
            "lines": args.lines,
            "mode": mode,
            "spool": str(root / f"spool-{mode}"),
        }
        process = side("stream", spec)
        runs[mode] = said(process)
        process.wait()
    total = args.lines * len(files)
    for r in runs.values():
        r["lines_per_s"] = total / r["seconds"]
        r["ratio"] = runs["ssh cat"]["seconds"] / r["seconds"]
    return {"lines": total, "runs": runs}


def cores(seconds: float, over: float) -> str:
    return f"{seconds:.1f} s = {seconds / over:.2f} cores"


#: One row of the table: what, the figure, the criterion (or the ratio), and the verdict where one is due.
Row = tuple[str, str, str, bool | None]


def report(
    args: argparse.Namespace, load: str, lv: dict[str, Any] | None, st: dict[str, Any] | None
) -> dict[str, bool]:
    """Prints one table, a section per part and a row per figure, with the criterion and its verdict beside
    the figure it judges; returns the verdicts by criterion."""
    sections: list[tuple[str, list[Row]]] = []
    if lv is not None:
        shown = lv["never_shown"] == 0 and lv["mismatches"] == 0
        rows: list[Row] = [
            (
                "written-to-finding p50 / p99 / max",
                f"{lv['finding_p50_ms']:.0f} / {lv['finding_p99_ms']:.0f} / {lv['finding_max_ms']:.0f} ms",
                f"p99 written-to-finding < {P99_FINDING_MS:.0f} ms",
                lv["finding_p99_ms"] < P99_FINDING_MS and shown,
            ),
            ("written-to-arrival p50 / p99", f"{lv['arrival_p50_ms']:.0f} / {lv['arrival_p99_ms']:.0f} ms", "", None),
            ("probes never shown / updates disagreeing", f"{lv['never_shown']} / {lv['mismatches']}", "", None),
            ("lines lost", f"{lv['lost']:,} of {lv['written']:,}", "0 lines lost", lv["lost"] == 0 and not lv["error"]),
            ("sparktui CPU", cores(lv["cpu_seconds"], lv["write_seconds"]), "", None),
            ("the nodes' CPU (sshd, tail)", cores(lv["nodes_cpu_seconds"], lv["write_seconds"]), "", None),
            ("the writer's CPU", cores(lv["writer_cpu_seconds"], lv["write_seconds"]), "", None),
            ("sparktui peak RSS", f"{lv['rss_mb']:.0f} MB", f"peak RSS < {RSS_MB:.0f} MB", lv["rss_mb"] < RSS_MB),
        ]
        rate = lv["written"] / lv["write_seconds"]
        sections.append((f"live: {rate:,.0f} lines/s for {lv['write_seconds']:.1f} s, {lv['probes']:,} probes", rows))
    if st is not None:
        names = {
            "ssh cat": "ssh NODE cat FILE (connections open)",
            "ssh cat cold": "ssh NODE cat FILE, each connecting",
            "sources": "sparktui SSH sources alone",
            "session": "sparktui live session (analysis)",
        }
        rows = []
        for key, name in names.items():
            r = st["runs"][key]
            figure = f"{r['lines_per_s']:,.0f} lines/s, {r['cpu']:.2f} CPU s"
            if key == "session":
                rows.append(
                    (name, figure, f"{r['ratio']:.2f}x, SSH streaming >= {STREAM_RATIO}x", r["ratio"] >= STREAM_RATIO)
                )
            else:
                rows.append((name, figure, f"{r['ratio']:.2f}x", None))
        sections.append((f"streaming: {st['lines']:,} lines, all nodes at once; vs ssh cat (connections open)", rows))
    print(f"{args.nodes} nodes over SSH on loopback; load average before: {load}")
    for title, rows in sections:
        print(title)
        for name, figure, criterion, ok in rows:
            verdict = "" if ok is None else "PASS" if ok else "FAIL"
            print(f"  {name:<42}{figure:>32}  {verdict:<6}{criterion}".rstrip())
    if lv is not None and lv["error"]:
        print(f"the live session broke: {lv['error']}")
    return {criterion.split(", ")[-1]: ok for _, rows in sections for _, _, criterion, ok in rows if ok is not None}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=64)
    parser.add_argument("--rate", type=float, default=20_000, help="lines per second in all (default 20000)")
    parser.add_argument("--seconds", type=float, default=20.0, help="seconds of writing (default 20)")
    parser.add_argument("--probes", type=float, default=4.0, help="probes per second on each node (default 4)")
    parser.add_argument("--lines", type=int, default=20_000, help="lines per node when streaming (default 20000)")
    parser.add_argument("--part", choices=("live", "streaming", "both"), default="both", help="what to run")
    parser.add_argument("--json", type=Path, help="write every figure to this file")
    parser.add_argument("--role", help=argparse.SUPPRESS)
    parser.add_argument("spec", nargs="?", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.role:
        {"writer": writer_side, "live": live_side, "stream": stream_side}[args.role](json.loads(args.spec))
        return 0
    if shutil.which("sshd") is None and not Path("/usr/sbin/sshd").exists():
        print("bench: OpenSSH's server is not installed (apt-get install openssh-server)", file=sys.stderr)
        return 2
    catalogue = cat.load()
    signature = next(s for s in catalogue.signatures if s.id == PROBE_SIGNATURE)
    background, probe = corpus(signature)
    check_probe(catalogue, probe)
    load = Path("/proc/loadavg").read_text().split()[:3]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "background").write_bytes(b"".join(line + b"\n" for line in background))
        (root / "probe").write_bytes(probe)
        cluster = start_nodes(root / "nodes", args.nodes)
        try:
            lv = live(cluster, root, args) if args.part != "streaming" else None
            st = streaming(cluster, root, args, background) if args.part != "live" else None
        finally:
            cluster.stop()
    criteria = report(args, " ".join(load), lv, st)
    if args.json:
        figures = {"args": {k: v for k, v in vars(args).items() if k not in ("role", "spec", "json")}, "load": load}
        figures |= {"live": lv, "streaming": st, "criteria": criteria}
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
    return 0 if all(criteria.values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
