#!/usr/bin/env bash
# The project's test command (README "Tests"; CI runs it through .ci/run).
# Installs what the tests need into the current Python, then runs lint, types and the test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install --quiet --disable-pip-version-check -e '.[dev]'
python3 -m ruff check sparktui tests bench tools
python3 -m ruff format --check sparktui tests bench tools
python3 -m mypy
python3 -m pytest -q "$@"
