#!/usr/bin/env python3
"""Capture ``py-spy dump`` of every rank of the jobs of scenario.py (beside this file) while they hang.

Usage: capture.py OUTDIR [--backend gloo|nccl] [--ranks N] [--only REGEX] [--native] [--node-script] [--ras]

For each scenario it starts the ranks (their own MASTER_PORT), waits until each rank that is meant to say
so has printed ``in place`` (bounded), lets them settle for two seconds, then writes into
``OUTDIR/<backend>-<scenario>/``:

* ``rank<R>.txt``: ``py-spy dump --pid <pid>`` of rank R, exactly as py-spy printed it (stdout, then stderr)
* ``rank<R>.later.txt``: the same again three seconds later (progress or hang)
* ``rank<R>.native.txt``: ``py-spy dump --native`` (with ``--native``)
* ``nvidia-smi.csv``: GPU utilisation, power, clocks and the compute processes (where nvidia-smi exists)
* ``fr/``: the flight recorder's dumps (``skip-collective`` and ``mismatch`` on nccl, which arm it)
* ``node-script.txt``: what the node script of ``sparktui stacks`` printed (with ``--node-script``)
* ``ras.txt``: what NCCL's RAS port (``localhost:28028``, NCCL >= 2.24) answered, twice (with ``--ras``): in
  JSON, then as text, right after the settling and again ``RAS_AGAIN_S`` later (after the RAS threads' own
  5 s "unresponsive" timer); every line sent (``>``) and received, unedited
* ``meta.txt``: the commands, the pids, the versions, how each rank ended

With ``--backend nccl`` every rank is a "host" of its own on GPU 0: its own host name (``unshare -u``, where
allowed) and NCCL_HOSTID, P2P and SHM off, NVLink multicast off. The ranks are killed (SIGKILL) at the end.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SCENARIO = HERE / "scenario.py"
SCENARIOS = ("second-group", "healthy", "mismatch", "busy-python", "store-wait", "skip-collective")
#: One process alone (scenario.py's ALONE); ray-get runs with this python (it needs ray, not torch).
ALONE = ("load-weights", "compile", "ray-get")
GPU_QUERY = "index,name,utilization.gpu,power.draw,clocks.sm,clocks.mem,temperature.gpu,memory.used"
READY_S = 180.0
#: The scenarios run with the flight recorder armed (on NCCL), and a PG timeout short enough to dump soon.
ARMED = ("skip-collective", "mismatch")
#: The nonce of the node script's markers in ``node-script.txt``.
NONCE = "5f3c9e1a7b20"
FR_WAIT_S = 150.0
#: NCCL's RAS port, its client protocol's version, and the seconds between the two times it is asked.
RAS_PORT = 28028
RAS_PROTOCOL = 2
RAS_AGAIN_S = 8.0


def ras_exchange(formats: tuple[str, ...] = ("json", "text"), timeout: float = 12.0) -> str:
    """One conversation per format with the RAS port of this machine: the protocol's greeting, a timeout for
    the peers, the format, ``VERBOSE STATUS``; the whole transcript (``> `` before what was sent), or why
    none."""
    transcript: list[str] = []
    for fmt in formats:
        sent = [f"CLIENT PROTOCOL {RAS_PROTOCOL}", "TIMEOUT 5", f"SET FORMAT {fmt}", "VERBOSE STATUS"]
        try:
            with socket.create_connection(("127.0.0.1", RAS_PORT), timeout=timeout) as sock:
                reader = sock.makefile("rb")
                for i, line in enumerate(sent):
                    transcript.append(f"> {line}")
                    sock.sendall(line.encode() + b"\n")
                    if i < len(sent) - 1:
                        transcript.append(reader.readline().decode(errors="replace").rstrip("\n"))
                answer = b""
                with contextlib.suppress(TimeoutError):  # an answer the server does not end by closing: up to here
                    while chunk := reader.read1(65536):
                        answer += chunk
                transcript.append(answer.decode(errors="replace"))
        except OSError as exc:
            transcript.append(f"(no answer: {exc})")
    return "\n".join(transcript) + "\n"


def run_scenario(
    out: Path,
    name: str,
    backend: str,
    ranks: int,
    port: int,
    native: bool,
    python: str,
    node_script: str,
    ras: bool = False,
) -> None:
    folder = out / f"{backend}-{name}"
    folder.mkdir(parents=True, exist_ok=True)
    started = 1 if name in ("store-wait", *ALONE) else ranks
    if name == "ray-get":
        python = sys.executable
    env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), WORLD_SIZE=str(ranks))
    env.update(PYTHONUNBUFFERED="1", NCCL_NVLS_ENABLE="0", TORCH_SYMM_MEM_DISABLE_MULTICAST="1")
    env["NVSHMEM_DISABLE_NVLS"] = "1"
    extra: list[str] = ["--backend", backend]
    armed = name in ARMED and backend == "nccl"
    if armed:
        fr = folder / "fr"
        fr.mkdir(exist_ok=True)
        env.update(
            TORCH_NCCL_TRACE_BUFFER_SIZE="2000",
            TORCH_NCCL_DUMP_ON_TIMEOUT="1",
            TORCH_NCCL_DEBUG_INFO_TEMP_FILE=str(fr / "nccl_trace_rank_"),
        )
        extra += ["--pg-timeout-s", "20"]  # the dumps come after the watchdog's timeout
    procs: list[subprocess.Popen[bytes]] = []
    logs = []
    uts = backend == "nccl" and shutil.which("unshare") is not None
    for rank in range(started):
        rank_env = dict(env, RANK=str(rank), LOCAL_RANK="0")
        argv = [python, str(SCENARIO), name, *extra]
        if backend == "nccl":
            host = f"node-{chr(ord('a') + rank)}"
            rank_env.update(NCCL_HOSTID=host, NCCL_P2P_DISABLE="1", NCCL_SHM_DISABLE="1", CUDA_VISIBLE_DEVICES="0")
            if uts:
                argv = ["unshare", "-u", "sh", "-c", 'hostname "$0" && exec "$@"', host, *argv]
        log = (folder / f"rank{rank}.log").open("wb")
        logs.append(log)
        procs.append(subprocess.Popen(argv, env=rank_env, stdout=log, stderr=subprocess.STDOUT))
    meta = [f"scenario {name} backend {backend} ranks {ranks} started {started} port {port}"]
    meta += [f"rank {r} pid {p.pid}: {' '.join(p.args)}" for r, p in enumerate(procs)]  # type: ignore[arg-type]
    waiting = {1: {0}, ranks: set(range(ranks))}[started]
    deadline = time.monotonic() + READY_S
    while time.monotonic() < deadline:
        said = {r for r in waiting if b"in place" in (folder / f"rank{r}.log").read_bytes()}
        if said == waiting or any(p.poll() is not None for p in procs):
            break
        time.sleep(0.5)
    meta.append(f"in place after {READY_S - (deadline - time.monotonic()):.1f} s: {sorted(said)} of {sorted(waiting)}")
    time.sleep(2)
    asked = [f"# asked {time.time():.2f}", ras_exchange()] if ras else []
    if shutil.which("nvidia-smi"):
        with (folder / "nvidia-smi.csv").open("w") as f:
            for query in (
                ["--query-gpu=" + GPU_QUERY, "--format=csv"],
                ["--query-compute-apps=pid,process_name,used_memory", "--format=csv"],
            ):
                f.write(subprocess.run(["nvidia-smi", *query], capture_output=True, text=True).stdout)
    rounds: list[tuple[str, list[str]]] = [("", []), (".later", [])] + ([(".native", ["--native"])] if native else [])
    for i, (suffix, flags) in enumerate(rounds):
        if i == 1:
            time.sleep(3)
        for rank, p in enumerate(procs):
            done = subprocess.run(["py-spy", "dump", *flags, "--pid", str(p.pid)], capture_output=True, timeout=60)
            (folder / f"rank{rank}{suffix}.txt").write_bytes(done.stdout + done.stderr)
            meta.append(f"py-spy dump {' '.join(flags)} rank {rank}: exit {done.returncode}")
    if ras:
        time.sleep(max(0.0, RAS_AGAIN_S - 3))
        asked += [f"# asked {time.time():.2f}", ras_exchange()]
        (folder / "ras.txt").write_text("\n".join(asked))
        meta.append("NCCL's RAS port asked twice (ras.txt)")
    if node_script:
        done = subprocess.run(["sh", "-c", node_script], capture_output=True, timeout=180)
        (folder / "node-script.txt").write_bytes(done.stdout + done.stderr)
        meta.append(f"the node script of sparktui stacks (nonce {NONCE}): exit {done.returncode}")
    if armed:
        deadline = time.monotonic() + FR_WAIT_S
        fr = folder / "fr"
        alive = sum(p.poll() is None for p in procs)
        while time.monotonic() < deadline and len(list(fr.iterdir())) < alive:
            time.sleep(1)
        time.sleep(3)  # let the last writer finish its file
        meta.append(f"flight recorder files: {sorted(f.name for f in fr.iterdir())}")
    for rank, p in enumerate(procs):
        code = p.poll()
        if code is None and name == "ray-get":  # ray.shutdown at exit stops the local instance's processes
            p.send_signal(signal.SIGINT)
            with contextlib.suppress(subprocess.TimeoutExpired):
                p.wait(timeout=15)
        if code is None and p.poll() is None:
            p.send_signal(signal.SIGKILL)
            p.wait()
        meta.append(f"rank {rank} {'exited ' + str(code) if code is not None else 'killed by the capture'}")
    for log in logs:
        log.close()
    (folder / "meta.txt").write_text("\n".join(meta) + "\n")
    print(f"capture: {folder.name} done", flush=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out", type=Path)
    p.add_argument("--backend", choices=("gloo", "nccl"), default="gloo")
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--only", default=".", help="a regex: only the scenarios it matches")
    p.add_argument("--native", action="store_true", help="also dump with --native")
    p.add_argument("--python", default=sys.executable, help="the python with torch that runs the ranks")
    p.add_argument("--port", type=int, default=29710)
    p.add_argument(
        "--node-script",
        action="store_true",
        help="also run the node script of sparktui stacks (2 samples) while the ranks are in place",
    )
    p.add_argument("--ras", action="store_true", help="also ask NCCL's RAS port, twice, while the ranks are in place")
    args = p.parse_args()
    node_script = _node_script() if args.node_script else ""
    args.out.mkdir(parents=True, exist_ok=True)
    versions = subprocess.run(
        [args.python, "-c", "import torch,sys;print('torch', torch.__version__, 'python', sys.version.split()[0])"],
        capture_output=True,
        text=True,
    ).stdout
    spy = subprocess.run(["py-spy", "--version"], capture_output=True, text=True).stdout
    (args.out / "versions.txt").write_text(versions + spy)
    for i, name in enumerate(s for s in SCENARIOS + ALONE if re.search(args.only, s)):
        run_scenario(
            args.out, name, args.backend, args.ranks, args.port + i, args.native, args.python, node_script, args.ras
        )


def _node_script() -> str:
    """The script ``sparktui stacks`` runs on a node, made by sparktui's own module (standard library only,
    so it is loaded from its file without sparktui's dependencies)."""
    spec = importlib.util.spec_from_file_location("stacks_script", HERE.parents[2] / "sparktui/core/stacks/script.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["stacks_script"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return str(module.script(module.Request(samples=2, interval=1.0), NONCE))


if __name__ == "__main__":
    main()
