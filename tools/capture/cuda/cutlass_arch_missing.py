"""A kernel launched through CUTLASS's cluster launcher on a GPU it was not built for, as the CUTLASS GEMMs of
an inference engine's release build are (vLLM's ``cutlass_gemm_caller``): what such a build prints on a GPU
its arch list left out (sm_121 on a DGX Spark when a build keeps only sm_120).

``cutlass::ClusterLauncher`` first sets an attribute of the kernel; with no image of the kernel for this GPU
the CUDA runtime refuses, and the launcher returns ``Status::kInvalid``, whose text is "Invalid status". A
release build (``NDEBUG``) prints nothing else; the caller's ``TORCH_CHECK`` of the status, as vLLM's
``CUTLASS_CHECK`` does, turns it into PyTorch's error. The extension is built at run time for ``ARCH``
(default 10.0, machine code only) with the CUTLASS headers at ``CUTLASS_INCLUDE`` (the ``nvidia-cutlass``
wheel's ``cutlass_library/source/include``). Lines this script prints start with ``cutlass_arch_missing:``.
"""

import os
import sys

import torch
from torch.utils.cpp_extension import load_inline

ARCH = os.environ.get("ARCH", "10.0")
os.environ["TORCH_CUDA_ARCH_LIST"] = ARCH
INCLUDE = os.environ["CUTLASS_INCLUDE"]

CUDA = r"""
#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>
#include "cutlass/cutlass.h"
#include "cutlass/cluster_launch.hpp"

__global__ void scale(float* x, int64_t n) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < n) x[i] *= 2.0f;
}

torch::Tensor cutlass_scale_(torch::Tensor x) {
  int64_t n = x.numel();
  float* data = x.data_ptr<float>();
  dim3 grid((n + 127) / 128), cluster(1), block(128);
  cutlass::ClusterLaunchParams launch{grid, block, cluster, 0, at::cuda::getCurrentCUDAStream()};
  cutlass::Status status = cutlass::launch_kernel_on_cluster(launch, (void const*)&scale, data, n);
  TORCH_CHECK(status == cutlass::Status::kSuccess, cutlassGetStatusString(status));
  return x;
}
"""
CPP = "torch::Tensor cutlass_scale_(torch::Tensor x);"

major, minor = torch.cuda.get_device_capability(0)
gpu = torch.cuda.get_device_name(0)
print(f"cutlass_arch_missing: torch {torch.__version__}, GPU {gpu} sm_{major}{minor}, kernels built for {ARCH}")
ext = load_inline(
    "sparktui_cutlass_arch_missing",
    CPP,
    cuda_sources=CUDA,
    functions=["cutlass_scale_"],
    extra_include_paths=[INCLUDE],
    extra_cuda_cflags=["-DNDEBUG", "-std=c++17"],
    verbose=False,
)
x = torch.ones(1024, device="cuda")
ext.cutlass_scale_(x)
torch.cuda.synchronize()
print(f"cutlass_arch_missing: the kernel ran ({x[0].item():.0f})", flush=True)
sys.exit(0)
