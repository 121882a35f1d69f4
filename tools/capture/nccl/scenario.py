#!/usr/bin/env python3
"""One rank of a small torch.distributed program that reproduces an NCCL failure on purpose.

Start one process per rank (one GPU each). The process reads the usual launcher variables
``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``, ``MASTER_ADDR`` and ``MASTER_PORT`` and runs the
scenario named on the command line:

``healthy``
    World group: three all_reduce calls with a result check. Then a second group over all
    ranks with two checked all_reduce calls (a second NCCL communicator), then
    ``destroy_process_group`` and exit 0.
``second-group-not-joined``
    The world group works. Every rank creates a second group, but only rank 0 runs a
    collective on it; the other ranks are "busy elsewhere" (sleep). Rank 0 blocks in the
    NCCL init of the second communicator: a silent hang.
``mismatched-collectives``
    The world group works. Then rank 0 runs a large all_reduce while the other ranks run a
    small all_gather. The collective never completes, and with the short process-group
    timeout the ProcessGroupNCCL watchdog fires.
``rendezvous-wrong-port``
    Ranks other than 0 add an offset to ``MASTER_PORT`` before ``init_process_group``, so
    the TCPStore rendezvous never completes and times out.

Lines printed by this program start with ``scenario:``; everything else in a captured log
comes from torch, NCCL or Python itself. ``--eager-init`` passes the rank's GPU as
``device_id`` to ``init_process_group``: NCCL then creates the world communicator at init and
splits later groups from it (``ncclCommSplit``). ``--backend gloo`` runs the same logic on CPU
tensors, for a dry run on a machine without GPUs.
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch
    import torch.distributed as dist

SCENARIOS: tuple[str, ...] = (
    "healthy",
    "second-group-not-joined",
    "mismatched-collectives",
    "rendezvous-wrong-port",
)

# Process-group timeout per scenario, in seconds. The short ones make torch report the failure
# (watchdog, TCPStore) well inside the capture's per-rank time limit.
DEFAULT_TIMEOUT_S: dict[str, float] = {
    "healthy": 120.0,
    "second-group-not-joined": 600.0,
    "mismatched-collectives": 30.0,
    "rendezvous-wrong-port": 30.0,
}

HEALTHY_NUMEL = 1 << 20
MISMATCH_ALL_REDUCE_NUMEL = 1 << 22
MISMATCH_ALL_GATHER_NUMEL = 1 << 10


def say(message: str) -> None:
    """Print one line of this program's own progress output."""
    print(f"scenario: {message}", flush=True)


@dataclass(frozen=True)
class RankEnv:
    """The launcher variables of one rank."""

    rank: int
    world_size: int
    local_rank: int
    master_addr: str
    master_port: int

    @classmethod
    def from_environ(cls, environ: Mapping[str, str]) -> RankEnv:
        def need(name: str) -> str:
            value = environ.get(name)
            if value is None or value == "":
                raise SystemExit(f"scenario.py: environment variable {name} is not set")
            return value

        rank = int(need("RANK"))
        world_size = int(need("WORLD_SIZE"))
        if not 0 <= rank < world_size:
            raise SystemExit(f"scenario.py: RANK={rank} is outside WORLD_SIZE={world_size}")
        if world_size < 2:
            raise SystemExit("scenario.py: every scenario needs WORLD_SIZE >= 2")
        return cls(
            rank=rank,
            world_size=world_size,
            local_rank=int(environ.get("LOCAL_RANK", str(rank))),
            master_addr=need("MASTER_ADDR"),
            master_port=int(need("MASTER_PORT")),
        )


@dataclass(frozen=True)
class Options:
    scenario: str
    backend: str
    timeout_s: float
    hang_s: float
    port_offset: int
    eager_init: bool


