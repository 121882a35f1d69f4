#!/usr/bin/env bash
# Capture a Ray session of one local instance whose job is one of this folder's scripts, into
# tests/fixtures/ray/<fixture>/: the driver's output and the session's logs the scenario needs, as Ray wrote them.
#
# Usage: tools/capture/ray/local_job.sh SCENARIO        (PY: a Python with ray installed [python3])
#   actor-killed   actor_killed.py, a healthy job that kills an actor on purpose: actor-killed-healthy/
#                  (gcs_server.out, raylet.out, driver.log)
#   oom-killed     oom_killed.py, a task that Ray's memory monitor kills: memory-monitor-killed-task/
#                  (raylet.out, driver.log)
# Runs in a network namespace with only loopback (unshare --net), as capture.sh does, for the same reasons.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../../.." && pwd)
PY=${PY:-python3}
SCENARIO=${1:-}
case "$SCENARIO" in
  actor-killed) job=actor_killed.py fixture=actor-killed-healthy logs=(gcs_server.out raylet.out) ;;
  oom-killed) job=oom_killed.py fixture=memory-monitor-killed-task logs=(raylet.out) ;;
  *) echo "usage: $0 actor-killed|oom-killed" >&2; exit 2 ;;
esac
OUT=$REPO/tests/fixtures/ray/$fixture
if [ -z "${RAY_CAPTURE_IN_NETNS:-}" ]; then
  exec unshare --net env RAY_CAPTURE_IN_NETNS=1 bash "${BASH_SOURCE[0]}" "$@"
fi
ip link set lo up
export RAY_USAGE_STATS_ENABLED=0 HOME
unset RAY_ADDRESS
TMP=$(mktemp -d "/tmp/ray-$SCENARIO.XXXXXX")
HOME=$TMP/home
if [ "$SCENARIO" = oom-killed ]; then
  # Ray's memory monitor (read by the raylet ray.init starts): a threshold 4 % of the memory above what is
  # used now, looked at every 100 ms. The job fails: that is the capture.
  used=$(awk '/^MemTotal:/ {t=$2} /^MemAvailable:/ {a=$2} END {printf "%.3f", (t - a) / t + 0.04}' /proc/meminfo)
  RAY_memory_usage_threshold=$used RAY_memory_monitor_refresh_ms=100 "$PY" "$HERE/$job" "$TMP/ray" > "$TMP/driver.log" 2>&1 || true
else
  "$PY" "$HERE/$job" "$TMP/ray" > "$TMP/driver.log" 2>&1
fi
rm -rf "$OUT" && mkdir -p "$OUT"
session=$TMP/ray/session_latest/logs
for log in "${logs[@]}"; do
  cp "$session/$log" "$OUT/"
done
cp "$TMP/driver.log" "$OUT/driver.log"
echo "ray $("$PY" -c 'import ray; print(ray.__version__)')" > "$OUT/versions.txt"
rm -rf "$TMP"
echo "captured into $OUT: $(ls "$OUT" | tr '\n' ' ')"
