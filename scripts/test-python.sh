#!/usr/bin/env bash
# The Python package's tests: tests/python drives kite.LLM (python/kite over the _kite module
# of the release build, build/python) and compares it with build/bin/kite on the default
# model. Needs the release build made with nanobind in .venv (scripts/test.sh does both).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
.venv/bin/python -m pip install --quiet --disable-pip-version-check \
  -r python/requirements.txt -r tests/server/requirements.txt
if ! ls build/python/_kite*.so > /dev/null 2>&1; then
  echo "[test] build/python has no _kite module: configure the release build with nanobind in .venv" >&2
  exit 1
fi
echo "[test] Python package tests (kite.LLM)"
PYTHONPATH="$PWD/build/python:$PWD/python" timeout 300 .venv/bin/python -m pytest -q \
  -p no:cacheprovider --durations=5 tests/python
