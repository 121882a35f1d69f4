#!/usr/bin/env bash
# Capture a Ray session whose task Ray's memory monitor kills (oom_killed.py), into
# tests/fixtures/ray/memory-monitor-killed-task/: the raylet's and the driver's logs, as Ray wrote them.
#
# Usage: tools/capture/ray/oom_killed.sh        (PY: a Python with ray installed [python3])
# Runs in a network namespace with only loopback (unshare --net), as capture.sh does, for the same reasons.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../../.." && pwd)
PY=${PY:-python3}
OUT=$REPO/tests/fixtures/ray/memory-monitor-killed-task
if [ -z "${RAY_CAPTURE_IN_NETNS:-}" ]; then
  exec unshare --net env RAY_CAPTURE_IN_NETNS=1 bash "${BASH_SOURCE[0]}" "$@"
fi
ip link set lo up
export RAY_USAGE_STATS_ENABLED=0 HOME
unset RAY_ADDRESS
TMP=$(mktemp -d /tmp/ray-oom-killed.XXXXXX)
HOME=$TMP/home
# Ray's memory monitor (read by the raylet ray.init starts): a threshold 4 % of the memory above what is used
# now, looked at every 100 ms.
used=$(awk '/^MemTotal:/ {t=$2} /^MemAvailable:/ {a=$2} END {printf "%.3f", (t - a) / t + 0.04}' /proc/meminfo)
RAY_memory_usage_threshold=$used RAY_memory_monitor_refresh_ms=100 "$PY" "$HERE/oom_killed.py" "$TMP/ray" > "$TMP/driver.log" 2>&1 || true  # the job fails: that is the capture
rm -rf "$OUT" && mkdir -p "$OUT"
logs=$TMP/ray/session_latest/logs
cp "$logs/raylet.out" "$OUT/"
cp "$TMP/driver.log" "$OUT/driver.log"
echo "ray $("$PY" -c 'import ray; print(ray.__version__)')" > "$OUT/versions.txt"
rm -rf "$TMP"
echo "captured into $OUT: $(ls "$OUT" | tr '\n' ' ')"
