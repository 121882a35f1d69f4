#!/usr/bin/env bash
# Capture real NCCL / torch.distributed logs for sparktui's test fixtures.
#
# Usage: capture.sh OUTDIR
#
# Needs a host with at least 2 GPUs and a python3 that has torch with NCCL. Every scenario runs as
# two separate rank processes (rank 0 on GPU 0, rank 1 on GPU 1). Each rank's stdout and stderr go
# to OUTDIR/<topology>-<scenario>/rank<N>.log; meta.txt beside them records the environment and
# each rank's exit code. Topologies:
#   single-host  both ranks on one host, P2P/SHM allowed (NCCL's defaults).
#   two-hosts    emulated: each rank sees only its own GPU (as cudaDev 0), gets its own NCCL_HOSTID
#                and, where `unshare -u` works, its own host name (spark-a, spark-b); P2P and SHM
#                are disabled, so NCCL reports nNodes 2 and connects through NET/Socket.
# Scenarios run concurrently (distinct MASTER_PORT each). Every rank is wrapped in `timeout`, so
# hanging scenarios end by themselves (exit 124 = ended by SIGTERM at the limit).
#
# Variables: PYTHON (python3), RANK_TIMEOUT (90), MISMATCH_TIMEOUT (120), BASE_PORT (29500),
# SCENARIO_EXTRA_ARGS (extra arguments for scenario.py, e.g. "--backend gloo" for a CPU dry run),
# GPU_RANKS ("0 1": the CUDA device of rank 0 and rank 1).
set -u

OUTDIR=${1:?usage: capture.sh OUTDIR}
HERE=$(cd "$(dirname "$0")" && pwd)
PROG="$HERE/scenario.py"
PY=${PYTHON:-python3}
RANK_TIMEOUT=${RANK_TIMEOUT:-90}
MISMATCH_TIMEOUT=${MISMATCH_TIMEOUT:-120}
BASE_PORT=${BASE_PORT:-29500}
read -r -a EXTRA_ARGS <<<"${SCENARIO_EXTRA_ARGS:-}"
read -r -a GPUS <<<"${GPU_RANKS:-0 1}"
HOSTS=(spark-a spark-b)

# Required on the lent H200 machines (NVLink multicast off), and harmless elsewhere.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1 NCCL_DEBUG=INFO

mkdir -p "$OUTDIR"
STATE=$(mktemp -d)
trap 'rm -rf "$STATE"' EXIT

# Sets the host name inside a new UTS namespace, then runs the command: sh -c "$SETHOST" NAME CMD...
# shellcheck disable=SC2016
SETHOST='{ hostname "$0" 2>/dev/null || printf %s "$0" >/proc/sys/kernel/hostname; } && [ "$(hostname)" = "$0" ] && exec "$@"'
if unshare -u sh -c "$SETHOST" spark-probe true >/dev/null 2>&1; then
    USE_UTS=1
else
    USE_UTS=0
fi

versions() {
    echo "date_utc: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "uname: $(uname -a)"
    echo "hostname: $(hostname)"
    echo "per-rank host names for two-hosts (unshare -u): $([ "$USE_UTS" = 1 ] && echo "yes (${HOSTS[*]})" || echo "no (unshare -u not permitted; both ranks share the real host name)")"
    echo "--- nvidia-smi -L"
    nvidia-smi -L 2>&1
    echo "--- nvidia-smi driver"
    nvidia-smi --query-gpu=index,name,driver_version,pci.bus_id --format=csv 2>&1
    echo "--- python / torch / nccl"
    "$PY" - <<'EOF' 2>&1
import sys
import torch
print("python", sys.version.split()[0])
print("torch", torch.__version__, "cuda", torch.version.cuda)
try:
    print("nccl (torch.cuda.nccl.version)", ".".join(map(str, torch.cuda.nccl.version())))
except Exception as exc:  # noqa: BLE001
    print("nccl version unavailable:", exc)
print("cuda devices", torch.cuda.device_count())
EOF
    echo "--- network interfaces (/proc/net/dev)"
    awk 'NR > 2 { sub(":", "", $1); print $1 }' /proc/net/dev
    echo "--- hostname -I"
    hostname -I 2>&1 || true
    echo "--- /sys/class/infiniband"
    ls /sys/class/infiniband 2>&1 || true
    echo "--- nvidia-smi topo -m"
    nvidia-smi topo -m 2>&1
}
versions >"$OUTDIR/versions.txt" 2>&1

PAIR_INDEX=0
WAVE_PIDS=()

