#!/usr/bin/env bash
# Capture the kernel's OOM killer ending a Python process that outgrew its memory cgroup, as a container at its
# --memory limit, or a host out of memory, does to a rank, a Ray worker or vLLM's engine.
#
# Usage: tools/capture/kernel/oom_killer.sh [OUTDIR]        (root; cgroup v1 or v2 with the memory controller)
# Writes OUTDIR/oom-killer/ [<repo>/tests/fixtures/kernel/oom-killer/]:
#   run.log    what the process and its shell printed (stdout and stderr);
#   dmesg.log  the kernel's report of it, from its "invoked oom-killer" line to its "Killed process" and
#              "oom_reaper" lines, as `dmesg` prints them (the lines of this capture's process only);
#   meta.txt   the command, the limit, the kernel and the exit status.
# The cgroup (64 MiB) holds only the capture's process, and is removed at the end.
set -u
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../../.." && pwd)"
OUT="${1:-$REPO/tests/fixtures/kernel}/oom-killer"
LIMIT=$((64 * 1024 * 1024))
NAME="sparktui-oom-$$"
if [ -d /sys/fs/cgroup/memory ]; then                       # cgroup v1
  CG=/sys/fs/cgroup/memory/$NAME; mkdir "$CG" && echo "$LIMIT" >"$CG/memory.limit_in_bytes" || exit 1
else                                                         # cgroup v2
  CG=/sys/fs/cgroup/$NAME; mkdir "$CG" && echo "$LIMIT" >"$CG/memory.max" || exit 1
fi
trap 'rmdir "$CG" 2>/dev/null' EXIT
mkdir -p "$OUT"
# The shell joins the cgroup, then runs the program: its report names python3 and this shell reports the kill.
PROGRAM='import time
chunks = []
print("allocating 16 MiB at a time", flush=True)
for i in range(256):
    chunks.append(bytearray(16 << 20))
    print(f"held {16 * (i + 1)} MiB", flush=True)
    time.sleep(0.01)'
bash -c 'echo $$ >"$1/cgroup.procs" && exec python3 -c "$2"' sh "$CG" "$PROGRAM" >"$OUT/run.log" 2>&1 &
pid=$!
wait "$pid"
rc=$?
sleep 1
# The report of this pid: from the last "invoked oom-killer" before its "Killed process <pid>" line, to that
# line and the reaper's line for it.
dmesg | awk -v pid="$pid" '
  { line[NR] = $0 }
  /invoked oom-killer/ { start = NR }
  index($0, "Killed process " pid " (") { from = start; to = NR }
  to && index($0, "oom_reaper: reaped process " pid " (") { to = NR }
  END { if (to) for (i = from; i <= to; i++) print line[i] }' >"$OUT/dmesg.log"
{
  echo "command: python3 -c <allocate 16 MiB at a time, 256 times> in a memory cgroup of 64 MiB"
  echo "cgroup: $([ -d /sys/fs/cgroup/memory ] && echo v1 || echo v2)"
  echo "kernel: $(uname -r)"
  echo "exit status: $rc"
} >"$OUT/meta.txt"
echo "oom-killer: exit $rc, $(wc -l <"$OUT/run.log") lines printed, $(wc -l <"$OUT/dmesg.log") kernel lines"
