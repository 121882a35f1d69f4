"""A torchrun job of NCCL ranks that each take the GPU numbered by their local rank, as most training and
serving scripts do (``torch.cuda.set_device(LOCAL_RANK)``), then all-reduce once. Started with more ranks
per node than the node has GPUs, the ranks past the last GPU fail; started where no GPU is visible, every
rank does. Lines this script prints start with ``ranks:``."""

import os

import torch
import torch.distributed as dist

local = int(os.environ["LOCAL_RANK"])
print(f"ranks: rank {os.environ['RANK']} local_rank {local}, {torch.cuda.device_count()} GPU(s) visible", flush=True)
torch.cuda.set_device(local)
dist.init_process_group("nccl", device_id=torch.device("cuda", local))
t = torch.ones(1, device="cuda")
dist.all_reduce(t)
print(f"ranks: all_reduce gave {t.item():.0f}", flush=True)
dist.destroy_process_group()
