#!/usr/bin/env bash
# The HTTP server tests: tests/server/test_server.py drives a real `kite serve` (started and
# stopped by the tests, on 127.0.0.1 and a free port) with the official openai client;
# tests/server/test_chat_page.py drives its chat page in headless chromium (selenium).
# The pinned Python packages go into .venv (created on first use). Needs build/bin/kite.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
.venv/bin/python -m pip install --quiet --disable-pip-version-check -r tests/server/requirements.txt
echo "[test] server tests (kite serve + openai client)"
timeout 900 .venv/bin/python -m pytest -q -p no:cacheprovider --durations=8 tests/server
