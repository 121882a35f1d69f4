#!/usr/bin/env bash
# The project's test command (README "Tests"; CI runs it through .ci/run).
# Installs what the tests need into the current Python, then runs lint, types and the test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
# The terminal test drives the real app under tmux.
if ! command -v tmux >/dev/null 2>&1; then
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    apt-get update -qq >/dev/null && apt-get install -y -qq tmux >/dev/null
  else
    echo "tools/test.sh: tmux is needed for tests/tui/test_terminal.py; install it first" >&2
    exit 2
  fi
fi
python3 -m pip install --quiet --disable-pip-version-check -e '.[dev]'
python3 -m ruff check sparktui tests bench tools
python3 -m ruff format --check sparktui tests bench tools
python3 -m mypy
python3 -m pytest -q "$@"
