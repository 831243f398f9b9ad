#!/usr/bin/env bash
# Build a pinned llama.cpp as a reference tool for Kite (correctness and
# performance comparisons). The source comes from the sdist of PyPI's
# llama-cpp-python, which vendors a specific llama.cpp commit.
#
# Result is cached outside the repository in
#   ${KITE_CACHE:-$HOME/.cache/kite}/llama.cpp-<version>/bin        (native)
#   ${KITE_CACHE:-$HOME/.cache/kite}/llama.cpp-<version>-avx2/bin   (avx2)
# and the script is a no-op (apart from printing that path) when the
# binaries are already there. Both variants share the downloaded sdist.
#
# Progress goes to stderr; stdout carries only the bin directory, as the
# last line, so callers can do:
#   BIN=$(tools/llamacpp/build.sh | tail -1)
#
# Environment:
#   KITE_CACHE            cache root (default: $HOME/.cache/kite)
#   KITE_LLAMACPP_SDIST   use this local llama_cpp_python-<ver>.tar.gz instead
#                         of downloading it (checksum is still verified)
#   KITE_LLAMACPP_JOBS    parallel build jobs (default: 2)
#   KITE_LLAMACPP_FORCE=1 rebuild even if the binaries are cached
#   KITE_LLAMACPP_ISA     instruction sets ggml's CPU backend is compiled for:
#                           native (default)  GGML_NATIVE=ON, tuned to this CPU
#                           avx2              AVX2, FMA, F16C (and SSE4.2, BMI2) only,
#                                             every AVX-512, AVX-VNNI and AMX option off:
#                                             the code an AVX2-only CPU (Haswell, Zen 1-3)
#                                             runs, to compare with Kite at KITE_ISA=avx2
#                                             on a machine that has AVX-512; builds
#                                             only llama-bench and llama-batched-bench
set -euo pipefail

. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../peer_build.sh"

TARGETS=(
    llama-cli            # interactive chat CLI (server-based in this version)
    llama-completion     # classic non-interactive completion (old "main")
    llama-simple         # minimal greedy generation example
    llama-tokenize
    llama-perplexity
    llama-quantize
    llama-bench
    llama-batched-bench
    llama-server
    llama-debug          # dumps final logits (--save-logits) / tensors (--verbose)
    llama-embedding      # reference embeddings (tools/make-embedding-fixtures.sh)
)

ISA="${KITE_LLAMACPP_ISA:-native}"
llamacpp_isa_flags "$ISA"
PREFIX="$CACHE_ROOT/llama.cpp-$LCPP_PY_VERSION"
if [[ "$ISA" == avx2 ]]; then
    PREFIX="$CACHE_ROOT/llama.cpp-$LCPP_PY_VERSION-avx2"
    # Only for speed comparisons: the two benchmark tools (138 of the 238 build steps).
    TARGETS=(llama-bench llama-batched-bench)
fi
BIN_DIR="$PREFIX/bin"
JOBS="${KITE_LLAMACPP_JOBS:-2}"
FORCE="${KITE_LLAMACPP_FORCE:-0}"

# --- fast path: already built; else one build per cache directory at a time ---
reuse_or_lock "llama.cpp (llama-cpp-python $LCPP_PY_VERSION, $ISA)"

# --- build dependencies ---------------------------------------------------------
need_pkgs=()
command -v cmake   >/dev/null 2>&1 || need_pkgs+=(cmake)
command -v c++     >/dev/null 2>&1 || need_pkgs+=(g++)
command -v tar     >/dev/null 2>&1 || need_pkgs+=(tar)
command -v python3 >/dev/null 2>&1 || need_pkgs+=(python3)
if ! command -v ninja >/dev/null 2>&1 && ! command -v make >/dev/null 2>&1; then
    need_pkgs+=(make)
fi
if [[ -z "${KITE_LLAMACPP_SDIST:-}" ]] && command -v python3 >/dev/null 2>&1 \
        && ! python3 -m pip --version >/dev/null 2>&1; then
    need_pkgs+=(python3-pip)
