#!/usr/bin/env bash
# Four-rank NCCL / torch.distributed log capture, emulating several hosts on ONE GPU.
#
# Usage: capture.sh OUTDIR
#
# Every scenario is four rank processes of scenario.py (beside this file), all on CUDA device 0.
# The "hosts" are made up: each rank gets an NCCL_HOSTID and, where `unshare -u` is allowed, a
# host name of its own in a private UTS namespace. P2P and SHM are off, so ranks on different
# "hosts" talk through NET/Socket as real nodes would. Output per scenario:
#   OUTDIR/<topology>-<scenario>/rank0.log .. rank3.log   (stdout + stderr of that rank)
#   OUTDIR/<topology>-<scenario>/meta.txt                  (command, env per rank, exit codes)
#   OUTDIR/versions.txt, OUTDIR/progress.txt               (for the whole capture)
#
# Topologies:
#   four-hosts                    node-a..node-d, one rank each, NCCL_HOSTID = host name.
#   two-hosts-2ranks              node-a (ranks 0,1) and node-b (ranks 2,3): two processes share
#                                 a host name and an NCCL_HOSTID (LOCAL_RANK 0 and 1).
#   two-hosts-2ranks-own-hostid   the same host names, but every rank its own NCCL_HOSTID
#                                 (node-a-0, node-a-1, ...), so NCCL counts four nodes.
#
# Every rank runs under `timeout`; scenarios run concurrently, each on its own MASTER_PORT, in
# two waves: wave 2 (the OOM scenarios) starts only after wave 1 has ended, because filling the
# GPU would also starve the other scenarios' processes.
#
# Variables: PYTHON (python3); LIMIT_S (75: per-rank limit of most scenarios); WATCHDOG_LIMIT_S
# (150: scenarios in which the torch watchdog is meant to fire; it needs 30 s of PG timeout plus
# its dump wait); BASE_PORT (29600); GOOD_IFNAME (auto: the default route's interface, else the
# first one that is not lo, else lo); SCENARIO_EXTRA_ARGS (added to every scenario.py command,
# e.g. "--backend gloo" for a dry run without a GPU); ONLY (a regex: run only the scenario folders
# whose name matches); OTHER_NCCL (the path of another libnccl.so.2: adds other-nccl-rank3).
set -u

out=${1:?usage: capture.sh OUTDIR}
here=$(cd "$(dirname "$0")" && pwd)
prog=$here/scenario.py
py=${PYTHON:-python3}
limit=${LIMIT_S:-75}
wd_limit=${WATCHDOG_LIMIT_S:-150}
base_port=${BASE_PORT:-29600}
only=${ONLY:-.}
read -r -a extra <<<"${SCENARIO_EXTRA_ARGS:-}"

# NVLink multicast stays off everywhere (the lent H200 machines require it).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export NCCL_DEBUG=INFO
# Set per scenario below, never inherited from the caller.
unset PYTHONUNBUFFERED NCCL_RUNTIME_CONNECT NCCL_SOCKET_IFNAME NCCL_DEBUG_SUBSYS NCCL_DEBUG_FILE \
    NCCL_HOSTID NCCL_P2P_DISABLE NCCL_SHM_DISABLE CUDA_VISIBLE_DEVICES RANK WORLD_SIZE LOCAL_RANK

mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
t_start=$(date +%s)

note() {
    echo "capture: +$(($(date +%s) - t_start))s $*" | tee -a "$out/progress.txt"
}

# --- can each rank get its own host name? ------------------------------------------------------
# Runs "$@" with the host name $1 in a new UTS namespace: in_uts NAME CMD...
# shellcheck disable=SC2016
uts_prog='if command -v hostname >/dev/null 2>&1; then hostname "$0"; else echo "$0" >/proc/sys/kernel/hostname; fi 2>/dev/null
[ "$(cat /proc/sys/kernel/hostname)" = "$0" ] || exit 97
exec "$@"'
if unshare -u sh -c "$uts_prog" uts-probe true 2>"$work/uts.err"; then
    uts=1
    uts_note="yes: unshare -u works, every rank sets its own host name"
else
    uts=0
    uts_note="no (unshare -u failed: $(tr '\n' ' ' <"$work/uts.err")); every rank has the real host name $(hostname)"
fi

# --- the interface that works, for the ranks that are not given a wrong one -------------------
good_if=${GOOD_IFNAME:-auto}
if [[ $good_if == auto ]]; then
    good_if=$(awk 'NR > 1 && $2 == "00000000" { print $1; exit }' /proc/net/route 2>/dev/null)
    [[ -n $good_if ]] || good_if=$(awk 'NR > 2 { sub(":", "", $1); if ($1 != "lo") { print $1; exit } }' /proc/net/dev)
    [[ -n $good_if ]] || good_if=lo
