#!/usr/bin/env python3
"""The program of ONE rank of a small torch.distributed job that hangs (or keeps working) in a known way,
so that ``py-spy dump`` of every rank can be captured and ``sparktui stacks`` tested on real processes.

The launcher gives each rank RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT. ``--backend gloo`` runs on CPU
tensors (this machine, the test nodes); ``nccl`` on the GPU ``--cuda-device`` (every rank the same one, as
the device captures emulate hosts on one GPU). The odd rank is ``--odd-rank`` (default: the last).

Behaviours (first argument):

``second-group``
    Every rank joins the world group; then every rank but the odd one calls ``new_group`` over all ranks,
    while the odd rank sleeps in application code (:func:`serve_requests`) and never creates the group.
``healthy``
    Every rank runs all_reduce after all_reduce with a little arithmetic between, until stopped.
``mismatch``
    The odd rank calls ``broadcast`` where the others call ``all_reduce``, then each waits for the result
    (``torch.cuda.synchronize`` on the GPU).
``busy-python``
    The odd rank spins in pure Python (:func:`tokenize_forever`) while the others wait in an all_reduce.
``store-wait``
    Meant to be started as rank 0 alone: ``init_process_group`` waits on the store for peers never started.
``skip-collective``
    Two all_reduces on every rank, then a third that the odd rank never calls (it sleeps in
    :func:`serve_requests`); with ``TORCH_NCCL_TRACE_BUFFER_SIZE`` and ``TORCH_NCCL_DUMP_ON_TIMEOUT`` set, the
    watchdog's timeout (``--pg-timeout-s``) writes every rank's flight-recorder dump.

``slow-load``
    The odd rank loads weights (a safetensors file read again and again) for ``--phase-s`` seconds while the
    others wait in an all_reduce; then it joins, and every rank ends. Slow, never hung.
``slow-compile``
    The same, the odd rank compiling with ``torch.compile`` (Dynamo reset between) for ``--phase-s`` seconds.

Three more run one process alone, no group (``--ranks 1``), for the wait kinds that need no peer:

``load-weights``
    Writes a 1 GiB safetensors file once, then loads it again and again (``safetensors.torch.load_file``).
``compile``
    Compiles a small function with ``torch.compile`` again and again (``torch._dynamo.reset`` between).
``ray-get``
    Starts a local Ray instance and waits in ``ray.get`` on an actor's call that never returns (needs ray,
    not torch).

Before the call it is meant to stay in, each rank prints ``scenario: rank R in place`` (flushed), which the
capture waits for.
"""

from __future__ import annotations

import argparse
import os
import time
from datetime import timedelta
from typing import Any

BEHAVIOURS = (
    "second-group",
    "healthy",
    "mismatch",
    "busy-python",
    "store-wait",
    "skip-collective",
    "slow-load",
    "slow-compile",
)
ALONE = ("load-weights", "compile", "ray-get")


def in_place(rank: int, what: str) -> None:
    print(f"scenario: rank {rank} in place: {what}", flush=True)


def serve_requests(rank: int) -> None:
    """Application code that never joins the collective the peers wait in."""
    in_place(rank, "sleeping in application code")
    while True:
        time.sleep(1)


def tokenize_forever(rank: int) -> None:
    """A rank busy in pure Python: it holds the GIL and never reaches the collective."""
    in_place(rank, "spinning in Python")
    total = 0
    while True:
        for i in range(100_000):
            total = (total + i * i) % 1_000_003


def load_weights(rank: int, seconds: float, device: str) -> None:
    """A rank loading its weights for ``seconds``: a safetensors file written once, read again and again."""
    import torch
    from safetensors.torch import load_file, save_file  # type: ignore[import-not-found]

    path = f"/tmp/scenario-weights-{os.getpid()}.safetensors"
    save_file({f"layer{i}.weight": torch.ones(1 << 22) for i in range(16)}, path)
    in_place(rank, f"loading weights for {seconds:g} s")
    try:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            load_file(path, device=device)
    finally:
        os.unlink(path)


def compile_for(rank: int, seconds: float, device: str) -> None:
    """A rank compiling for ``seconds``: torch.compile of a new small function again and again."""
    import torch

    x = torch.ones(1024, device=device)
    in_place(rank, f"compiling for {seconds:g} s")
    end, n = time.monotonic() + seconds, 0
    while time.monotonic() < end:
        n += 1
        torch._dynamo.reset()
        torch.compile(lambda t, k=n: (t * k).sin().cumsum(0))(x)