class Runner:
    """Holds the rank's identity and device, and runs one scenario."""

    def __init__(self, env: RankEnv, opts: Options) -> None:
        import torch

        self.env = env
        self.opts = opts
        self.torch = torch
        if opts.backend == "nccl":
            torch.cuda.set_device(env.local_rank)
            self.device = torch.device("cuda", env.local_rank)
        else:
            self.device = torch.device("cpu")

    # --- helpers -------------------------------------------------------------------------

    def init(self) -> None:
        import torch.distributed as dist

        # With device_id bound, torch creates the world communicator inside init_process_group
        # and later groups are split from it (ncclCommSplit); without it, every communicator is
        # created lazily by the first collective on its group (ncclCommInitRankConfig).
        device_id = self.device if self.opts.eager_init and self.opts.backend == "nccl" else None
        say(
            f"init_process_group backend={self.opts.backend} init_method=env:// "
            f"master={os.environ['MASTER_ADDR']}:{os.environ['MASTER_PORT']} "
            f"timeout={self.opts.timeout_s:g}s device_id={device_id}"
        )
        dist.init_process_group(
            backend=self.opts.backend,
            init_method="env://",
            rank=self.env.rank,
            world_size=self.env.world_size,
            timeout=timedelta(seconds=self.opts.timeout_s),
            device_id=device_id,
        )
        say("init_process_group returned")

    def filled(self, numel: int, value: float) -> torch.Tensor:
        return self.torch.full((numel,), value, dtype=self.torch.float32, device=self.device)

    def checked_all_reduce(self, label: str, group: dist.ProcessGroup | None, count: int) -> None:
        """Run ``count`` all_reduce calls of ``rank + 1`` and check every element of the sum."""
        import torch.distributed as dist

        ranks = list(range(self.env.world_size)) if group is None else dist.get_process_group_ranks(group)
        expected = float(sum(r + 1 for r in ranks))
        for i in range(count):
            tensor = self.filled(HEALTHY_NUMEL, float(self.env.rank + 1))
            dist.all_reduce(tensor, group=group)
            ok = bool(tensor.eq(expected).all().item())
            if not ok:
                got = tensor.min().item(), tensor.max().item()
                raise RuntimeError(f"{label} all_reduce #{i}: expected {expected}, got min/max {got}")
            say(f"{label} all_reduce #{i} ok (numel {HEALTHY_NUMEL}, every element {expected:g})")

    def sleep(self, why: str) -> None:
        say(f"{why}; sleeping {self.opts.hang_s:g}s")
        time.sleep(self.opts.hang_s)
        say("sleep over")

    def finish(self) -> int:
        import torch.distributed as dist

        if self.opts.backend == "nccl":
            self.torch.cuda.synchronize()
        dist.destroy_process_group()
        say("destroy_process_group returned; exit 0")
        return 0

    # --- scenarios -----------------------------------------------------------------------

    def healthy(self) -> int:
        import torch.distributed as dist

        self.init()
        self.checked_all_reduce("world", None, 3)
        group = dist.new_group(ranks=list(range(self.env.world_size)))
        say("new_group over all ranks created")
        self.checked_all_reduce("second-group", group, 2)
        return self.finish()

    def second_group_not_joined(self) -> int:
        import torch.distributed as dist

        self.init()
        self.checked_all_reduce("world", None, 2)
        group = dist.new_group(ranks=list(range(self.env.world_size)))
        say("new_group over all ranks created")
        if self.env.rank == 0:
            say("all_reduce on the second group (the other ranks never join it)")
            tensor = self.filled(HEALTHY_NUMEL, 1.0)
            dist.all_reduce(tensor, group=group)
            value = tensor[0].item()
            say(f"second-group all_reduce returned (not expected), element 0 = {value:g}")
        self.sleep("busy elsewhere, never uses the second group")
        return self.finish()

    def mismatched_collectives(self) -> int:
        import torch.distributed as dist

        self.init()
        self.checked_all_reduce("world", None, 2)
        work: dist.Work | None
        if self.env.rank == 0:
            say(f"all_reduce of {MISMATCH_ALL_REDUCE_NUMEL} elements (the peers run an all_gather)")
            tensor = self.filled(MISMATCH_ALL_REDUCE_NUMEL, 1.0)
            work = dist.all_reduce(tensor, async_op=True)
        else:
            say(f"all_gather_into_tensor of {MISMATCH_ALL_GATHER_NUMEL} elements per rank (rank 0 runs an all_reduce)")
            source = self.filled(MISMATCH_ALL_GATHER_NUMEL, float(self.env.rank))
            gathered = self.filled(MISMATCH_ALL_GATHER_NUMEL * self.env.world_size, 0.0)
            work = dist.all_gather_into_tensor(gathered, source, async_op=True)
        assert work is not None
        deadline = time.monotonic() + self.opts.hang_s
        while time.monotonic() < deadline:
            if work.is_completed():
                say("this rank's collective is no longer pending (is_completed(): it finished or failed)")
                break
            time.sleep(0.5)
        self.sleep("waiting for the watchdog or the capture's time limit")
        return self.finish()

    def rendezvous_wrong_port(self) -> int:
        if self.env.rank != 0:
            wrong = self.env.master_port + self.opts.port_offset
            say(f"using MASTER_PORT={wrong} instead of {self.env.master_port}")
            os.environ["MASTER_PORT"] = str(wrong)
        self.init()
        self.checked_all_reduce("world", None, 1)
        return self.finish()

    def run(self) -> int:
        table: dict[str, Callable[[], int]] = {
            "healthy": self.healthy,
            "second-group-not-joined": self.second_group_not_joined,
            "mismatched-collectives": self.mismatched_collectives,
            "rendezvous-wrong-port": self.rendezvous_wrong_port,
        }
        return table[self.opts.scenario]()


def parse_args(argv: Sequence[str]) -> Options:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("scenario", choices=SCENARIOS)
    parser.add_argument("--backend", choices=("nccl", "gloo"), default="nccl")
    parser.add_argument(
        "--timeout-s",
        type=float,
        default=None,
        help="process-group timeout (default depends on the scenario: "
        + ", ".join(f"{k} {v:g}" for k, v in DEFAULT_TIMEOUT_S.items())
        + ")",
    )
    parser.add_argument("--hang-s", type=float, default=600.0, help="how long a 'busy' rank sleeps (default 600)")
    parser.add_argument(
        "--port-offset", type=int, default=1, help="rendezvous-wrong-port: added to MASTER_PORT on ranks > 0"
    )
    parser.add_argument(
        "--eager-init",
        action="store_true",
        help="bind the rank's GPU in init_process_group (device_id), so the world communicator is "
        "created at init and new groups are split from it",
    )
    ns = parser.parse_args(list(argv))
    timeout_s = DEFAULT_TIMEOUT_S[ns.scenario] if ns.timeout_s is None else float(ns.timeout_s)
    if timeout_s <= 0 or ns.hang_s < 0:
        parser.error("--timeout-s must be > 0 and --hang-s >= 0")
    return Options(
        scenario=ns.scenario,
        backend=ns.backend,
        timeout_s=timeout_s,
        hang_s=float(ns.hang_s),
        port_offset=int(ns.port_offset),
        eager_init=bool(ns.eager_init),
    )


def main(argv: Sequence[str] | None = None) -> int:
    opts = parse_args(sys.argv[1:] if argv is None else argv)
    env = RankEnv.from_environ(os.environ)
    import torch

    say(
        f"{opts.scenario} rank {env.rank}/{env.world_size} local_rank {env.local_rank} "
        f"host {socket.gethostname()} pid {os.getpid()} torch {torch.__version__}"
    )
    return Runner(env, opts).run()


if __name__ == "__main__":
    sys.exit(main())
