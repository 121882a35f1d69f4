"""A two-rank gloo job launched by torchrun (capture.sh). SCENARIO=segfault: rank 1 dies of SIGSEGV after the
first all-reduce, so that rank 0 loses its peer in the second one: what a native crash of one rank looks like
in the launcher's log (the faulthandler's note, the peer's Gloo error, torchrun's 'Root Cause' section).
SCENARIO=allreduce: two all-reduces and a clean end. WORLD_SIZE_OVERRIDE replaces the world size torchrun
gave, and INIT_TIMEOUT (seconds) bounds the process group's set-up."""

import datetime
import os
import signal

import torch
import torch.distributed as dist

if "WORLD_SIZE_OVERRIDE" in os.environ:
    os.environ["WORLD_SIZE"] = os.environ["WORLD_SIZE_OVERRIDE"]
timeout = datetime.timedelta(seconds=float(os.environ.get("INIT_TIMEOUT", "1800")))
dist.init_process_group("gloo", timeout=timeout)
rank = dist.get_rank()
t = torch.ones(1)
dist.all_reduce(t)
print(f"rank {rank}: first all_reduce done ({t.item():.0f})", flush=True)
if rank == 1 and os.environ.get("SCENARIO") == "segfault":
    os.kill(os.getpid(), signal.SIGSEGV)
dist.all_reduce(t)
dist.destroy_process_group()
