#!/usr/bin/env bash
# Capture what the shells print when a program they started is killed with SIGKILL (the kernel's OOM killer, a
# launcher's or a user's kill -9): bash names the signal after the pid and the command, sh (dash where sh is
# dash) prints the bare word. The program is a Python process that sends itself SIGKILL.
#
# Usage: tools/capture/shell/killed.sh [OUTDIR]    [<repo>/tests/fixtures/shell/killed]
# Writes launch.log (each shell's stdout and stderr, as printed, one after another) and meta.txt.
set -u
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../../.." && pwd)"
OUT="${1:-$REPO/tests/fixtures/shell/killed}"
mkdir -p "$OUT"
job='python3 -c "import os, signal; print(\"serving\", flush=True); os.kill(os.getpid(), signal.SIGKILL)"'
run() { env -i PATH=/usr/bin:/bin "$@" >>"$OUT/launch.log" 2>&1; echo "$* -> exit $?" >>"$OUT/meta.txt"; }
: >"$OUT/launch.log"
echo "shells: bash $BASH_VERSION; sh -> $(readlink -f /bin/sh)" >"$OUT/meta.txt"
# (a command after the job, so that neither shell replaces itself with the job and the shell itself waits)
run bash -c "$job; echo after"
run sh -c "$job; echo after"
echo "launch.log: $(wc -l <"$OUT/launch.log") lines"
