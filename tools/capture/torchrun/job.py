"""A two-rank gloo job launched by torchrun in which rank 1 dies of SIGSEGV after the first all-reduce,
so that rank 0 loses its peer in the second one: what a native crash of one rank looks like in the launcher's
log (the faulthandler's note, the peer's Gloo error, torchrun's 'Root Cause' section)."""

import os
import signal

import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()
t = torch.ones(1)
dist.all_reduce(t)
print(f"rank {rank}: first all_reduce done ({t.item():.0f})", flush=True)
if rank == 1:
    os.kill(os.getpid(), signal.SIGSEGV)
dist.all_reduce(t)
dist.destroy_process_group()
