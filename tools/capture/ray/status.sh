#!/usr/bin/env bash
# Capture real `ray status` output into tests/fixtures/commands/ray-status-<version>-<state>.txt:
# a head alone, then head + one worker, each declaring 1 logical GPU (--num-gpus 1 on CPU: Ray counts it
# as a resource, which is all `ray status` shows). Runs in a network namespace with only loopback, with
# the virtualenvs of README.md (RAY_NEW_VENV, RAY_OLD_VENV).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
OUT=$(cd "$HERE/../../.." && pwd)/tests/fixtures/commands
if [ -z "${RAY_STATUS_IN_NETNS:-}" ]; then
  exec env RAY_STATUS_IN_NETNS=1 unshare --net -- "$0" "$@"
fi
ip link set lo up
mkdir -p "$OUT"
for venv in "${RAY_NEW_VENV:-/work/venvs/ray-new}" "${RAY_OLD_VENV:-/work/venvs/ray-old}"; do
  ray=$venv/bin/ray
  version=$("$venv/bin/python" -c 'import ray; print(ray.__version__)')
  tmp=$(mktemp -d /tmp/ray-status.XXXXXX)
  common=(--num-cpus 1 --num-gpus 1 --object-store-memory 100000000 --disable-usage-stats)
  "$ray" start --head --node-ip-address 127.0.0.1 --port 6379 --temp-dir "$tmp/head" "${common[@]}" >/dev/null
  sleep 5
  "$ray" status --address 127.0.0.1:6379 > "$OUT/ray-status-$version-head-only.txt" 2>&1 || true
  RAY_TMPDIR=$tmp "$ray" start --address 127.0.0.1:6379 --node-ip-address 127.0.0.2 "${common[@]}" >/dev/null
  sleep 10
  "$ray" status --address 127.0.0.1:6379 > "$OUT/ray-status-$version-two-nodes.txt" 2>&1 || true
  "$ray" stop --force >/dev/null 2>&1 || true
  rm -rf "$tmp"
done
