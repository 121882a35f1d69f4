#!/usr/bin/env bash
# Capture real Ray logs into tests/fixtures/ray/<scenario>/.
#
# Usage: tools/capture/ray/capture.sh [scenario ...]     (default: all scenarios)
#
# Needs two virtualenvs (see README.md): RAY_NEW_VENV (default /work/venvs/ray-new)
# and RAY_OLD_VENV (default /work/venvs/ray-old); python-version-mismatch also needs RAY_PY312_VENV
# (default /work/venvs/ray-py312: the new Ray on another CPython minor version).
#
# Everything runs inside a private network namespace (`unshare --net`) that has only
# the loopback interface. This keeps all Ray traffic on 127.0.0.0/8. It is also needed
# for a second reason: Ray rewrites 127.0.0.1 / localhost in `--node-ip-address`,
# `--address` and `ray.init(address=...)` to "the IP reachable from outside" (found
# with a UDP connect to 8.8.8.8:53). With no route outside, that look-up fails and Ray
# falls back to the host name, which resolves to 127.0.0.1. A side effect is the C++
# warning `Failed to determine local IP via external connectivity to: 8.8.8.8:53 ...`
# at the top of several logs.
#
# The script is idempotent: each scenario directory is deleted and written anew, every
# node gets its own --temp-dir under $RAY_CAPTURE_TMP (default /tmp/ray-capture),
# and every Ray process of the capture (those whose command line names $RAY_CAPTURE_TMP) is
# stopped after each scenario and on exit. `ray stop` is not used: it stops every Ray process of
# the machine, in other namespaces too.
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../../.." && pwd)
OUT=${RAY_CAPTURE_OUT:-$REPO/tests/fixtures/ray}
NEW=${RAY_NEW_VENV:-/work/venvs/ray-new}
OLD=${RAY_OLD_VENV:-/work/venvs/ray-old}
PY312=${RAY_PY312_VENV:-/work/venvs/ray-py312}
TMP=${RAY_CAPTURE_TMP:-/tmp/ray-capture}
PORT=6379          # head GCS port
WRONG_PORT=6380    # nothing listens here
HEAD_IP=127.0.0.1
MAX_BYTES=1000000  # session logs above this are not copied

ALL_SCENARIOS=(head-start worker-join worker-version-mismatch worker-version-mismatch-reverse
  driver-version-mismatch worker-wrong-port gpu-placement-group-infeasible
  gpu-placement-group-pending gpu-placement-group-infeasible-old driver-local-instance
  head-port-taken raylet-port-taken driver-node-ip-unknown
  head-port-taken-old raylet-port-taken-old driver-node-ip-unknown-old start-flag-unknown
  worker-node-killed python-version-mismatch job-submit-wrong-address init-address-auto-no-cluster
  runtime-env-pip-offline worker-dashboard-port head-node-ip-not-local client-gcs-port head-dev-shm-small
  temp-dir-too-long object-store-too-large worker-resources-bad-json worker-address-unresolvable
  job-working-dir-missing task-gpu-infeasible head-stopped-under-driver custom-resources-healthy
  temp-dir-too-long-old job-working-dir-missing-old worker-auth-token-missing worker-auth-token-differs)

# Re-run inside a fresh network namespace with only loopback.
if [ -z "${RAY_CAPTURE_IN_NETNS:-}" ]; then
  if ! unshare --net true 2>/dev/null; then
    echo "capture.sh: 'unshare --net' is not permitted here (needs root/CAP_SYS_ADMIN)." >&2
    echo "capture.sh: refusing to run: Ray would resolve 127.0.0.1 to a non-loopback IP." >&2
    exit 1
  fi
  exec unshare --net env RAY_CAPTURE_IN_NETNS=1 bash "${BASH_SOURCE[0]}" "$@"
fi
ip link set lo up

export RAY_USAGE_STATS_ENABLED=0
unset RAY_ADDRESS
# Ray 2.60's ray.init() writes ~/.ray/auth_token; keep that inside $TMP (fresh per scenario).
export HOME="$TMP/home"

for v in "$NEW" "$OLD"; do
  [ -x "$v/bin/ray" ] || { echo "capture.sh: missing $v/bin/ray (see README.md)" >&2; exit 1; }
