#!/usr/bin/env bash
# The Ray Serve tier, opt-in (scripts/test.sh does not run it): installs ray[serve] into .venv
# (python/requirements-ray.txt; downloading it takes about 3 minutes without a pip cache) and
# runs tests/python/test_ray.py: `python -m kite.ray` with two one-thread replicas on a local
# Ray cluster, driven by the openai client (about a minute). tests/python/test_routing.py,
# the router without Ray, runs in scripts/test-python.sh. Needs build/bin/kite and the release
# build's Python module (build/python), as scripts/test-python.sh does.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/python -m pip install --quiet --disable-pip-version-check \
  -r python/requirements.txt -r tests/server/requirements.txt -r python/requirements-ray.txt
echo "[test] kite.ray on a local Ray cluster (2 replicas, openai client)"
KITE_TEST_RAY=1 PYTHONPATH="$PWD/build/python:$PWD/python" timeout 600 .venv/bin/python -m pytest -q \
  -p no:cacheprovider --durations=8 tests/python/test_ray.py
