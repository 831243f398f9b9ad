#!/usr/bin/env bash
# Regenerate tests/fixtures/dequant/: random blocks of every block type Kite reads and the
# values PyPI's gguf package dequantizes them to (tools/make-dequant-fixtures.py), the
# reference tests/quant/dequant_test.cpp compares Kite's rows with bit for bit.
#
# The gguf and numpy versions are pinned; they are installed into a virtual environment
# outside the repository, made once:
#   ${KITE_CACHE:-$HOME/.cache/kite}/venv-gguf-0.19.0
#
# Environment:
#   KITE_CACHE        cache root (default: $HOME/.cache/kite)
#   KITE_FIXTURE_OUT  output folder (default: tests/fixtures/dequant)
set -euo pipefail

GGUF_VERSION="0.19.0"
NUMPY_VERSION="2.4.6"

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="${KITE_FIXTURE_OUT:-$ROOT/tests/fixtures/dequant}"
VENV="${KITE_CACHE:-$HOME/.cache/kite}/venv-gguf-$GGUF_VERSION"

if [[ ! -x "$VENV/bin/python" ]] ||
    ! "$VENV/bin/python" -c "import gguf, numpy" >/dev/null 2>&1; then
    echo "creating $VENV (gguf==$GGUF_VERSION, numpy==$NUMPY_VERSION)" >&2
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install --quiet "gguf==$GGUF_VERSION" "numpy==$NUMPY_VERSION"
fi

"$VENV/bin/python" "$ROOT/tools/make-dequant-fixtures.py" "$OUT"
