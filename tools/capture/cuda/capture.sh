#!/usr/bin/env bash
# Capture what PyTorch prints when a kernel was built for another GPU architecture (arch_missing.py).
#
# Usage: tools/capture/cuda/capture.sh OUTDIR      (on a machine with an NVIDIA GPU, nvcc and PyTorch)
# Writes OUTDIR/arch-missing/{run.log,meta.txt}: run.log is the script's stdout and stderr as printed,
# meta.txt the command, the versions and the exit status. PYTHON picks the interpreter [python3];
# ARCH the architectures the kernel is built for [8.0: none of the Hopper or Blackwell GPUs].
set -u
OUTDIR=${1:?usage: capture.sh OUTDIR}
HERE=$(cd "$(dirname "$0")" && pwd)
PY=${PYTHON:-python3}
dir="$OUTDIR/arch-missing"
mkdir -p "$dir"
export TORCH_EXTENSIONS_DIR=${TORCH_EXTENSIONS_DIR:-$(mktemp -d)}
timeout 600 env ARCH="${ARCH:-8.0}" PYTHONUNBUFFERED=1 "$PY" "$HERE/arch_missing.py" >"$dir/run.log" 2>&1
rc=$?
{
  echo "command: $PY tools/capture/cuda/arch_missing.py"
  echo "env: ARCH=${ARCH:-8.0} PYTHONUNBUFFERED=1 TORCH_EXTENSIONS_DIR=<a fresh folder>"
  echo "gpu: $(nvidia-smi --query-gpu=name,compute_cap,driver_version --format=csv,noheader 2>&1 | head -1)"
  echo "nvcc: $(nvcc --version 2>&1 | tail -1)"
  echo "torch: $("$PY" -c 'import torch; print(torch.__version__, torch.version.cuda)' 2>&1)"
  echo "exit status: $rc"
} >"$dir/meta.txt"
echo "arch-missing: exit $rc, $(wc -l <"$dir/run.log") lines"