done
NEW_VER=$("$NEW/bin/python" -c 'import ray; print(ray.__version__)')
OLD_VER=$("$OLD/bin/python" -c 'import ray; print(ray.__version__)')

# The capture's own Ray processes: every one of them names a path under $TMP.
ray_procs() { pgrep -a -f -- "$TMP/" | grep -v -- "^$$ " || true; }

if [ -n "$(ray_procs)" ]; then
  echo "capture.sh: Ray processes of an earlier capture (under $TMP) are still running; stop them first:" >&2
  ray_procs >&2
  exit 1
fi

STARTED_PIDS=()

stop_all() {
  local pid
  for pid in "${STARTED_PIDS[@]}"; do
    kill "$pid" 2>/dev/null
  done
  STARTED_PIDS=()
  mkdir -p "$TMP"
  # A local instance started by ray.init() lives under $TMP too (RAY_TMPDIR).
  pkill -TERM -f -- "$TMP/"
  local i
  for i in $(seq 1 20); do
    [ -z "$(ray_procs)" ] && return 0
    [ "$i" -eq 10 ] && pkill -KILL -f -- "$TMP/"
    sleep 1
  done
  echo "capture.sh: warning: Ray processes still running after SIGTERM and SIGKILL:" >&2
  ray_procs >&2
}
trap stop_all EXIT

elapsed() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { print b - a }'; }
say() { echo "[capture $(date +%T)] $*" >&2; }

