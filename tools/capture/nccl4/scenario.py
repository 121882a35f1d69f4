#!/usr/bin/env python3
"""The program of ONE rank in a four-rank torch.distributed (NCCL) log capture.

capture.sh starts four of these per scenario, one process per rank, and gives each its launcher
variables (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT; LOCAL_RANK is only reported). Every rank
uses the same CUDA device (``--cuda-device``, 0 by default), because the capture emulates four
hosts on one GPU.

Behaviours (first argument):

``healthy``
    Two checked all_reduce calls on the world group, then the layout of a small TP x PP job:
    ``new_group`` for the tensor-parallel pairs {0,1} and {2,3} and for the pipeline-like pairs
    {0,2} and {1,3} (every rank creates all four groups, in the same order, as torch requires).
    Each rank runs one checked all_reduce in its TP group and one in its PP group, then
    ``destroy_process_group`` and exit 0.
``first-collective-hang``
    One all_reduce on the world group, then ``new_group`` over all ranks. Every rank except the
    idle rank (``--idle-rank``, 3) calls all_reduce on the new group; the idle rank never does and
    sleeps for ``--hang-s`` seconds. The new communicator's first collective cannot finish.
``rank-fails``
    One all_reduce on the world group, then every rank except the failing rank
    (``--fail-rank``, 2) starts a second world all_reduce. How the failing rank fails is chosen
    with ``--fail-how``:
    ``exception``: it raises a RuntimeError that nothing catches, so the process exits 1.
    ``oom``: it allocates GPU memory in large blocks until the CUDA caching allocator raises
    ``torch.OutOfMemoryError``, which nothing catches (the process exits 1).
    ``oom-stay``: the same allocation until the OOM, but the error is caught, its traceback
    printed, the memory released, and the process stays alive without joining the collective
    (a worker that is wedged after an error), so the peers can only time out.
    ``killed``: it sends itself SIGKILL, as the kernel's OOM killer or a lost node ends a process: no
    last words, its sockets close under the peers.
    ``device-assert``: it looks up a token id past the end of an embedding on the GPU, so PyTorch's
    indexing kernel fails its device-side assertion and the next wait for the GPU raises (the process
    exits 1), as an engine whose tokenizer and model disagree does.

Any behaviour: ``--late-rank R --late-s S`` makes rank R wait S seconds before ``init_process_group``, as a
node whose container image is still being pulled does.

``--init eager`` passes the rank's GPU as ``device_id`` to ``init_process_group``: the world NCCL
communicator is then created inside ``init_process_group`` and ``new_group`` splits its
communicators from it. ``--init lazy`` leaves ``device_id`` out: every communicator is created by
the first collective on its group.

Lines printed by this program start with ``scenario:`` and go to stdout with a plain ``print``
(no explicit flush). With PYTHONUNBUFFERED=1 they reach the log at once; without it they wait in
Python's stdout buffer, and a process killed with SIGKILL loses them. Everything else in a
captured log was written by torch, NCCL or the Python interpreter. ``--backend gloo`` runs the
same logic on CPU tensors, to check the scripts on a machine without a GPU.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import sys
import time
import traceback
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch.distributed as dist

BEHAVIOURS = ("healthy", "first-collective-hang", "rank-fails")
FAIL_HOWS = ("exception", "oom", "oom-stay", "device-assert", "killed")

# The elements of every checked all_reduce: 1 Mi float32 values = 4 MiB.
NUMEL = 1 << 20
# The block size of the OOM allocation loop.
OOM_BLOCK_BYTES = 8 << 30

_T0 = time.monotonic()


def say(message: str) -> None:
    """One progress line of this program (stdout, not flushed on purpose: see the docstring)."""
    print(f"scenario: (+{time.monotonic() - _T0:.1f}s) {message}")


@dataclass(frozen=True)
class Launch:
    """What the launcher told this rank."""

    rank: int
    world_size: int
    local_rank: str
    master_addr: str
    master_port: str

    @staticmethod
    def read(environ: Mapping[str, str]) -> Launch:
        missing = [k for k in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT") if not environ.get(k)]
        if missing:
            raise SystemExit(f"scenario.py: launcher variable(s) not set: {', '.join(missing)}")
        rank, world_size = int(environ["RANK"]), int(environ["WORLD_SIZE"])
        if world_size < 2 or not 0 <= rank < world_size:
            raise SystemExit(f"scenario.py: RANK={rank} WORLD_SIZE={world_size} is not a usable pair")
        return Launch(
            rank=rank,
            world_size=world_size,
            local_rank=environ.get("LOCAL_RANK", "-"),
            master_addr=environ["MASTER_ADDR"],
            master_port=environ["MASTER_PORT"],
        )


@dataclass(frozen=True)
class Settings:
    behaviour: str
    init: str
    backend: str
    cuda_device: int
    pg_timeout_s: float
    hang_s: float
    idle_rank: int
    fail_rank: int
    fail_how: str
    fail_delay_s: float
    late_rank: int
    late_s: float


def layout(world_size: int) -> tuple[list[list[int]], list[list[int]]]:
    """The TP pairs (0,1), (2,3), ... and the PP-like pairs (i, i + world_size // 2).

    Only complete pairs are kept, so an odd world size (a rank started with the wrong
    WORLD_SIZE) still gives a list that every rank can walk in the same order.
    """
    tp = [[r, r + 1] for r in range(0, world_size - 1, 2)]
    half = world_size // 2
    pp = [[r, r + half] for r in range(half) if r + half < world_size]
    return tp, pp


class Rank:
    def __init__(self, launch: Launch, settings: Settings) -> None:
        import torch

        self.torch = torch
        self.launch = launch
        self.settings = settings
        if settings.backend == "nccl":
            torch.cuda.set_device(settings.cuda_device)
            self.device = torch.device("cuda", settings.cuda_device)
        else:
            self.device = torch.device("cpu")
        self.timeout = timedelta(seconds=settings.pg_timeout_s)

    # --- building blocks --------------------------------------------------------------------

    def init_world(self) -> None:
        import torch.distributed as dist

        if self.launch.rank == self.settings.late_rank and self.settings.late_s > 0:
            say(f"rank {self.launch.rank} starts late: sleeping {self.settings.late_s:g}s before init_process_group")
            time.sleep(self.settings.late_s)
        eager = self.settings.init == "eager" and self.settings.backend == "nccl"
        device_id = self.device if eager else None
        say(
            f"calling init_process_group(backend={self.settings.backend}, env://, "
            f"world_size={self.launch.world_size}, rank={self.launch.rank}, "
            f"timeout={self.settings.pg_timeout_s:g}s, device_id={device_id})"
        )
        dist.init_process_group(
            backend=self.settings.backend,
            init_method="env://",
            world_size=self.launch.world_size,
            rank=self.launch.rank,
            timeout=self.timeout,
            device_id=device_id,
        )
        say("init_process_group returned")

    def tensor(self, value: float) -> Any:
        return self.torch.full((NUMEL,), value, dtype=self.torch.float32, device=self.device)

    def reduce_checked(self, label: str, group: dist.ProcessGroup | None, times: int = 1) -> None:
        """all_reduce a tensor of (rank + 1) and check that every element is the group's sum."""
        import torch.distributed as dist

        members = dist.get_process_group_ranks(group) if group is not None else list(range(self.launch.world_size))
        want = float(sum(m + 1 for m in members))
        for n in range(times):
            t = self.tensor(float(self.launch.rank + 1))
            say(f"calling all_reduce #{n} on group {label} {members}")
            dist.all_reduce(t, group=group)
            lo, hi = t.min().item(), t.max().item()
            if lo != want or hi != want:
                raise RuntimeError(f"all_reduce #{n} on {label}: want {want:g}, got min {lo:g} max {hi:g}")
            say(f"all_reduce #{n} on group {label} correct (every element {want:g})")

    def idle(self, why: str) -> None:
        say(f"{why}; sleeping {self.settings.hang_s:g}s")
        time.sleep(self.settings.hang_s)
        say("sleep ended")

    def shut_down(self) -> int:
        import torch.distributed as dist

        if self.settings.backend == "nccl":
            self.torch.cuda.synchronize()
        say("calling destroy_process_group")
        dist.destroy_process_group()
        say("destroy_process_group returned; exiting 0")
        return 0

    # --- behaviours ---------------------------------------------------------------------------

    def healthy(self) -> int:
        import torch.distributed as dist

        self.init_world()
        self.reduce_checked("world", None, times=2)
        tp, pp = layout(self.launch.world_size)
        mine: dict[str, tuple[list[int], dist.ProcessGroup]] = {}
        for kind, pairs in (("tp", tp), ("pp", pp)):
            for ranks in pairs:
                say(f"calling new_group({ranks}) [{kind}]")
                pg = dist.new_group(ranks=ranks, timeout=self.timeout)
                if self.launch.rank in ranks:
                    mine[kind] = (ranks, pg)
        say(f"groups created; this rank is in tp {mine.get('tp', ('-',))[0]} and pp {mine.get('pp', ('-',))[0]}")
        for kind in ("tp", "pp"):
            if kind in mine:
                ranks, pg = mine[kind]
                self.reduce_checked(kind, pg)
        return self.shut_down()

    def first_collective_hang(self) -> int:
        import torch.distributed as dist

        self.init_world()
        self.reduce_checked("world", None)
        everyone = list(range(self.launch.world_size))
        say(f"calling new_group({everyone}) [new-all]")
        pg = dist.new_group(ranks=everyone, timeout=self.timeout)
        say("new_group returned")
        if self.launch.rank == self.settings.idle_rank:
            self.idle(f"rank {self.launch.rank} does NOT call all_reduce on group new-all")
            return self.shut_down()
        t = self.tensor(float(self.launch.rank + 1))
        say(f"calling all_reduce on group new-all {everyone} (rank {self.settings.idle_rank} never joins)")
        dist.all_reduce(t, group=pg)
        say("all_reduce on group new-all returned to Python; reading the result (waits for the GPU)")
        value = t[0].item()
        say(f"all_reduce on group new-all finished (not expected): element 0 = {value:g}")
        return self.shut_down()

    def rank_fails(self) -> int:
        import torch.distributed as dist

        self.init_world()
        # Allocated before the failing rank starts to fill the GPU, so the peers need no new
        # memory for their second collective.
        t = self.tensor(float(self.launch.rank + 1))
        self.reduce_checked("world", None)
        if self.launch.rank == self.settings.fail_rank:
            self.fail()
            self.idle("failed rank stays alive and never joins all_reduce #1 on group world")
            return self.shut_down()
        say(f"calling all_reduce #1 on group world (rank {self.settings.fail_rank} will not join)")
        dist.all_reduce(t)
        say("all_reduce #1 on group world returned to Python; reading the result (waits for the GPU)")
        value = t[0].item()
        say(f"all_reduce #1 on group world finished (not expected): element 0 = {value:g}")
        return self.shut_down()

    def fail(self) -> None:
        how = self.settings.fail_how
        if self.settings.fail_delay_s > 0:
            say(f"waiting {self.settings.fail_delay_s:g}s before failing")
            time.sleep(self.settings.fail_delay_s)
        if how == "exception":
            say("raising an exception just before all_reduce #1 on group world")
            raise RuntimeError(f"scenario: simulated worker failure on rank {self.launch.rank} before all_reduce #1")
        if how == "killed":
            say("sending this process SIGKILL just before all_reduce #1 on group world")
            sys.stdout.flush()
            os.kill(os.getpid(), signal.SIGKILL)
        if self.settings.backend != "nccl":
            raise SystemExit(f"scenario.py: --fail-how {how} needs the nccl backend (a GPU)")
        if how == "device-assert":
            embedding = self.torch.nn.Embedding(1000, 64, device=self.device)
            say("looking up token id 1003 in an embedding of 1000 tokens")
            hidden = embedding(self.torch.tensor([1003], device=self.device))
            say(f"the lookup finished (not expected): {hidden[0, 0].item():g}")
            return
        blocks: list[Any] = []
        say(f"allocating GPU memory in blocks of {OOM_BLOCK_BYTES >> 30} GiB until CUDA runs out")
        try:
            while True:
                blocks.append(self.torch.empty(OOM_BLOCK_BYTES, dtype=self.torch.uint8, device=self.device))
        except self.torch.OutOfMemoryError:
            say(f"torch.OutOfMemoryError after {len(blocks)} blocks ({len(blocks) * (OOM_BLOCK_BYTES >> 30)} GiB)")
            if how == "oom":
                raise
            traceback.print_exc()
            blocks.clear()
            self.torch.cuda.empty_cache()
            say("caught the OOM; released the blocks")

    def run(self) -> int:
        if self.settings.behaviour == "healthy":
            return self.healthy()
        if self.settings.behaviour == "first-collective-hang":
            return self.first_collective_hang()
        return self.rank_fails()


def parse(argv: Sequence[str]) -> Settings:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("behaviour", choices=BEHAVIOURS)
    p.add_argument("--init", choices=("eager", "lazy"), default="eager", help="eager (device_id) or lazy init")
    p.add_argument("--backend", choices=("nccl", "gloo"), default="nccl")
    p.add_argument("--cuda-device", type=int, default=0, help="CUDA device index of every rank (default 0)")
    p.add_argument("--pg-timeout-s", type=float, default=600.0, help="process-group timeout (default 600)")
    p.add_argument("--hang-s", type=float, default=900.0, help="how long an idle or wedged rank sleeps")
    p.add_argument("--idle-rank", type=int, default=3, help="first-collective-hang: the rank that never joins")
    p.add_argument("--fail-rank", type=int, default=2, help="rank-fails: the rank that fails")
    p.add_argument("--fail-how", choices=FAIL_HOWS, default="exception")
    p.add_argument("--fail-delay-s", type=float, default=0.0, help="rank-fails: wait this long before failing")
    p.add_argument("--late-rank", type=int, default=-1, help="the rank that starts late (default: none)")
    p.add_argument("--late-s", type=float, default=0.0, help="how long the late rank waits before init")
    a = p.parse_args(list(argv))
    if a.pg_timeout_s <= 0 or a.hang_s < 0 or a.fail_delay_s < 0 or a.late_s < 0:
        p.error("timeouts must be > 0 and sleeps >= 0")
    return Settings(
        behaviour=a.behaviour,
        init=a.init,
        backend=a.backend,
        cuda_device=a.cuda_device,
        pg_timeout_s=a.pg_timeout_s,
        hang_s=a.hang_s,
        idle_rank=a.idle_rank,
        fail_rank=a.fail_rank,
        fail_how=a.fail_how,
        fail_delay_s=a.fail_delay_s,
        late_rank=a.late_rank,
        late_s=a.late_s,
    )


def main(argv: Sequence[str] | None = None) -> int:
    settings = parse(sys.argv[1:] if argv is None else argv)
    launch = Launch.read(os.environ)
    import torch

    try:
        nccl = ".".join(str(x) for x in torch.cuda.nccl.version())
    except Exception:
        nccl = "none"
    say(
        f"{settings.behaviour} init={settings.init} rank {launch.rank} of {launch.world_size} "
        f"(LOCAL_RANK {launch.local_rank}) host {socket.gethostname()} pid {os.getpid()} "
        f"torch {torch.__version__} nccl {nccl}"
    )
    return Rank(launch, settings).run()


if __name__ == "__main__":
    sys.exit(main())
