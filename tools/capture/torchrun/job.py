"""A two-rank gloo job launched by torchrun (capture.sh). SCENARIO picks what goes wrong:
- allreduce: two all-reduces and a clean end;
- segfault: rank 1 dies of SIGSEGV after the first all-reduce, so that rank 0 loses its peer in the second one:
  what a native crash of one rank looks like in the launcher's log (the faulthandler's note, the peer's Gloo
  error, torchrun's 'Root Cause' section);
- skip-second: rank 1 skips the second all-reduce and sleeps (HANG_SECONDS), so rank 0's Gloo wait runs past the
  process group's timeout;
- monitored-barrier: rank 1 sleeps (HANG_SECONDS) before a monitored barrier that rank 0 enters with a
  BARRIER_TIMEOUT (seconds) of its own;
- mismatch: rank 0 all-reduces while rank 1 broadcasts (with TORCH_DISTRIBUTED_DEBUG=DETAIL the wrapper compares
  the two collectives before running them);
- raise: rank 1 raises a ValueError of its own before it joins the process group (raised after the first
  all-reduce instead, torch 2.13's restarted ranks at times never finished the Gloo set-up of their second attempt);
- late-init: rank 1 sleeps (HANG_SECONDS) before it calls init_process_group, so rank 0 waits for it in the store;
- exit-early: rank 1 returns after the first all-reduce (exit status 0, no destroy_process_group), so rank 0's
  second all-reduce loses its peer;
- shape-mismatch / dtype-mismatch: rank 1's second all-reduce has a tensor of two elements / of float64 where rank
  0's has one float32;
- grow: rank 1 joins the memory cgroup LIMIT_CGROUP (its cgroup.procs file) after the first all-reduce and
  allocates host memory 32 MiB at a time until the kernel kills it.
WORLD_SIZE_OVERRIDE replaces the world size torchrun gave, INIT_TIMEOUT (seconds) is the process group's
timeout (set-up and collectives), BACKEND its back-end (default gloo) and INIT_METHOD its init_method (default
env://)."""

import datetime
import os
import signal
import sys
import time

import torch
import torch.distributed as dist

SCENARIO = os.environ.get("SCENARIO", "allreduce")
HANG = float(os.environ.get("HANG_SECONDS", "60"))

if SCENARIO == "raise" and os.environ.get("RANK") == "1":
    raise ValueError("rank 1: input batch has 3 rows, expected 4")
if "WORLD_SIZE_OVERRIDE" in os.environ:
    os.environ["WORLD_SIZE"] = os.environ["WORLD_SIZE_OVERRIDE"]
if SCENARIO == "late-init" and os.environ.get("RANK") == "1":
    time.sleep(HANG)
timeout = datetime.timedelta(seconds=float(os.environ.get("INIT_TIMEOUT", "1800")))
# file:// takes the rank and the world size from the call (env:// reads them from the environment itself)
given = (
    {"rank": int(os.environ["RANK"]), "world_size": int(os.environ["WORLD_SIZE"])}
    if "INIT_METHOD" in os.environ
    else {}
)
dist.init_process_group(
    os.environ.get("BACKEND", "gloo"), init_method=os.environ.get("INIT_METHOD"), timeout=timeout, **given
)
rank = dist.get_rank()
t = torch.ones(1)
dist.all_reduce(t)
print(f"rank {rank}: first all_reduce done ({t.item():.0f})", flush=True)
if rank == 1 and SCENARIO == "segfault":
    os.kill(os.getpid(), signal.SIGSEGV)
if rank == 1 and SCENARIO == "exit-early":
    print(f"rank {rank}: leaving early", flush=True)
    sys.exit(0)
if rank == 1 and SCENARIO == "shape-mismatch":
    t = torch.ones(2)
if rank == 1 and SCENARIO == "dtype-mismatch":
    t = torch.ones(1, dtype=torch.float64)
if rank == 1 and SCENARIO == "grow":
    with open(os.environ["LIMIT_CGROUP"], "w") as procs:
        procs.write(str(os.getpid()))
    held = []
    while True:
        held.append(bytearray(32 << 20))
        print(f"rank {rank}: holding {32 * len(held)} MiB", flush=True)
if SCENARIO == "monitored-barrier":
    if rank == 1:
        time.sleep(HANG)
    dist.monitored_barrier(timeout=datetime.timedelta(seconds=float(os.environ.get("BARRIER_TIMEOUT", "5"))))
elif SCENARIO == "mismatch" and rank == 1:
    dist.broadcast(t, src=0)
elif SCENARIO == "skip-second" and rank == 1:
    time.sleep(HANG)
else:
    dist.all_reduce(t)
print(f"rank {rank}: done", flush=True)
dist.destroy_process_group()