# new_scenario NAME: fresh output dir in $D, fresh temp root.
new_scenario() {
  D="$OUT/$1"
  rm -rf "$D"
  mkdir -p "$D"
  rm -rf "${TMP:?}"/*
  mkdir -p "$TMP" "$HOME"
  {
    echo "# scenario: $1"
    echo "# captured by tools/capture/ray/capture.sh; ray-new=$NEW_VER ray-old=$OLD_VER"
    echo "# each entry: log file, exit code, seconds, command"
  } >"$D/meta.txt"
  say "scenario $1"
}

# run_to FILE CMD...: run CMD, stdout+stderr to $D/FILE, record rc and time in meta.txt.
run_to() {
  local file=$1; shift
  local t0 rc
  t0=$(date +%s.%N)
  "$@" >"$D/$file" 2>&1 </dev/null
  rc=$?
  printf '%s\trc=%s\t%.1fs\t%s\n' "$file" "$rc" "$(elapsed "$t0")" "$*" >>"$D/meta.txt"
  say "  $file rc=$rc"
  return $rc
}

# run_tty_to FILE CMD...: like run_to, but under a pseudo-terminal (what a user sees).
run_tty_to() {
  local file=$1; shift
  local t0 rc q
  q=$(printf '%q ' "$@")
  t0=$(date +%s.%N)
  script -qefc "$q" /dev/null >"$D/$file" 2>&1 </dev/null
  rc=$?
  printf '%s\trc=%s\t%.1fs\t(pty) %s\n' "$file" "$rc" "$(elapsed "$t0")" "$*" >>"$D/meta.txt"
  say "  $file rc=$rc (pty)"
  return $rc
}

HEAD_GPUS=0
# head_cmd VENV [extra args]: print the head start command line (paths have no spaces).
head_cmd() {
  local v=$1; shift
  echo "$v/bin/ray" start --head --node-ip-address "$HEAD_IP" --port "$PORT" \
    --num-cpus 1 --num-gpus "$HEAD_GPUS" --object-store-memory 200000000 \
    --temp-dir "$TMP/head" --disable-usage-stats "$@"
}

start_head() { # FILE VENV [extra args]
  local file=$1; shift
  # shellcheck disable=SC2046
  run_to "$file" $(head_cmd "$@")
}

start_worker() { # FILE VENV NODE_IP TEMPNAME ADDRESS [timeout-seconds [extra ray start args]]
  local file=$1 v=$2 ip=$3 name=$4 addr=$5 tmo=${6:-120}
  shift $(($# < 6 ? $# : 6))
  run_to "$file" timeout -k 5 "$tmo" "$v/bin/ray" start --address "$addr" \
    --node-ip-address "$ip" --num-cpus 1 --num-gpus 0 --object-store-memory 200000000 \
    --dashboard-agent-listen-port 52366 \
    --temp-dir "$TMP/$name" --disable-usage-stats "$@"
}

# copy_session TEMPNAME DEST FILES...: copy whole session log files (non-empty, <=1 MB).
# Starts a driver in the background (its output in driver.log, dpid its pid, at most 300 s) and waits up to 120 s
# for it to print MARKER: driver_until MARKER CMD...
driver_until() {
  local marker=$1 i
  shift
  timeout -k 5 300 "$@" >"$D/driver.log" 2>&1 </dev/null &
  dpid=$!
  STARTED_PIDS+=("$dpid")
  for i in $(seq 1 120); do
    grep -q -- "$marker" "$D/driver.log" && break
    sleep 1
  done
}

copy_session() {
  local name=$1 dest=$2; shift 2
  local logs="$TMP/$name/session_latest/logs" f
  [ -d "$logs" ] || { echo "$dest/: no session logs under $TMP/$name" >>"$D/meta.txt"; return 0; }
  mkdir -p "$D/$dest"
  for f in "$@"; do
    [ -f "$logs/$f" ] || continue
    [ -s "$logs/$f" ] || continue
    if [ "$(stat -c %s "$logs/$f")" -gt "$MAX_BYTES" ]; then
      echo "$dest/$f: skipped, over $MAX_BYTES bytes" >>"$D/meta.txt"
      continue
    fi
    cp "$logs/$f" "$D/$dest/$f"
  done
  rmdir "$D/$dest" 2>/dev/null || true
}
SESSION_FILES=(raylet.out raylet.err gcs_server.out gcs_server.err monitor.log monitor.out
  monitor.err dashboard.log dashboard.err dashboard_agent.log log_monitor.log
  runtime_env_agent.log)

# wait_nodes VENV N SECONDS: wait until `ray status` lists N active nodes.
wait_nodes() {
  local v=$1 n=$2 secs=$3 i
  for i in $(seq 1 "$secs"); do
    local c
    c=$("$v/bin/ray" status --address "$HEAD_IP:$PORT" 2>/dev/null |
      awk '/^Active:/{a=1;next} /^(Pending|Idle):/{a=0} a && /^ [0-9]+ /{s+=$1} END{print s+0}')
    [ "$c" -ge "$n" ] && return 0
    sleep 2
  done
  return 1
}

scenario_head_start() {
  new_scenario head-start
  start_head head.log "$NEW"
  sleep 10   # let monitor / dashboard write their first lines
  run_to status.log "$NEW/bin/ray" status --address "$HEAD_IP:$PORT"
  copy_session head head-session "${SESSION_FILES[@]}"
  stop_all
  # The same head start, seen on an interactive terminal (pretty CLI style).
  rm -rf "${TMP:?}/head"
  # shellcheck disable=SC2046
  run_tty_to head-tty.log $(head_cmd "$NEW")
  stop_all
}

scenario_worker_join() {
  new_scenario worker-join
  start_head head.log "$NEW"
  start_worker worker.log "$NEW" 127.0.0.2 worker "$HEAD_IP:$PORT"
  wait_nodes "$NEW" 2 30 || say "  worker did not show up in ray status"
  run_to status.log "$NEW/bin/ray" status --address "$HEAD_IP:$PORT"
  copy_session worker worker-session raylet.out raylet.err dashboard_agent.log
  stop_all
}

# version_mismatch NAME HEAD_VENV WORKER_VENV
version_mismatch() {
  new_scenario "$1"
  start_head head.log "$2"
  start_worker worker.log "$3" 127.0.0.3 worker "$HEAD_IP:$PORT" 150
  sleep 5
  run_to status.log "$2/bin/ray" status --address "$HEAD_IP:$PORT"
  copy_session worker worker-session raylet.out raylet.err dashboard_agent.log
  # A driver of the worker's version against the same head (vLLM image vs cluster).
  run_to driver.log timeout -k 5 150 "$3/bin/python" -u "$HERE/init_driver.py" \
    --mode address --address "$HEAD_IP:$PORT"
  stop_all
}
scenario_worker_version_mismatch() { version_mismatch worker-version-mismatch "$NEW" "$OLD"; }
scenario_worker_version_mismatch_reverse() { version_mismatch worker-version-mismatch-reverse "$OLD" "$NEW"; }
# The same Ray release on another CPython minor version (3.12 against the 3.11 head).
scenario_python_version_mismatch() {
  [ -x "$PY312/bin/ray" ] || { echo "capture.sh: missing $PY312/bin/ray (see README.md)" >&2; return 1; }
  version_mismatch python-version-mismatch "$NEW" "$PY312"
}

# A 2.40 driver (ray.init(address=...)) against a 2.60 head, with no worker involved.
# (worker-version-mismatch also has such a driver.log; this one stands alone.)
scenario_driver_version_mismatch() {
  driver_against_head driver-version-mismatch "$OLD" "$HEAD_IP:$PORT"
}

# driver_against_head NAME VENV ADDRESS: a head of the new Ray, and a driver of VENV's Ray calling
# ray.init(address=ADDRESS).
driver_against_head() {
  new_scenario "$1"
  start_head head.log "$NEW"
  run_to driver.log timeout -k 5 150 "$2/bin/python" -u "$HERE/init_driver.py" --mode address --address "$3"
  stop_all
}

scenario_worker_wrong_port() {
  new_scenario worker-wrong-port
  start_head head.log "$NEW"
  # Default behaviour: ray start keeps retrying (about 20 x 40 s); cut at 90 s.
  start_worker worker.log "$NEW" 127.0.0.4 worker "$HEAD_IP:$WRONG_PORT" 90
  copy_session worker worker-session raylet.out raylet.err
  stop_all
  # Ray's own bound: RAY_gcs_server_port_wait_time_s=2 makes ray start give up by itself.
  rm -rf "${TMP:?}/worker"
  run_to worker-gcs-wait-2s.log env RAY_gcs_server_port_wait_time_s=2 timeout -k 5 150 \
    "$NEW/bin/ray" start --address "$HEAD_IP:$WRONG_PORT" \
    --node-ip-address 127.0.0.4 --num-cpus 1 --num-gpus 0 --object-store-memory 200000000 \
    --dashboard-agent-listen-port 52366 --temp-dir "$TMP/worker" --disable-usage-stats
  stop_all
  # The same with the older Ray, for the older message texts.
  start_worker "worker-ray$OLD_VER.log" "$OLD" 127.0.0.4 worker "$HEAD_IP:$WRONG_PORT" 90
  stop_all
}

# placement_group NAME VENV HEAD_GPUS WITH_WORKER(0/1)
placement_group() {
  local name=$1 v=$2 gpus=$3 with_worker=$4
  new_scenario "$name"
  HEAD_GPUS=$gpus start_head head.log "$v"
  if [ "$with_worker" = 1 ]; then
    start_worker worker.log "$v" 127.0.0.2 worker "$HEAD_IP:$PORT"
    wait_nodes "$v" 2 30 || say "  worker did not show up in ray status"
  fi
  local t0 rc dpid
  t0=$(date +%s.%N)
  "$v/bin/python" -u "$HERE/pg_driver.py" --address "$HEAD_IP:$PORT" --bundles 2 --wait 65 \
    >"$D/driver.log" 2>&1 </dev/null &
  dpid=$!
  STARTED_PIDS+=("$dpid")
  sleep 45   # the placement group is pending now
  run_to status.log "$v/bin/ray" status --address "$HEAD_IP:$PORT"
  run_to status-verbose.log "$v/bin/ray" status -v --address "$HEAD_IP:$PORT"
  wait "$dpid"; rc=$?
  printf '%s\trc=%s\t%.1fs\t%s\n' driver.log "$rc" "$(elapsed "$t0")" \
    "$v/bin/python -u $HERE/pg_driver.py --address $HEAD_IP:$PORT --bundles 2 --wait 65" \
    >>"$D/meta.txt"
  say "  driver.log rc=$rc"
  copy_session head head-session monitor.log monitor.out monitor.err gcs_server.out raylet.out
  stop_all
}
scenario_gpu_placement_group_infeasible() { placement_group gpu-placement-group-infeasible "$NEW" 0 1; }
scenario_gpu_placement_group_infeasible_old() { placement_group "gpu-placement-group-infeasible-ray$OLD_VER" "$OLD" 0 1; }
scenario_gpu_placement_group_pending() { placement_group gpu-placement-group-pending "$NEW" 1 0; }

# The worker node's raylet is killed (SIGKILL, as the kernel's OOM killer or a lost host would) while an actor
# and a task that a custom resource pins to that node run; the capture lasts until the GCS marks the node dead
# and the driver has its errors.
scenario_worker_node_killed() {
  new_scenario worker-node-killed
  start_head head.log "$NEW"
  start_worker worker.log "$NEW" 127.0.0.2 worker "$HEAD_IP:$PORT" 120 --resources '{"pinned": 1}'
  wait_nodes "$NEW" 2 30 || say "  worker did not show up in ray status"
  local t0 rc dpid raylet
  local cmd=("$NEW/bin/python" -u "$HERE/pinned_driver.py" --address "$HEAD_IP:$PORT" --resource pinned)
  t0=$(date +%s.%N)
  driver_until 'actor call and task started' "${cmd[@]}"
  sleep 3   # the task's worker process has started by now
  raylet=$(pgrep -f -- "raylet.*$TMP/worker/" | head -n 1)
  if [ -n "$raylet" ]; then
    kill -KILL "$raylet"
    echo "worker raylet (pid $raylet) killed with SIGKILL after $(elapsed "$t0")s" >>"$D/meta.txt"
    say "  worker raylet $raylet killed"
  else
    say "  no worker raylet found"
  fi
  wait "$dpid"; rc=$?
  printf '%s\trc=%s\t%.1fs\t%s\n' driver.log "$rc" "$(elapsed "$t0")" "${cmd[*]}" >>"$D/meta.txt"
  say "  driver.log rc=$rc"
  run_to status.log "$NEW/bin/ray" status --address "$HEAD_IP:$PORT"
  copy_session head head-session "${SESSION_FILES[@]}"
  copy_session worker worker-session "${SESSION_FILES[@]}"
  stop_all
}

# `ray job submit` to a dashboard address where nothing listens (the head runs; 8266 instead of 8265).
scenario_job_submit_wrong_address() {
  new_scenario job-submit-wrong-address
  start_head head.log "$NEW"
  run_to job-submit.log timeout -k 5 150 "$NEW/bin/ray" job submit --address http://127.0.0.1:8266 \
    -- python -c 'print(1)'
  run_to "job-submit-ray$OLD_VER.log" timeout -k 5 150 "$OLD/bin/ray" job submit \
    --address http://127.0.0.1:8266 -- python -c 'print(1)'
  stop_all
}

# ray.init(address="auto") with no cluster on this node, from both Ray releases.
scenario_init_address_auto_no_cluster() {
  new_scenario init-address-auto-no-cluster
  mkdir -p "$TMP/driver"
  run_to driver.log env RAY_TMPDIR="$TMP/driver" "$NEW/bin/python" -u "$HERE/init_driver.py" --mode auto
  run_to "driver-ray$OLD_VER.log" env RAY_TMPDIR="$TMP/driver" \
    "$OLD/bin/python" -u "$HERE/init_driver.py" --mode auto
  stop_all
}

# A job whose runtime environment asks pip for a package, on a node with no network (the namespace has lo only):
# a local instance started by ray.init(), and the runtime env agent's logs of the failed install.
scenario_runtime_env_pip_offline() {
  new_scenario runtime-env-pip-offline
  mkdir -p "$TMP/driver"
  run_to driver.log env RAY_TMPDIR="$TMP/driver" timeout -k 5 300 \
    "$NEW/bin/python" -u "$HERE/init_driver.py" --mode local --pip emoji==2.14.1
  local logs="$TMP/driver/ray/session_latest/logs"
  # shellcheck disable=SC2046  # file names Ray chose (runtime_env_setup-<job>.log): no spaces
  copy_session driver/ray driver-session raylet.out runtime_env_agent.log \
    $(cd "$logs" 2>/dev/null && ls runtime_env_setup*.log 2>/dev/null)
  stop_all
}

scenario_driver_local_instance() {
  new_scenario driver-local-instance
  # No cluster is running. RAY_TMPDIR keeps the local instance's files under $TMP.
  mkdir -p "$TMP/driver"
  run_to driver-init-auto.log env RAY_TMPDIR="$TMP/driver" \
    "$NEW/bin/python" -u "$HERE/init_driver.py" --mode auto
  run_to driver-init-local.log env RAY_TMPDIR="$TMP/driver" \
    "$NEW/bin/python" -u "$HERE/init_driver.py" --mode local
  stop_all
}

# hold_port PORT: a listener of this script's own holds PORT (all addresses of the namespace) until stop_all.
hold_port() {
  "$NEW/bin/python" -c 'import socket, sys, time
s = socket.socket(); s.bind(("0.0.0.0", int(sys.argv[1]))); s.listen(); time.sleep(900)' "$1" &
  STARTED_PIDS+=($!)
  local i
  for i in $(seq 1 50); do ss -ltn "sport = :$1" | grep -q LISTEN && return 0; sleep 0.1; done
  echo "capture.sh: nothing listens on $1 after 5 s" >&2
  return 1
}

# Another program already holds a port the head needs: port_taken NAME VENV PORT SETTLE [ray start args].
# SETTLE seconds let the raylet and the monitor write what they write once it is refused.
port_taken() {
  local name=$1 venv=$2 port=$3 settle=$4
  shift 4
  new_scenario "$name"
  hold_port "$port"
  start_head head.log "$venv" "$@"
  sleep "$settle"
  copy_session head head-session "${SESSION_FILES[@]}"
  stop_all
}
# the GCS's own port, and the raylet's gRPC port (--node-manager-port)
scenario_head_port_taken() { port_taken head-port-taken "$NEW" "$PORT" 0; }
scenario_head_port_taken_old() { port_taken "head-port-taken-ray$OLD_VER" "$OLD" "$PORT" 0; }
scenario_raylet_port_taken() { port_taken raylet-port-taken "$NEW" 8076 10 --node-manager-port 8076; }
scenario_raylet_port_taken_old() {
  port_taken "raylet-port-taken-ray$OLD_VER" "$OLD" 8076 10 --node-manager-port 8076
}

# A driver that says it runs on an address no node of the cluster has. node_ip_unknown NAME VENV
node_ip_unknown() {
  new_scenario "$1"
  start_head head.log "$2"
  run_to driver.log timeout -k 5 150 "$2/bin/python" -u "$HERE/init_driver.py" \
    --mode address --address "$HEAD_IP:$PORT" --node-ip 127.0.0.9
  stop_all
}
scenario_driver_node_ip_unknown() { node_ip_unknown driver-node-ip-unknown "$NEW"; }
scenario_driver_node_ip_unknown_old() { node_ip_unknown "driver-node-ip-unknown-ray$OLD_VER" "$OLD"; }

# ray start with a flag Ray does not have (one of another release), and with a value its option refuses:
# Ray's CLI is click's, so it says so in click's words, and starts nothing.
scenario_start_flag_unknown() {
  new_scenario start-flag-unknown
  run_to start-flag.log "$NEW/bin/ray" start --head --port "$PORT" --temp-dir "$TMP/head" --enable-flux-capacitor
  run_to start-bad-value.log "$NEW/bin/ray" start --head --port not-a-port --temp-dir "$TMP/head"
  stop_all
}

# A worker pointed at the head's dashboard port (8265, HTTP) instead of its GCS port (6379): the address a user
# copies from the dashboard URL. Cut at 90 s like worker-wrong-port; the same with the older Ray.
scenario_worker_dashboard_port() {
  new_scenario worker-dashboard-port
  start_head head.log "$NEW"
  start_worker worker.log "$NEW" 127.0.0.4 worker "$HEAD_IP:8265" 90
  start_worker "worker-ray$OLD_VER.log" "$OLD" 127.0.0.4 worker-old "$HEAD_IP:8265" 90
  stop_all
}

# A head told a --node-ip-address that no interface of this host has (an address copied from another node). The
# namespace has only lo, so nothing can leave the host whatever Ray does with that address.
scenario_head_node_ip_not_local() {
  new_scenario head-node-ip-not-local
  run_to head.log timeout -k 5 150 "$NEW/bin/ray" start --head --node-ip-address 10.254.254.254 --port "$PORT" \
    --num-cpus 1 --num-gpus 0 --object-store-memory 200000000 --temp-dir "$TMP/head" --disable-usage-stats
  copy_session head head-session "${SESSION_FILES[@]}"
  stop_all
}

# A Ray Client driver (ray.init("ray://...")) given the head's GCS port (6379) instead of the client server's (10001).
scenario_client_gcs_port() {
  driver_against_head client-gcs-port "$NEW" "ray://$HEAD_IP:$PORT"
}

# The head started with a /dev/shm of 1 MiB (a tmpfs in a mount namespace of its own), as in a container started
# without --shm-size or --ipc=host: the object store falls back to the temp dir.
scenario_head_dev_shm_small() {
  new_scenario head-dev-shm-small
  # shellcheck disable=SC2016,SC2046
  run_to head.log unshare -m sh -c 'mount -t tmpfs -o size=1m tmpfs /dev/shm && exec "$@"' sh $(head_cmd "$NEW")
  stop_all
}

# A head whose --temp-dir is so long that its sockets' paths (<temp-dir>/session_<time>_<pid>/sockets/...) no longer
# fit the 107 bytes of an AF_UNIX address.
# temp_dir_too_long NAME VENV
temp_dir_too_long() {
  new_scenario "$1"
  local long
  long="$TMP/head/$(printf 'cluster-scratch-%.0s' 1 2 3)"
  mkdir -p "$long"
  run_to head.log timeout -k 5 150 "$2/bin/ray" start --head --node-ip-address "$HEAD_IP" --port "$PORT" \
    --num-cpus 1 --num-gpus 0 --object-store-memory 200000000 --temp-dir "$long" --disable-usage-stats
  stop_all
}
scenario_temp_dir_too_long() { temp_dir_too_long temp-dir-too-long "$NEW"; }
scenario_temp_dir_too_long_old() { temp_dir_too_long "temp-dir-too-long-ray$OLD_VER" "$OLD"; }

# A head asked for an object store of 100 GB on a host with far less memory (a value copied from a bigger node).
scenario_object_store_too_large() {
  new_scenario object-store-too-large
  run_to head.log timeout -k 5 150 "$NEW/bin/ray" start --head --node-ip-address "$HEAD_IP" --port "$PORT" \
    --num-cpus 1 --num-gpus 0 --object-store-memory 100000000000 --temp-dir "$TMP/head" --disable-usage-stats
  stop_all
}

# A worker whose --resources lost its inner quotes to the shell ({pinned: 1}, not JSON).
scenario_worker_resources_bad_json() {
  new_scenario worker-resources-bad-json
  start_head head.log "$NEW"
  start_worker worker.log "$NEW" 127.0.0.2 worker "$HEAD_IP:$PORT" 90 --resources '{pinned: 1}'
  stop_all
}

# A worker given the head by a host name that does not resolve (only /etc/hosts answers in the namespace).
scenario_worker_address_unresolvable() {
  new_scenario worker-address-unresolvable
  start_head head.log "$NEW"
  start_worker worker.log "$NEW" 127.0.0.2 worker ray-head.invalid:"$PORT" 90
  stop_all
}

# `ray job submit` with a --working-dir that does not exist on the submitting machine.
# job_working_dir_missing NAME VENV (the head and the CLI of VENV's Ray)
job_working_dir_missing() {
  new_scenario "$1"
  start_head head.log "$2"
  run_to job-submit.log timeout -k 5 150 "$2/bin/ray" job submit --address "http://$HEAD_IP:8265" \
    --working-dir /srv/missing/serve-scripts -- python serve.py
  stop_all
}
scenario_job_working_dir_missing() { job_working_dir_missing job-working-dir-missing "$NEW"; }
scenario_job_working_dir_missing_old() { job_working_dir_missing "job-working-dir-missing-ray$OLD_VER" "$OLD"; }

# A driver's task asks for one GPU on a cluster of two nodes without any (no placement group): it never runs.
scenario_task_gpu_infeasible() {
  new_scenario task-gpu-infeasible
  start_head head.log "$NEW"
  start_worker worker.log "$NEW" 127.0.0.2 worker "$HEAD_IP:$PORT"
  wait_nodes "$NEW" 2 30 || say "  worker did not show up in ray status"
  run_to driver.log timeout -k 5 150 "$NEW/bin/python" -u "$HERE/init_driver.py" --mode address \
    --address "$HEAD_IP:$PORT" --task-gpus 1 --get-timeout 60
  run_to status.log "$NEW/bin/ray" status --address "$HEAD_IP:$PORT"
  stop_all
}

# The head's Ray is stopped (SIGTERM to each of its processes, as `ray stop` on the head does) while a driver waits
# for a long task: what the driver then prints.
scenario_head_stopped_under_driver() {
  new_scenario head-stopped-under-driver
  start_head head.log "$NEW"
  local t0 rc dpid
  local cmd=("$NEW/bin/python" -u "$HERE/init_driver.py" --mode address --address "$HEAD_IP:$PORT"
    --task-seconds 400 --get-timeout 240)
  t0=$(date +%s.%N)
  driver_until 'task submitted' "${cmd[@]}"
  sleep 5
  pkill -TERM -f -- "$TMP/head/"
  echo "head's processes stopped with SIGTERM after $(elapsed "$t0")s" >>"$D/meta.txt"
  say "  head stopped"
  wait "$dpid"; rc=$?
  printf '%s\trc=%s\t%.1fs\t%s\n' driver.log "$rc" "$(elapsed "$t0")" "${cmd[*]}" >>"$D/meta.txt"
  say "  driver.log rc=$rc"
  stop_all
}

# Healthy: a worker with a custom resource, and a driver's task that asks for it (so it runs on that worker).
scenario_custom_resources_healthy() {
  new_scenario custom-resources-healthy
  start_head head.log "$NEW"
  start_worker worker.log "$NEW" 127.0.0.2 worker "$HEAD_IP:$PORT" 120 --resources '{"accel": 1}'
  wait_nodes "$NEW" 2 30 || say "  worker did not show up in ray status"
  run_to driver.log timeout -k 5 150 "$NEW/bin/python" -u "$HERE/init_driver.py" --mode address \
    --address "$HEAD_IP:$PORT" --task-resource accel --get-timeout 60
  run_to status.log "$NEW/bin/ray" status --address "$HEAD_IP:$PORT"
  stop_all
}

# Ray 2.60's token authentication: the head runs with RAY_AUTH_MODE=token and a token of its own (each node has a
# HOME of its own, where `ray get-auth-token --generate` writes ~/.ray/auth_token). auth_token NAME WORKER_MODE:
# "missing", the worker is started without RAY_AUTH_MODE (the variable set on the head only); "differs", the worker
# has token mode and a token it generated itself, not the head's. Cut at 90 s. The command that generates a token
# prints it, so its output is not kept.
auth_token() {
  new_scenario "$1"
  mkdir -p "$TMP/home-head" "$TMP/home-worker"
  HOME="$TMP/home-head" "$NEW/bin/ray" get-auth-token --generate >/dev/null 2>&1 || say "  no token for the head"
  HOME="$TMP/home-head" RAY_AUTH_MODE=token start_head head.log "$NEW"
  if [ "$2" = differs ]; then
    HOME="$TMP/home-worker" "$NEW/bin/ray" get-auth-token --generate >/dev/null 2>&1 || say "  no token for the worker"
    HOME="$TMP/home-worker" RAY_AUTH_MODE=token start_worker worker.log "$NEW" 127.0.0.2 worker "$HEAD_IP:$PORT" 90
  else
    HOME="$TMP/home-worker" start_worker worker.log "$NEW" 127.0.0.2 worker "$HEAD_IP:$PORT" 90
  fi
  stop_all
}
scenario_worker_auth_token_missing() { auth_token worker-auth-token-missing missing; }
scenario_worker_auth_token_differs() { auth_token worker-auth-token-differs differs; }

scenarios=("$@")
[ ${#scenarios[@]} -eq 0 ] && scenarios=("${ALL_SCENARIOS[@]}")
mkdir -p "$OUT" "$TMP"
for s in "${scenarios[@]}"; do
  fn="scenario_${s//-/_}"
  if ! declare -F "$fn" >/dev/null; then
    echo "capture.sh: unknown scenario $s (known: ${ALL_SCENARIOS[*]})" >&2
    exit 2
  fi
  "$fn"
done
stop_all
trap - EXIT
rm -rf "${TMP:?}"
say "done: ${scenarios[*]}"