fi

{
    echo "date_utc: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "uname: $(uname -a)"
    echo "real hostname: $(hostname)"
    echo "per-rank host names: $uts_note"
    echo "interface given to the healthy ranks of the wrong-ifname scenario: $good_if"
    echo "--- nvidia-smi -L"
    nvidia-smi -L 2>&1
    echo "--- nvidia-smi --query-gpu"
    nvidia-smi --query-gpu=index,name,driver_version,memory.total,pci.bus_id --format=csv 2>&1
    echo "--- python, torch, NCCL"
    "$py" -c '
import sys, torch
print("python", sys.version.split()[0], sys.executable)
print("torch", torch.__version__, "cuda", torch.version.cuda)
try:
    print("nccl", ".".join(map(str, torch.cuda.nccl.version())))
except Exception as e:
    print("nccl unavailable:", e)
print("cuda devices", torch.cuda.device_count())
' 2>&1
    echo "--- interfaces (/proc/net/dev)"
    awk 'NR > 2 { sub(":", "", $1); print $1 }' /proc/net/dev
    echo "--- hostname -I"
    hostname -I 2>&1 || true
    echo "--- /proc/net/route"
    cat /proc/net/route 2>&1
    echo "--- nvidia-smi topo -m"
    nvidia-smi topo -m 2>&1
} >"$out/versions.txt" 2>&1
versions_short=$(grep -E '^(torch|nccl) ' "$out/versions.txt" | tr '\n' ' ')
note "versions: $versions_short; per-rank host names: $uts_note"

# --- one scenario: four rank processes -----------------------------------------------------------
hosts_of() {
    case $1 in
        four-hosts) echo "node-a node-b node-c node-d" ;;
        two-hosts-2ranks | two-hosts-2ranks-own-hostid) echo "node-a node-a node-b node-b" ;;
        *) echo "unknown topology $1" >&2; return 1 ;;
    esac
}

n_started=0
wave_pids=()

