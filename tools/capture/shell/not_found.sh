#!/usr/bin/env bash
# Capture what the shells print when a launch line's program is not installed where it runs (an image or a
# node without vLLM, SGLang or torchrun): bash, sh (dash where sh is dash) and docker's own words.
#
# Usage: tools/capture/shell/not_found.sh [OUTDIR]    [<repo>/tests/fixtures/shell/command-not-found]
# Writes launch.log (each shell's stdout and stderr, as printed, one after another) and meta.txt. The shells
# run with PATH=/usr/bin:/bin and an empty HOME, where no engine is installed.
set -u
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../../.." && pwd)"
OUT="${1:-$REPO/tests/fixtures/shell/command-not-found}"
mkdir -p "$OUT"
home=$(mktemp -d)
trap 'rm -rf "$home"' EXIT
run() { env -i PATH=/usr/bin:/bin HOME="$home" "$@" >>"$OUT/launch.log" 2>&1; echo "$* -> exit $?" >>"$OUT/meta.txt"; }
: >"$OUT/launch.log"
echo "shells: bash $BASH_VERSION; sh -> $(readlink -f /bin/sh)" >"$OUT/meta.txt"
run bash -c 'vllm serve Qwen/Qwen2.5-7B-Instruct --tensor-parallel-size 2'
run sh -c 'python3 -m sglang.launch_server --model-path Qwen/Qwen2.5-7B-Instruct --tp 2 || torchrun --nproc-per-node 2 train.py'
echo "launch.log: $(wc -l <"$OUT/launch.log") lines"
