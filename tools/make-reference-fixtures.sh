#!/usr/bin/env bash
# Regenerate tests/fixtures/reference/*.json: llama.cpp reference outputs
# (prompt tokens, first-step logits, greedy continuations, teacher-forced
# argmax and perplexity) that Kite's tests compare against.
#
# llama.cpp is used through PyPI's llama-cpp-python, pinned below, built from
# source (CPU only) into a virtual environment outside the repository:
#   ${KITE_CACHE:-$HOME/.cache/kite}/venv-llamacpp-<version>
# Installation is skipped when that environment already has the pinned version.
#
# Three models:
#   models/default.gguf                 the default model (SmolLM2-135M-Instruct)
#   models/variants/default-f32.gguf    made by `kite quantize ... F32`
#   models/variants/default-q8_0.gguf   made by `kite quantize ... Q8_0`
# The variants are regenerated on every run; their sha256 goes into the
# fixtures so tests can check that they regenerated the same files.
#
# The real llama-perplexity binary (built by tools/llamacpp/build.sh into
# ${KITE_CACHE:-$HOME/.cache/kite}/llama.cpp-<version>/bin) is run as well
# when it is there; its "Final estimate" is recorded next to the one computed
# in python.
#
# Environment:
#   KITE_CACHE          cache root (default: $HOME/.cache/kite)
#   KITE_BIN            kite binary for `kite quantize` (default: build/bin/kite)
#   KITE_LLAMACPP_BIN   directory holding llama-perplexity (default: the cache
#                       directory above; built there by tools/llamacpp/build.sh
#                       when that script exists and KITE_BUILD_LLAMACPP=1)
#   KITE_THREADS        threads for the llama-cpp-python runs (default: 1; the
#                       results do not depend on it, and ggml's spinning
#                       threads slow down badly on a shared, busy machine)
#   KITE_LP_THREADS     threads for llama-perplexity (default: 2)
#   KITE_PIP_JOBS       parallel compile jobs for the llama-cpp-python build
#                       (default: 2)
#   KITE_FIXTURE_DIR    output directory (default: tests/fixtures/reference)
#   KITE_GPL3           text for the teacher-forced run
#                       (default: /usr/share/common-licenses/GPL-3)
set -euo pipefail

LCPP_PY_VERSION="0.3.36"
# llama.cpp commit vendored by the llama-cpp-python 0.3.36 sdist.
LCPP_COMMIT="0c1e57098bba43ac29e6e3b677cdceebdd22334f"

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

CACHE_ROOT="${KITE_CACHE:-$HOME/.cache/kite}"
VENV="$CACHE_ROOT/venv-llamacpp-$LCPP_PY_VERSION"
PY="$VENV/bin/python"
KITE="${KITE_BIN:-build/bin/kite}"
THREADS="${KITE_THREADS:-1}"
LP_THREADS="${KITE_LP_THREADS:-2}"
OUT_DIR="${KITE_FIXTURE_DIR:-tests/fixtures/reference}"
GPL3="${KITE_GPL3:-/usr/share/common-licenses/GPL-3}"
DEFAULT_MODEL="models/default.gguf"
VARIANT_DIR="models/variants"