# scenario TOPOLOGY NAME LIMIT SIGNAL "SCENARIO.PY ARGS" [SETTING ...]
# A SETTING is VAR=VALUE (every rank), RANKS:VAR=VALUE (only the listed ranks, e.g. 3: or 0,1,2:)
# or one of the words buffered (PYTHONUNBUFFERED is not set) and stdbuf (the program runs under
# `stdbuf -oL -eL`, which line-buffers C stdio, i.e. NCCL's stdout, but not Python's own buffer).
# SIGNAL is what `timeout` sends at LIMIT. shm=SIZE gives every rank a /dev/shm of its own, a tmpfs of SIZE
# (as `docker run --shm-size` does), in a mount namespace of its own.
scenario() {
    local topo=$1 name=$2 tmo=$3 sig=$4 args=$5
    shift 5
    local key=$topo-$name
    if ! [[ $key =~ $only ]]; then return 0; fi
    local port=$((base_port + 10 * n_started))
    n_started=$((n_started + 1))
    local dir=$out/$key
    mkdir -p "$dir"
    local -a hosts argv
    read -r -a hosts <<<"$(hosts_of "$topo")"
    read -r -a argv <<<"$args"
    local buffered=0 line_buf=0 shm="" s
    for s in "$@"; do
        [[ $s == buffered ]] && buffered=1
        [[ $s == stdbuf ]] && line_buf=1
        [[ $s == shm=* ]] && shm=${s#shm=}
    done
    local common="NCCL_DEBUG=INFO NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1"
    [[ $buffered == 1 ]] && common+=" (PYTHONUNBUFFERED not set)" || common+=" PYTHONUNBUFFERED=1"
    {
        echo "topology=$topo"
        echo "scenario=$name"
        echo "command=$([[ $line_buf == 1 ]] && echo "stdbuf -oL -eL ")python3 tools/capture/nccl4/scenario.py $args${extra[*]:+ ${extra[*]}}"
        echo "rank_limit_s=$tmo"
        echo "rank_limit_signal=SIG$sig (timeout -s $sig -k 10 $tmo: SIGKILL 10 s later if still alive)"
        echo "common_env=$common"
        echo "scenario_settings=$*"
        echo "torch_nccl=$versions_short"
        echo "per_rank_hostnames=$([[ $uts == 1 ]] && echo yes || echo "no, all $(hostname)")"
    } >"$dir/meta.txt"
    local rank
    for rank in 0 1 2 3; do
        local host=${hosts[$rank]} hostid local_rank=0
        case $topo in
            four-hosts) hostid=$host ;;
            two-hosts-2ranks) hostid=$host local_rank=$((rank % 2)) ;;
            two-hosts-2ranks-own-hostid) hostid=$host-$((rank % 2)) local_rank=$((rank % 2)) ;;
        esac
        local -a env=(MASTER_ADDR=127.0.0.1 "MASTER_PORT=$port" WORLD_SIZE=4 "RANK=$rank"
            "LOCAL_RANK=$local_rank" CUDA_VISIBLE_DEVICES=0 "NCCL_HOSTID=$hostid"
            NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1)
        [[ $buffered == 1 ]] || env+=(PYTHONUNBUFFERED=1)
        for s in "$@"; do
            case $s in
                buffered | stdbuf | shm=*) ;;
                *:*=*)
                    local who=${s%%:*}
                    [[ ",$who," == *",$rank,"* ]] && env+=("${s#*:}")
                    ;;
                *=*) env+=("$s") ;;
                *) echo "capture.sh: bad setting '$s' for $key" >&2 ;;
            esac
        done
        local -a cmd=(env "${env[@]}" "$py" "$prog" "${argv[@]}" "${extra[@]}")
        [[ $line_buf == 1 ]] && cmd=(env "${env[@]}" stdbuf -oL -eL "$py" "$prog" "${argv[@]}" "${extra[@]}")
        # shellcheck disable=SC2016
        [[ -n $shm ]] && cmd=(unshare -m sh -c 'mount -t tmpfs -o "size=$0" tmpfs /dev/shm && exec "$@"' "$shm" "${cmd[@]}")
        [[ $uts == 1 ]] && cmd=(unshare -u sh -c "$uts_prog" "$host" "${cmd[@]}")
        {
            echo "rank${rank}_host=$([[ $uts == 1 ]] && echo "$host" || hostname)"
            echo "rank${rank}_env=${env[*]}"
        } >>"$dir/meta.txt"
        (
            t0=$(date +%s)
            timeout -s "$sig" -k 10 "$tmo" "${cmd[@]}" >"$dir/rank$rank.log" 2>&1
            rc=$?
            printf 'rank%s_exit=%s\nrank%s_wall_s=%s\n' "$rank" "$rc" "$rank" "$(($(date +%s) - t0))" \
                >"$work/$key.rank$rank"
        ) &
        wave_pids+=($!)
    done
}

# --- wave 1 ---------------------------------------------------------------------------------------
note "wave 1 starts"
rc0=NCCL_RUNTIME_CONNECT=0
rc0_rank3=3:$rc0
# The scenarios that hang or time out first, then the quick ones.
scenario four-hosts first-collective-hang "$limit" TERM "first-collective-hang --init eager"
scenario four-hosts first-collective-hang-runtime-connect-0 "$limit" TERM "first-collective-hang --init eager" $rc0
scenario four-hosts first-collective-hang-watchdog "$wd_limit" TERM \
    "first-collective-hang --init eager --pg-timeout-s 30"
scenario four-hosts first-collective-hang-watchdog-runtime-connect-0 "$wd_limit" TERM \
    "first-collective-hang --init eager --pg-timeout-s 30" $rc0
scenario four-hosts first-collective-hang-buffered-sigkill "$limit" KILL "first-collective-hang --init eager" buffered
scenario four-hosts first-collective-hang-buffered-stdbuf-sigkill "$limit" KILL "first-collective-hang --init eager" \
    buffered stdbuf
scenario four-hosts first-collective-hang-watchdog-runtime-connect-0-buffered "$wd_limit" TERM \
    "first-collective-hang --init eager --pg-timeout-s 30" $rc0 buffered
scenario four-hosts rank-exception "$wd_limit" TERM "rank-fails --init eager --fail-how exception --pg-timeout-s 30"
scenario four-hosts rank-device-assert "$wd_limit" TERM \
    "rank-fails --init eager --fail-how device-assert --pg-timeout-s 30"
scenario two-hosts-2ranks-own-hostid first-collective-hang "$limit" TERM "first-collective-hang --init eager"
scenario four-hosts healthy-eager "$limit" TERM "healthy --init eager"
scenario four-hosts healthy-eager-runtime-connect-0 "$limit" TERM "healthy --init eager" $rc0
scenario four-hosts healthy-lazy "$limit" TERM "healthy --init lazy"
scenario four-hosts wrong-ifname-rank3 "$limit" TERM "healthy --init eager" \
    "0,1,2:NCCL_SOCKET_IFNAME=$good_if" 3:NCCL_SOCKET_IFNAME=nosuch0
