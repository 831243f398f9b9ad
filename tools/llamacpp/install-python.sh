#!/usr/bin/env bash
# Install PyPI's llama-cpp-python (the pinned sdist build.sh uses) into a Python environment,
# compiled here with the same ggml instruction-set flags as build.sh's native tools (AMX off on
# CPUs where ggml's AMX path dies). PyPI has no binary wheel for this platform, so pip compiles
# llama.cpp: about 10 minutes on 2 cores, once.
#
#   tools/llamacpp/install-python.sh [PYTHON]     (default: .venv/bin/python)
#
# A no-op when that environment already imports llama_cpp at the pinned version.
set -euo pipefail

. "$(dirname "${BASH_SOURCE[0]}")/common.sh"

PYTHON="${1:-.venv/bin/python}"
[[ -x "$PYTHON" ]] || die "no Python interpreter at $PYTHON"

have="$("$PYTHON" -c 'import llama_cpp; print(llama_cpp.__version__)' 2>/dev/null || true)"
if [[ "$have" == "$LCPP_PY_VERSION" ]]; then
    log "llama-cpp-python $have already installed for $PYTHON"
    exit 0
fi

llamacpp_fetch_sdist
llamacpp_isa_flags native
log "pip is compiling llama-cpp-python $LCPP_PY_VERSION (${ISA_FLAGS[*]}); this takes a while"
CMAKE_ARGS="${ISA_FLAGS[*]} -DGGML_OPENMP=ON -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF" \
    CMAKE_BUILD_PARALLEL_LEVEL="${KITE_LLAMACPP_JOBS:-2}" \
    "$PYTHON" -m pip install --quiet "$SDIST" >&2
"$PYTHON" -c 'import llama_cpp; print("llama-cpp-python", llama_cpp.__version__)' >&2