log() { printf '[reference-fixtures] %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

[[ -f "$DEFAULT_MODEL" ]] || die "model not found: $DEFAULT_MODEL (run the set-up script first)"
[[ -f "$GPL3" ]] || die "text not found: $GPL3 (Debian's base-files package ships it)"

# --- llama-cpp-python -----------------------------------------------------------
have_llama_cpp() {
    [[ -x "$PY" ]] && "$PY" - "$LCPP_PY_VERSION" <<'PY' >/dev/null 2>&1
import sys
import numpy  # noqa: F401
import llama_cpp
sys.exit(0 if llama_cpp.__version__ == sys.argv[1] else 1)
PY
}

if have_llama_cpp; then
    log "llama-cpp-python $LCPP_PY_VERSION already installed in $VENV"
else
    mkdir -p "$CACHE_ROOT"
    exec 8>"$CACHE_ROOT/.venv-llamacpp-$LCPP_PY_VERSION.lock"
    command -v flock >/dev/null 2>&1 && flock 8
    if ! have_llama_cpp; then
        command -v cmake >/dev/null 2>&1 || die "cmake is needed to build llama-cpp-python"
        command -v c++ >/dev/null 2>&1 || die "a C++ compiler is needed to build llama-cpp-python"
        log "creating $VENV"
        python3 -m venv "$VENV"
        "$PY" -m pip install --quiet --upgrade pip
        "$PY" -m pip install --quiet numpy
        log "building llama-cpp-python $LCPP_PY_VERSION from source (CPU only; takes 10+ minutes)"
        # LLAVA_BUILD=OFF skips the multimodal library, which is not used here.
        CMAKE_ARGS="-DGGML_NATIVE=ON -DGGML_OPENMP=OFF -DGGML_BLAS=OFF -DGGML_CUDA=OFF -DLLAVA_BUILD=OFF" \
        CMAKE_BUILD_PARALLEL_LEVEL="${KITE_PIP_JOBS:-2}" \
            "$PY" -m pip install --no-binary llama-cpp-python \
                "llama-cpp-python==$LCPP_PY_VERSION" >&2
        have_llama_cpp || die "llama-cpp-python $LCPP_PY_VERSION did not install into $VENV"
    fi
fi

# --- llama-perplexity (optional) ------------------------------------------------
LP_DIR="${KITE_LLAMACPP_BIN:-$CACHE_ROOT/llama.cpp-$LCPP_PY_VERSION/bin}"
if [[ ! -x "$LP_DIR/llama-perplexity" && -z "${KITE_LLAMACPP_BIN:-}" \
        && "${KITE_BUILD_LLAMACPP:-0}" == "1" && -x tools/llamacpp/build.sh ]]; then
    LP_DIR="$(tools/llamacpp/build.sh | tail -1)"
fi
LP_ARGS=()
if [[ -x "$LP_DIR/llama-perplexity" ]]; then
    LP_ARGS=(--llama-perplexity "$LP_DIR/llama-perplexity")
    log "using $LP_DIR/llama-perplexity"
else
    log "WARNING: llama-perplexity not found in $LP_DIR; its number will be null in the fixtures"
    log "         (build it with tools/llamacpp/build.sh, or set KITE_BUILD_LLAMACPP=1)"
fi

# --- model variants -------------------------------------------------------------
"$KITE" quantize --help >/dev/null 2>&1 \
    || die "'$KITE quantize' is not available (build kite, or set KITE_BIN)"
mkdir -p "$VARIANT_DIR"
sha256_of() { sha256sum "$1" | awk '{print $1}'; }
DEFAULT_SHA="$(sha256_of "$DEFAULT_MODEL")"

# name  type
VARIANTS=("f32 F32" "q8_0 Q8_0")
for v in "${VARIANTS[@]}"; do
    read -r name type <<<"$v"
    out="$VARIANT_DIR/default-$name.gguf"
    log "kite quantize $DEFAULT_MODEL $out $type"
    if ! qlog="$("$KITE" quantize "$DEFAULT_MODEL" "$out" "$type" 2>&1)"; then
        printf '%s\n' "$qlog" | tail -n 20 >&2
        die "kite quantize failed"
    fi
    printf '%s\n' "$qlog" | tail -n 1 >&2
done

# --- fixtures -------------------------------------------------------------------
mkdir -p "$OUT_DIR"
common=(--text "$GPL3" --threads "$THREADS" --lp-threads "$LP_THREADS" --llama-cpp-commit "$LCPP_COMMIT" "${LP_ARGS[@]}")

"$PY" tools/reference_fixtures.py "${common[@]}" \
    --model "$DEFAULT_MODEL" --model-name "$DEFAULT_MODEL" \
    --out "$OUT_DIR/default.json"

for v in "${VARIANTS[@]}"; do
    read -r name type <<<"$v"
    file="$VARIANT_DIR/default-$name.gguf"
    "$PY" tools/reference_fixtures.py "${common[@]}" \
        --model "$file" --model-name "$file" \
        --made-by "kite quantize $DEFAULT_MODEL $file $type" \
        --source-sha256 "$DEFAULT_SHA" \
        --out "$OUT_DIR/default-$name.json"
done

log "done: $(ls "$OUT_DIR"/*.json | tr '\n' ' ')"