scenario four-hosts world-size-mismatch-rank3 "$limit" TERM "healthy --init eager" 3:WORLD_SIZE=5
scenario two-hosts-2ranks healthy-eager "$limit" TERM "healthy --init eager"
scenario two-hosts-2ranks healthy-lazy "$limit" TERM "healthy --init lazy"
scenario two-hosts-2ranks-own-hostid healthy-eager "$limit" TERM "healthy --init eager"
# What a run shows without NCCL_DEBUG=INFO, as most are started: NCCL's warnings only. (A first-collective
# hang captured so printed nothing of NCCL's but its version line before the ranks were killed: its logs
# and a cut run's read the same, so it is not kept as a fixture; see README.)
scenario four-hosts rank-exception-debug-warn "$wd_limit" TERM \
    "rank-fails --init eager --fail-how exception --pg-timeout-s 30" NCCL_DEBUG=WARN
scenario four-hosts healthy-eager-debug-warn "$limit" TERM "healthy --init eager" NCCL_DEBUG=WARN
# One node whose NCCL settings differ from the others' (an environment file that was not copied to every node)
scenario four-hosts proto-ll-rank3 "$wd_limit" TERM "healthy --init eager --pg-timeout-s 30" 3:NCCL_PROTO=LL
scenario four-hosts buffsize-1m-rank3 "$wd_limit" TERM "healthy --init eager --pg-timeout-s 30" 3:NCCL_BUFFSIZE=1048576
scenario four-hosts algo-tree-rank3 "$wd_limit" TERM "healthy --init eager --pg-timeout-s 30" 3:NCCL_ALGO=Tree
# A /dev/shm as small as a container's that was started without --shm-size or --ipc=host, and smaller
scenario four-hosts dev-shm-64k-eager "$limit" TERM "healthy --init eager" shm=64k
scenario four-hosts dev-shm-64k-lazy "$limit" TERM "healthy --init lazy" shm=64k
scenario four-hosts dev-shm-64k-eager-debug-warn "$limit" TERM "healthy --init eager" shm=64k NCCL_DEBUG=WARN
scenario four-hosts rank-device-assert-debug-warn "$wd_limit" TERM \
    "rank-fails --init eager --fail-how device-assert --pg-timeout-s 30" NCCL_DEBUG=WARN
# Settings copied from another system: an algorithm this fabric has not (NVLS needs NVLink SHARP), a network
# plugin that is not installed; and torch's blocking wait instead of the watchdog's asynchronous abort.
scenario four-hosts algo-nvls "$wd_limit" TERM "healthy --init eager --pg-timeout-s 30" NCCL_ALGO=NVLS
scenario four-hosts net-plugin-missing "$limit" TERM "healthy --init eager" NCCL_NET_PLUGIN=libnccl-net-absent.so
scenario four-hosts first-collective-hang-blocking-wait "$wd_limit" TERM \
    "first-collective-hang --init eager --pg-timeout-s 30" TORCH_NCCL_BLOCKING_WAIT=1
# Rank 3's environment differs from the others' (an env file or container set-up not copied to every node): it
# asks for the IB transport, connects its channels during init, uses IPv6 sockets, or sees no GPU.
scenario four-hosts net-ib-rank3 "$wd_limit" TERM "healthy --init eager --pg-timeout-s 30" 3:NCCL_NET=IB
scenario four-hosts runtime-connect-0-rank3 "$wd_limit" TERM "healthy --init eager --pg-timeout-s 30" $rc0_rank3
scenario four-hosts socket-family-inet6-rank3 "$wd_limit" TERM "healthy --init eager --pg-timeout-s 30" \
    3:NCCL_SOCKET_FAMILY=AF_INET6
scenario four-hosts no-gpu-rank3 "$wd_limit" TERM "healthy --init eager --pg-timeout-s 30" 3:CUDA_VISIBLE_DEVICES=
# Rank 3's node has another NCCL than the others (another image): OTHER_NCCL names its libnccl.so.2, which
# rank 3 loads before torch's own (LD_PRELOAD).
if [[ -n ${OTHER_NCCL:-} ]]; then
    scenario four-hosts other-nccl-rank3 "$wd_limit" TERM "healthy --init eager --pg-timeout-s 30" \
        "3:LD_PRELOAD=$OTHER_NCCL"
