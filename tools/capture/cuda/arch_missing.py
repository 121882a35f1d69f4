"""A CUDA kernel built for another GPU architecture than the one it runs on, called through PyTorch: what a
wheel or an image without kernels for the GPU (sm_121 on a DGX Spark, sm_120 on RTX 50) prints when one of
its kernels is launched. The extension is compiled at run time with ``TORCH_CUDA_ARCH_LIST`` set to ``ARCH``
(default 8.0, machine code only, no PTX the driver could compile for a newer GPU), then called once; the
error is PyTorch's own (``C10_CUDA_KERNEL_LAUNCH_CHECK``). Lines this script prints start with ``arch_missing:``.
"""

import os
import sys

import torch
from torch.utils.cpp_extension import load_inline

ARCH = os.environ.get("ARCH", "8.0")
os.environ["TORCH_CUDA_ARCH_LIST"] = ARCH

CUDA = r"""
#include <torch/extension.h>
#include <c10/cuda/CUDAException.h>

__global__ void add_one(float* x, int64_t n) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < n) x[i] += 1.0f;
}

torch::Tensor add_one_(torch::Tensor x) {
  int64_t n = x.numel();
  add_one<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), n);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return x;
}
"""
CPP = "torch::Tensor add_one_(torch::Tensor x);"

major, minor = torch.cuda.get_device_capability(0)
gpu = torch.cuda.get_device_name(0)
print(f"arch_missing: torch {torch.__version__}, GPU {gpu} sm_{major}{minor}, kernels built for {ARCH}", flush=True)
ext = load_inline("sparktui_arch_missing", CPP, cuda_sources=CUDA, functions=["add_one_"], verbose=False)
x = torch.zeros(1024, device="cuda")
ext.add_one_(x)
torch.cuda.synchronize()
print(f"arch_missing: the kernel ran ({x[0].item():.0f})", flush=True)
sys.exit(0)