fi
if ((${#need_pkgs[@]})); then
    log "installing missing build dependencies: ${need_pkgs[*]}"
    SUDO=""
    if [[ $(id -u) -ne 0 ]]; then
        command -v sudo >/dev/null 2>&1 || die "need root or sudo to install: ${need_pkgs[*]}"
        SUDO="sudo"
    fi
    $SUDO apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_pkgs[@]}" >&2
fi

# --- fetch and verify the sdist --------------------------------------------------
llamacpp_fetch_sdist

# --- extract vendor/llama.cpp -----------------------------------------------------
SRC_DIR="$PREFIX/src"
if [[ ! -f "$SRC_DIR/CMakeLists.txt" || ! -f "$SRC_DIR/.kite-commit" ]]; then
    log "extracting vendor/llama.cpp"
    rm -rf "$SRC_DIR" "$PREFIX/src.tmp"
    mkdir -p "$PREFIX/src.tmp"
    top="llama_cpp_python-$LCPP_PY_VERSION"
    tar -xzf "$SDIST" -C "$PREFIX/src.tmp" \
        "$top/vendor/llama.cpp" "$top/.git/modules/vendor/llama.cpp/HEAD" 2>/dev/null \
        || tar -xzf "$SDIST" -C "$PREFIX/src.tmp" "$top/vendor/llama.cpp"
    commit="unknown"
    head_file="$PREFIX/src.tmp/$top/.git/modules/vendor/llama.cpp/HEAD"
    if [[ -f "$head_file" ]]; then
        commit="$(tr -d '[:space:]' <"$head_file")"
    fi
    mv "$PREFIX/src.tmp/$top/vendor/llama.cpp" "$SRC_DIR"
    rm -rf "$PREFIX/src.tmp"
    # The submodule's .git file points into the sdist's .git dir, which we do
    # not keep; remove it so llama.cpp's build-info does not query a broken repo.
    rm -f "$SRC_DIR/.git"
    echo "$commit" >"$SRC_DIR/.kite-commit"
fi
LCPP_COMMIT="$(cat "$SRC_DIR/.kite-commit")"
log "llama.cpp commit: $LCPP_COMMIT"

# --- configure ------------------------------------------------------------------
BUILD_DIR="$PREFIX/build"
LOG_FILE="$PREFIX/build.log"
: >"$LOG_FILE"

generator=()
if command -v ninja >/dev/null 2>&1; then
    generator=(-G Ninja)
fi

# A build dir configured for another source dir or generator cannot be reused.
gen_name="Unix Makefiles"
((${#generator[@]})) && gen_name="Ninja"
if [[ -f "$BUILD_DIR/CMakeCache.txt" ]] \
        && ! { grep -qxF "CMAKE_HOME_DIRECTORY:INTERNAL=$SRC_DIR" "$BUILD_DIR/CMakeCache.txt" \
               && grep -qxF "CMAKE_GENERATOR:INTERNAL=$gen_name" "$BUILD_DIR/CMakeCache.txt"; }; then
    log "removing stale build dir $BUILD_DIR"
    rm -rf "$BUILD_DIR"
fi

log "configuring (Release, CPU only, $ISA: ${ISA_FLAGS[*]}, static libs); log: $LOG_FILE"
cfg_start=$SECONDS
run_logged cmake -S "$SRC_DIR" -B "$BUILD_DIR" "${generator[@]}" \
    -DCMAKE_BUILD_TYPE=Release \
    -DBUILD_SHARED_LIBS=OFF \
    "${ISA_FLAGS[@]}" \
    -DGGML_CUDA=OFF -DGGML_VULKAN=OFF -DGGML_METAL=OFF -DGGML_HIP=OFF \
    -DGGML_SYCL=OFF -DGGML_OPENCL=OFF -DGGML_RPC=OFF \
    -DLLAMA_CURL=OFF \
    -DLLAMA_OPENSSL=OFF \
    -DLLAMA_BUILD_UI=OFF \
    -DLLAMA_USE_PREBUILT_UI=OFF \
    -DLLAMA_BUILD_TESTS=OFF \
    -DLLAMA_BUILD_COMMIT="${LCPP_COMMIT:0:7}"

# --- build ----------------------------------------------------------------------
log "building ${#TARGETS[@]} targets with -j$JOBS (this takes a while): ${TARGETS[*]}"
run_logged cmake --build "$BUILD_DIR" --config Release -j "$JOBS" --target "${TARGETS[@]}"
log "build finished in $((SECONDS - cfg_start))s"

# --- avx2: prove no AVX-512 instruction made it in --------------------------------
# A static build links ggml into every binary, so disassembling the binaries covers it.
# AVX-512 code shows as zmm registers, opmask registers (%k0-%k7), xmm/ymm16-31, or EVEX
# VNNI; AVX-VNNI as the {vex} vpdpbusd form; AMX as tile instructions. (The shared libc
# is not checked: its string functions pick their own SIMD level at run time, as they
# would on an AVX2-only CPU.) Checked on this build: none of these in any binary.
if [[ "$ISA" == avx2 ]]; then
    command -v objdump >/dev/null 2>&1 || die "objdump (binutils) is needed to check the avx2 build"
    avx512_re='%zmm|%k[0-7]\b|%[xy]mm(1[6-9]|2[0-9]|3[01])\b|vpdpbusd|vpdpwssd|vdpbf16ps|tdpb|ldtilecfg'
    for t in "${TARGETS[@]}"; do
        hits="$(objdump -d --no-show-raw-insn "$BUILD_DIR/bin/$t" | grep -cE "$avx512_re" || true)"
        [[ "$hits" == 0 ]] || die "$t has $hits instructions beyond AVX2 (objdump -d | grep -E '$avx512_re')"
    done
    log "checked: no AVX-512, AVX-VNNI or AMX instruction in the ${#TARGETS[@]} binaries"
fi

# --- install into bin/ ------------------------------------------------------------
rm -rf "$BIN_DIR.tmp"
mkdir -p "$BIN_DIR.tmp"
for t in "${TARGETS[@]}"; do
    [[ -x "$BUILD_DIR/bin/$t" ]] || die "missing built binary $BUILD_DIR/bin/$t"
    cp -f "$BUILD_DIR/bin/$t" "$BIN_DIR.tmp/$t"
done
{
    echo "llama-cpp-python $LCPP_PY_VERSION"
    echo "llama.cpp commit $LCPP_COMMIT"
    echo "sdist sha256 $LCPP_PY_SDIST_SHA256"
    echo "built $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -m) for $ISA: ${ISA_FLAGS[*]}"
} >"$BIN_DIR.tmp/.kite-build-complete"
rm -rf "$BIN_DIR"
mv "$BIN_DIR.tmp" "$BIN_DIR"

log "binaries are in $BIN_DIR"
echo "$BIN_DIR"