def alone(behaviour: str, gpu: bool) -> None:
    """The behaviours of one process without a group."""
    if behaviour == "ray-get":
        import ray

        @ray.remote
        class Engine:
            def step(self) -> None:
                while True:
                    time.sleep(1)

        ray.init(num_cpus=1, include_dashboard=False)
        engine = Engine.remote()  # type: ignore[attr-defined]
        in_place(0, "ray.get")
        ray.get(engine.step.remote())
        return
    import torch

    device = "cuda" if gpu else "cpu"
    if behaviour == "load-weights":
        from safetensors.torch import load_file, save_file  # type: ignore[import-not-found]

        path = f"/tmp/scenario-weights-{os.getpid()}.safetensors"
        save_file({f"layer{i}.weight": torch.ones(1 << 24) for i in range(16)}, path)
        in_place(0, "load_file")
        while True:
            load_file(path, device=device)
    x = torch.ones(1024, device=device)
    in_place(0, "torch.compile")
    n = 0
    while True:
        n += 1
        torch._dynamo.reset()
        torch.compile(lambda t, k=n: (t * k).sin().cumsum(0))(x)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("behaviour", choices=BEHAVIOURS + ALONE)
    p.add_argument("--backend", choices=("gloo", "nccl"), default="gloo")
    p.add_argument("--odd-rank", type=int, default=-1, help="the rank that behaves differently (default: the last)")
    p.add_argument("--cuda-device", type=int, default=0)
    p.add_argument("--pg-timeout-s", type=float, default=600.0)
    p.add_argument("--numel", type=int, default=1 << 16, help="elements of the tensor the collectives carry")
    p.add_argument("--phase-s", type=float, default=60.0, help="seconds slow-load loads, slow-compile compiles")
    args = p.parse_args()

    if args.behaviour in ALONE:
        alone(args.behaviour, args.backend == "nccl")
        return
    import torch
    import torch.distributed as dist

    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    odd = args.odd_rank if args.odd_rank >= 0 else world - 1
    gpu = args.backend == "nccl"
    device: Any = torch.device("cuda", args.cuda_device) if gpu else torch.device("cpu")
    if gpu:
        torch.cuda.set_device(device)
    timeout = timedelta(seconds=args.pg_timeout_s)
    if args.behaviour == "store-wait":
        in_place(rank, "init_process_group without peers")
    dist.init_process_group(args.backend, timeout=timeout, device_id=device if gpu else None)
    print(f"scenario: rank {rank} of {world} joined the world group ({args.backend})", flush=True)
    x = torch.ones(args.numel, device=device)

    def wait() -> None:
        if gpu:
            torch.cuda.synchronize()

    if args.behaviour == "second-group":
        dist.barrier()
        if rank == odd:
            serve_requests(rank)
        in_place(rank, "new_group")
        group = dist.new_group(list(range(world)))
        dist.all_reduce(x, group=group)
        wait()
    elif args.behaviour == "healthy":
        in_place(rank, "all_reduce loop")
        while True:
            dist.all_reduce(x)
            x = (x / world).sqrt() + 1
            wait()
    elif args.behaviour == "mismatch":
        dist.barrier()
        in_place(rank, "broadcast" if rank == odd else "all_reduce")
        if rank == odd:
            dist.broadcast(x, src=0)
        else:
            dist.all_reduce(x)
        wait()
        float(x[0])
    elif args.behaviour == "busy-python":
        dist.barrier()
        if rank == odd:
            tokenize_forever(rank)
        in_place(rank, "all_reduce")
        dist.all_reduce(x)
        wait()
        float(x[0])
    elif args.behaviour in ("slow-load", "slow-compile"):
        dist.barrier()
        if rank == odd:
            (load_weights if args.behaviour == "slow-load" else compile_for)(rank, args.phase_s, device.type)
        else:
            in_place(rank, "all_reduce, waiting for the slow rank")
        dist.all_reduce(x)
        wait()
        float(x[0])
    elif args.behaviour == "skip-collective":
        for _ in range(2):
            dist.all_reduce(x)
        wait()
        if rank == odd:
            serve_requests(rank)
        in_place(rank, "third all_reduce")
        dist.all_reduce(x)
        wait()
        float(x[0])
    print(f"scenario: rank {rank} done", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