fi
# A rank that dies without last words (SIGKILL: the OOM killer, a lost node), also as most runs print (WARN); a
# rank that starts after the others' process-group timeout (an image still being pulled on one node); settings
# that NCCL corrects or ignores (a topology file that is not there, more socket threads than it allows); and the
# first-collective hang with torch's flight recorder dumping on timeout.
scenario four-hosts rank-killed "$wd_limit" TERM "rank-fails --init eager --fail-how killed --pg-timeout-s 30"
scenario four-hosts rank-killed-debug-warn "$wd_limit" TERM \
    "rank-fails --init eager --fail-how killed --pg-timeout-s 30" NCCL_DEBUG=WARN
scenario four-hosts late-rank3 "$wd_limit" TERM "healthy --init eager --pg-timeout-s 30 --late-rank 3 --late-s 45"
scenario four-hosts topo-file-missing "$limit" TERM "healthy --init eager" NCCL_TOPO_FILE=/etc/nccl/topo-absent.xml
scenario four-hosts socket-threads-excess "$limit" TERM "healthy --init eager" NCCL_SOCKET_NTHREADS=32 \
    NCCL_NSOCKS_PERTHREAD=8
fr_dir=$work/flight-recorder
mkdir -p "$fr_dir"
scenario four-hosts first-collective-hang-flight-recorder "$wd_limit" TERM \
    "first-collective-hang --init eager --pg-timeout-s 30" TORCH_NCCL_DUMP_ON_TIMEOUT=1 \
    TORCH_NCCL_TRACE_BUFFER_SIZE=2000 "TORCH_FR_DUMP_TEMP_FILE=$fr_dir/rank_"
w1=("${wave_pids[@]}")
wave_pids=()
note "wave 1: $n_started scenarios started"
[[ ${#w1[@]} -gt 0 ]] && wait "${w1[@]}"

# --- wave 2: a rank fills the GPU until CUDA runs out of memory -----------------------------------
note "wave 2 starts"
scenario four-hosts rank-oom "$wd_limit" TERM "rank-fails --init eager --fail-how oom --pg-timeout-s 30"
# Its OOM comes 20 s later, after rank-oom's failing rank has exited and freed its memory.
scenario four-hosts rank-oom-stays "$wd_limit" TERM \
    "rank-fails --init eager --fail-how oom-stay --fail-delay-s 20 --pg-timeout-s 30"
# Rank 3 alone asks NCCL for 64 GiB buffers (NCCL_BUFFSIZE copied from a tuning guide for another system).
scenario four-hosts buffsize-huge-rank3 "$wd_limit" TERM "healthy --init eager --pg-timeout-s 30" \
    3:NCCL_BUFFSIZE=68719476736
[[ ${#wave_pids[@]} -gt 0 ]] && wait "${wave_pids[@]}"

# --- wave 3: another process (a stale engine) holds all but 1 GiB of the GPU when the ranks start ----------
holder_key=four-hosts-gpu-held-by-other-process
if [[ $holder_key =~ $only ]]; then
    note "wave 3 starts"
    "$py" -c 'import sys, time, torch
free, total = torch.cuda.mem_get_info()
held = torch.empty(free - (1 << 30), dtype=torch.uint8, device="cuda")
print(f"holder: holding {held.numel() >> 20} MiB of {total >> 20} MiB", flush=True)
time.sleep(900)' >"$work/holder.log" 2>&1 &
    holder=$!
    for _ in $(seq 1 600); do grep -q holding "$work/holder.log" && break; sleep 0.1; done
    note "$(cat "$work/holder.log")"
    wave_pids=()
    scenario four-hosts gpu-held-by-other-process "$wd_limit" TERM "healthy --init eager --pg-timeout-s 30"
    [[ ${#wave_pids[@]} -gt 0 ]] && wait "${wave_pids[@]}"
    kill "$holder" 2>/dev/null
    wait "$holder" 2>/dev/null
fi
note "all ranks ended"

legend="exit codes: 0 ok; 1 Python exception; 124 ended by timeout's SIGTERM; 134 SIGABRT (torch took the process down); 137 SIGKILL (timeout -s KILL, or -k 10 s after SIGTERM)"
for dir in "$out"/*/; do
    key=$(basename "$dir")
    for rank in 0 1 2 3; do
        cat "$work/$key.rank$rank" 2>/dev/null || echo "rank${rank}_exit=unknown"
    done >>"$dir/meta.txt"
    echo "$legend" >>"$dir/meta.txt"
    printf '%-58s %s\n' "$key" "$(grep -h '_exit=' "$dir/meta.txt" | sed 's/_exit=/=/' | tr '\n' ' ')" |
        tee -a "$out/progress.txt"
done
