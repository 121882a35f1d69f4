#!/usr/bin/env bash
# Capture what PyTorch and NCCL print when the GPUs do not fit the job, on a machine with an NVIDIA GPU.
#
# Usage: tools/capture/cuda/capture.sh OUTDIR [SCENARIO ...]      (default: every scenario)
#   arch-missing          a kernel built for another architecture (arch_missing.py; ARCH [8.0])
#   more-ranks-than-gpus  torchrun --nproc-per-node 2 of ranks.py on a node with one GPU
#   no-gpu-visible        the same job with CUDA_VISIBLE_DEVICES naming no GPU of the node
#   cutlass-arch-missing  a kernel launched through CUTLASS's cluster launcher, built for another architecture
#                         (cutlass_arch_missing.py; ARCH [10.0]; CUTLASS_INCLUDE, the CUTLASS headers' folder)
#   device-assert         a token id past an embedding's vocabulary, looked up on the GPU (device_assert.py)
# Writes OUTDIR/SCENARIO/{run.log,meta.txt}: run.log is stdout and stderr as printed, meta.txt the command,
# the versions and the exit status. PYTHON picks the interpreter [python3]. Everything listens on 127.0.0.1.
set -u
OUTDIR=${1:?usage: capture.sh OUTDIR [SCENARIO ...]}
shift
HERE=$(cd "$(dirname "$0")" && pwd)
PY=${PYTHON:-python3}
export TORCH_EXTENSIONS_DIR=${TORCH_EXTENSIONS_DIR:-$(mktemp -d)}
export PYTHONUNBUFFERED=1 NCCL_DEBUG=${NCCL_DEBUG:-INFO}

capture() { # SCENARIO ENV... -- CMD...
  local name=$1; shift
  local env=()
  while [ "$1" != "--" ]; do env+=("$1"); shift; done
  shift
  local dir="$OUTDIR/$name"
  mkdir -p "$dir"
  timeout 600 env "${env[@]}" "$@" >"$dir/run.log" 2>&1
  local rc=$?
  {
    echo "command: ${*/#$HERE/tools/capture/cuda}"
    echo "env: PYTHONUNBUFFERED=1 NCCL_DEBUG=$NCCL_DEBUG ${env[*]}"
    echo "gpu: $(nvidia-smi --query-gpu=name,compute_cap,driver_version --format=csv,noheader 2>&1 | head -1)"
    echo "nvcc: $(nvcc --version 2>&1 | tail -1)"
    echo "torch: $("$PY" -c 'import torch; print(torch.__version__, torch.version.cuda)' 2>&1)"
    echo "exit status: $rc"
  } >"$dir/meta.txt"
  echo "$name: exit $rc, $(wc -l <"$dir/run.log") lines"
}

torchrun=("$PY" -m torch.distributed.run --nproc-per-node 2 --master-addr 127.0.0.1 --master-port 29591 "$HERE/ranks.py")
for s in "${@:-arch-missing more-ranks-than-gpus no-gpu-visible cutlass-arch-missing device-assert}"; do
  for one in $s; do
    case "$one" in
      arch-missing) capture arch-missing "ARCH=${ARCH:-8.0}" -- "$PY" "$HERE/arch_missing.py" ;;
      more-ranks-than-gpus) capture more-ranks-than-gpus CUDA_VISIBLE_DEVICES=0 -- "${torchrun[@]}" ;;
      no-gpu-visible) capture no-gpu-visible CUDA_VISIBLE_DEVICES=7 -- "${torchrun[@]}" ;;
      cutlass-arch-missing)
        capture cutlass-arch-missing "ARCH=${ARCH:-10.0}" "CUTLASS_INCLUDE=${CUTLASS_INCLUDE:?CUTLASS_INCLUDE: the CUTLASS headers}" \
          -- "$PY" "$HERE/cutlass_arch_missing.py" ;;
      device-assert) capture device-assert -- "$PY" "$HERE/device_assert.py" ;;
      *) echo "capture.sh: unknown scenario $one" >&2; exit 2 ;;
    esac
  done
done