# start_pair TOPOLOGY NAME "PROGRAM_SCENARIO [ARGS...]" RANK_TIMEOUT [VAR=VALUE ...]
# Starts both ranks in the background; their subshell pids are added to WAVE_PIDS.
start_pair() {
    local topo=$1 name=$2 prog=$3 tmo=$4
    shift 4
    local -a progv
    read -r -a progv <<<"$prog"
    local dir="$OUTDIR/$topo-$name"
    local port=$((BASE_PORT + 10 * PAIR_INDEX))
    PAIR_INDEX=$((PAIR_INDEX + 1))
    mkdir -p "$dir"
    {
        echo "topology=$topo"
        echo "scenario=$name"
        echo "command=python3 tools/capture/nccl/scenario.py $prog${EXTRA_ARGS[*]:+ ${EXTRA_ARGS[*]}}"
        echo "rank_timeout_s=$tmo"
        echo "common_env=NCCL_DEBUG=INFO NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1"
        echo "scenario_env=$*"
    } >"$STATE/$topo-$name.meta"
    local rank
    for rank in 0 1; do
        local -a envs=(MASTER_ADDR=127.0.0.1 "MASTER_PORT=$port" WORLD_SIZE=2 "RANK=$rank")
        local host=""
        if [[ $topo == two-hosts ]]; then
            envs+=("CUDA_VISIBLE_DEVICES=${GPUS[$rank]}" LOCAL_RANK=0 "NCCL_HOSTID=${HOSTS[$rank]}"
                NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1)
            [[ $USE_UTS == 1 ]] && host=${HOSTS[$rank]}
        else
            envs+=("LOCAL_RANK=${GPUS[$rank]}")
        fi
        envs+=("$@")
        local -a cmd=(env "${envs[@]}" "$PY" "$PROG" "${progv[@]}" "${EXTRA_ARGS[@]}")
        if [[ -n $host ]]; then
            cmd=(unshare -u sh -c "$SETHOST" "$host" "${cmd[@]}")
        fi
        echo "rank${rank}_env=${envs[*]}" >>"$STATE/$topo-$name.meta"
        echo "rank${rank}_hostname=${host:-$(hostname)}" >>"$STATE/$topo-$name.meta"
        (
            start=$(date +%s)
            timeout -k 10 "$tmo" "${cmd[@]}" >"$dir/rank$rank.log" 2>&1
            rc=$?
            {
                echo "rank${rank}_exit=$rc"
                echo "rank${rank}_wall_s=$(($(date +%s) - start))"
            } >"$STATE/$topo-$name.rank$rank"
        ) &
        WAVE_PIDS+=($!)
    done
}

T0=$(date +%s)
echo "capture: wave 1 (everything but mismatched-collectives) at +0s"
for topo in single-host two-hosts; do
    start_pair "$topo" healthy healthy "$RANK_TIMEOUT"
    start_pair "$topo" healthy-eager-init "healthy --eager-init" "$RANK_TIMEOUT"
    start_pair "$topo" healthy-subsys-init healthy "$RANK_TIMEOUT" NCCL_DEBUG_SUBSYS=INIT
    start_pair "$topo" healthy-subsys-init-net healthy "$RANK_TIMEOUT" NCCL_DEBUG_SUBSYS=INIT,NET
    start_pair "$topo" healthy-subsys-all healthy "$RANK_TIMEOUT" NCCL_DEBUG_SUBSYS=ALL
    start_pair "$topo" wrong-socket-ifname healthy "$RANK_TIMEOUT" NCCL_SOCKET_IFNAME=eth9
    start_pair "$topo" ib-forced healthy "$RANK_TIMEOUT" NCCL_NET=IB
    start_pair "$topo" ib-hca-mlx5 healthy "$RANK_TIMEOUT" NCCL_IB_HCA=mlx5_0
done
QUICK_PIDS=("${WAVE_PIDS[@]}")
WAVE_PIDS=()
for topo in single-host two-hosts; do
    start_pair "$topo" second-group-not-joined second-group-not-joined "$RANK_TIMEOUT"
    start_pair "$topo" rendezvous-wrong-port rendezvous-wrong-port "$RANK_TIMEOUT"
done
SLOW_PIDS=("${WAVE_PIDS[@]}")
WAVE_PIDS=()

# The mismatched collectives leave NCCL kernels spinning on both GPUs; start them only after the
# quick scenarios have ended, so that those are not time-sliced against the spinning kernels.
wait "${QUICK_PIDS[@]}"
echo "capture: wave 2 (mismatched-collectives) at +$(($(date +%s) - T0))s"
for topo in single-host two-hosts; do
    start_pair "$topo" mismatched-collectives mismatched-collectives "$MISMATCH_TIMEOUT"
done
wait "${SLOW_PIDS[@]}" "${WAVE_PIDS[@]}"
echo "capture: all ranks ended at +$(($(date +%s) - T0))s"

for meta in "$STATE"/*.meta; do
    key=$(basename "$meta" .meta)
    cat "$meta" "$STATE/$key.rank0" "$STATE/$key.rank1" >"$OUTDIR/$key/meta.txt" 2>/dev/null
    echo "exit_codes_legend=0 ok; 1 Python exception; 124 ended by the capture's timeout (SIGTERM); 134 SIGABRT (torch took the process down); 137 SIGKILL after the timeout" >>"$OUTDIR/$key/meta.txt"
done

for dir in "$OUTDIR"/*/; do
    key=$(basename "$dir")
    printf '%-42s %s  %s\n' "$key" "$(grep -h '_exit=' "$dir/meta.txt" | tr '\n' ' ')" \
        "$(du -k "$dir/rank0.log" "$dir/rank1.log" | awk '{printf "%sK ", $1}')"
done
