#!/usr/bin/env bash
# Capture a healthy Ray session's logs in which the job kills an actor on purpose (actor_killed.py), into
# tests/fixtures/ray/actor-killed-healthy/: the GCS's, the raylet's and the driver's, as Ray wrote them.
#
# Usage: tools/capture/ray/actor_killed.sh        (PY: a Python with ray installed [python3])
# Runs in a network namespace with only loopback (unshare --net), as capture.sh does, for the same reasons.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../../.." && pwd)
PY=${PY:-python3}
OUT=$REPO/tests/fixtures/ray/actor-killed-healthy
if [ -z "${RAY_CAPTURE_IN_NETNS:-}" ]; then
  exec unshare --net env RAY_CAPTURE_IN_NETNS=1 bash "${BASH_SOURCE[0]}" "$@"
fi
ip link set lo up
export RAY_USAGE_STATS_ENABLED=0 HOME
unset RAY_ADDRESS
TMP=$(mktemp -d /tmp/ray-actor-killed.XXXXXX)
HOME=$TMP/home
"$PY" "$HERE/actor_killed.py" "$TMP/ray" > "$TMP/driver.log" 2>&1
rm -rf "$OUT" && mkdir -p "$OUT"
logs=$TMP/ray/session_latest/logs
cp "$logs/gcs_server.out" "$logs/raylet.out" "$OUT/"
cp "$TMP/driver.log" "$OUT/driver.log"
echo "ray $("$PY" -c 'import ray; print(ray.__version__)')" > "$OUT/versions.txt"
rm -rf "$TMP"
echo "captured into $OUT: $(ls "$OUT" | tr '\n' ' ')"
