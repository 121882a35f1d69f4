#!/usr/bin/env bash
# Capture the timed incident behind sparktui's built-in demo (sparktui/demo/second-communicator/).
#
# Usage: capture_demo.sh OUTDIR
#
# Runs the `second-group-not-joined` scenario of tools/capture/nccl/scenario.py as two rank processes
# in the emulated `two-hosts` topology of tools/capture/nccl/capture.sh: each rank sees only its own
# GPU, has its own NCCL_HOSTID and, where `unshare -u` works, its own host name (spark-a, spark-b);
# P2P and SHM are off, so NCCL reports nNodes 2 and connects through NET/Socket. Each rank runs under
# tools/capture/timestamp.py, which writes the rank's merged stdout+stderr unchanged to
#   OUTDIR/second-communicator/<host>/nccl.log
# and the arrival time of every line (ms since the common start of the capture) to nccl.log.times.
# OUTDIR/meta.txt records the environment, exit codes and timings; OUTDIR/versions.txt the machine.
# Neither belongs in the bundle: bundle.toml is written afterwards, by hand (see README.md).
#
# Variables: PYTHON (python3), RANK_TIMEOUT (165: seconds before `timeout` ends each rank; the hang
# starts some 10-15 s in), PG_TIMEOUT (1800: the process-group timeout, well beyond RANK_TIMEOUT so
# the watchdog stays quiet), MASTER_PORT (29500), GPU_RANKS ("0 1"), SCENARIO_EXTRA_ARGS (e.g.
# "--backend gloo" for a CPU dry run).
set -u

OUTDIR=${1:?usage: capture_demo.sh OUTDIR}
HERE=$(cd "$(dirname "$0")" && pwd)
PROG="$HERE/../nccl/scenario.py"
STAMP="$HERE/../timestamp.py"
PY=${PYTHON:-python3}
RANK_TIMEOUT=${RANK_TIMEOUT:-165}
PG_TIMEOUT=${PG_TIMEOUT:-1800}
PORT=${MASTER_PORT:-29500}
read -r -a EXTRA_ARGS <<<"${SCENARIO_EXTRA_ARGS:-}"
read -r -a GPUS <<<"${GPU_RANKS:-0 1}"
HOSTS=(spark-a spark-b)
BUNDLE="$OUTDIR/second-communicator"

# Required on the lent H200 machines (NVLink multicast off), and harmless elsewhere.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1 NCCL_DEBUG=INFO

# Sets the host name inside a new UTS namespace, then runs the command: sh -c "$SETHOST" NAME CMD...
# shellcheck disable=SC2016
SETHOST='{ hostname "$0" 2>/dev/null || printf %s "$0" >/proc/sys/kernel/hostname; } && [ "$(hostname)" = "$0" ] && exec "$@"'
if unshare -u sh -c "$SETHOST" spark-probe true >/dev/null 2>&1; then
    USE_UTS=1
else
    USE_UTS=0
fi

mkdir -p "$BUNDLE/${HOSTS[0]}" "$BUNDLE/${HOSTS[1]}"
{
    echo "date_utc: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "uname: $(uname -a)"
    echo "per-rank host names (unshare -u): $([ "$USE_UTS" = 1 ] && echo "yes (${HOSTS[*]})" || echo no)"
    nvidia-smi --query-gpu=index,name,driver_version,pci.bus_id --format=csv 2>&1
    "$PY" -c 'import sys, torch; print("python", sys.version.split()[0]); print("torch", torch.__version__, "cuda", torch.version.cuda)
try:
    print("nccl", ".".join(map(str, torch.cuda.nccl.version())))
except Exception as exc:
    print("nccl version unavailable:", exc)' 2>&1
} >"$OUTDIR/versions.txt"

STATE=$(mktemp -d)
trap 'rm -rf "$STATE"' EXIT

ORIGIN_NS=$("$PY" "$STAMP" --now)
START_UTC=$(date -u +%Y-%m-%dT%H:%M:%S.%3NZ)
{
    echo "topology=two-hosts"
    echo "scenario=second-group-not-joined"
    echo "command=python3 tools/capture/nccl/scenario.py second-group-not-joined --timeout-s $PG_TIMEOUT${EXTRA_ARGS[*]:+ ${EXTRA_ARGS[*]}}"
    echo "rank_timeout_s=$RANK_TIMEOUT"
    echo "common_env=NCCL_DEBUG=INFO NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1"
    echo "origin=${START_UTC} (time 0 of every .times file; CLOCK_MONOTONIC ${ORIGIN_NS} ns)"
} >"$OUTDIR/meta.txt"

PIDS=()
for rank in 0 1; do
    host=${HOSTS[$rank]}
    envs=(MASTER_ADDR=127.0.0.1 "MASTER_PORT=$PORT" WORLD_SIZE=2 "RANK=$rank" LOCAL_RANK=0
        "CUDA_VISIBLE_DEVICES=${GPUS[$rank]}" "NCCL_HOSTID=$host" NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1)
    cmd=(env "${envs[@]}" "$PY" "$PROG" second-group-not-joined --timeout-s "$PG_TIMEOUT" "${EXTRA_ARGS[@]}")
    if [[ $USE_UTS == 1 ]]; then
        cmd=(unshare -u sh -c "$SETHOST" "$host" "${cmd[@]}")
    fi
    echo "rank${rank}_env=${envs[*]}" >>"$OUTDIR/meta.txt"
    echo "rank${rank}_hostname=$([ "$USE_UTS" = 1 ] && echo "$host" || hostname)" >>"$OUTDIR/meta.txt"
    (
        "$PY" "$STAMP" --origin-ns "$ORIGIN_NS" --log "$BUNDLE/$host/nccl.log" -- \
            timeout -k 10 "$RANK_TIMEOUT" "${cmd[@]}"
        rc=$?
        echo "rank${rank}_exit=$rc" >"$STATE/rank$rank"
        now=$("$PY" "$STAMP" --now)
        echo "rank${rank}_ended_ms=$(((now - ORIGIN_NS) / 1000000))" >>"$STATE/rank$rank"
    ) &
    PIDS+=($!)
done
echo "capture: both ranks started at ${START_UTC}, rank timeout ${RANK_TIMEOUT}s"
wait "${PIDS[@]}"
cat "$STATE/rank0" "$STATE/rank1" >>"$OUTDIR/meta.txt"
echo "exit_codes_legend=0 ok; 1 Python exception; 124 ended by the capture's timeout (SIGTERM); 134 SIGABRT; 137 SIGKILL after the timeout" >>"$OUTDIR/meta.txt"

for host in "${HOSTS[@]}"; do
    log="$BUNDLE/$host/nccl.log"
    # wc -l counts newlines; the .times file has one more line when the log ends without one.
    printf 'capture: %s: %s bytes, %s newlines, %s times, first %s ms, last %s ms; last line: %s\n' "$host" \
        "$(wc -c <"$log")" "$(wc -l <"$log")" "$(wc -l <"$log.times")" "$(head -n1 "$log.times")" \
        "$(tail -n1 "$log.times")" "$(tail -n1 "$log" | cut -c1-160)"
done
cat "$OUTDIR/meta.txt"
