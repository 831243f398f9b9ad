#!/usr/bin/env bash
# Build ik_llama.cpp (github.com/ikawrakow/ik_llama.cpp, a llama.cpp fork with its own CPU
# kernels) as a second speed reference for bench/compare-llamacpp: only llama-bench and
# llama-batched-bench, Release, CPU only, -march=native.
#
# There is no pinned download: the source is a checkout the user provides (CI machines
# reach only Debian and PyPI, and ik_llama.cpp is on neither), named by KITE_IK_LLAMA_SRC
# or the first argument. Its commit names the cache directory
#   ${KITE_CACHE:-$HOME/.cache/kite}/ik_llama.cpp-<commit>/bin
# and comes from, in this order: KITE_IK_LLAMA_COMMIT, `git rev-parse HEAD` when the source
# is a git checkout, or a .kite-commit file at its top (for an unpacked archive). The
# script is a no-op (apart from printing that path) when the binaries are already there.
# The source is copied into the cache before building, so the checkout stays untouched
# (llama.cpp's build writes common/build-info.cpp into its source tree).
#
# Progress goes to stderr; stdout carries only the bin directory, as the last line:
#   BIN=$(KITE_IK_LLAMA_SRC=~/src/ik_llama.cpp tools/ikllamacpp/build.sh | tail -1)
#
# Environment:
#   KITE_IK_LLAMA_SRC     the ik_llama.cpp source directory (or pass it as $1)
#   KITE_IK_LLAMA_COMMIT  its commit, when it is neither a git checkout nor has .kite-commit
#   KITE_CACHE            cache root (default: $HOME/.cache/kite)
#   KITE_IK_LLAMA_JOBS    parallel build jobs (default: 2)
#   KITE_IK_LLAMA_FORCE=1 rebuild even if the binaries are cached
set -euo pipefail

. "$(dirname "${BASH_SOURCE[0]}")/../peer_build.sh"

TARGETS=(llama-bench llama-batched-bench)

log() { printf '[ikllamacpp-build] %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

SRC="${1:-${KITE_IK_LLAMA_SRC:-}}"
[[ -n "$SRC" ]] || die "no ik_llama.cpp source: set KITE_IK_LLAMA_SRC (or pass the directory) to a checkout of https://github.com/ikawrakow/ik_llama.cpp"
[[ -f "$SRC/CMakeLists.txt" && -d "$SRC/ggml" && -f "$SRC/examples/llama-bench/llama-bench.cpp" ]] \
    || die "$SRC is not an ik_llama.cpp source tree (no CMakeLists.txt, ggml/ or examples/llama-bench/)"

source_commit() {
    if [[ -n "${KITE_IK_LLAMA_COMMIT:-}" ]]; then
        echo "$KITE_IK_LLAMA_COMMIT"
    elif git -C "$SRC" rev-parse --show-toplevel 2>/dev/null | grep -qxF "$(cd "$SRC" && pwd -P)"; then
        git -C "$SRC" rev-parse HEAD
    elif [[ -f "$SRC/.kite-commit" ]]; then
        tr -d '[:space:]' <"$SRC/.kite-commit"
    fi
}
COMMIT="$(source_commit)"
[[ "$COMMIT" =~ ^[0-9a-f]{7,40}$ ]] \
    || die "cannot tell the commit of $SRC (got '${COMMIT}'): make it a git checkout, add a .kite-commit file, or set KITE_IK_LLAMA_COMMIT"

CACHE_ROOT="${KITE_CACHE:-$HOME/.cache/kite}"
PREFIX="$CACHE_ROOT/ik_llama.cpp-$COMMIT"
BIN_DIR="$PREFIX/bin"
JOBS="${KITE_IK_LLAMA_JOBS:-2}"
FORCE="${KITE_IK_LLAMA_FORCE:-0}"
# Unlike llama.cpp's (see tools/llamacpp/build.sh), ik_llama.cpp's CPU backend has no AMX
# code, so -march=native runs on this project's AMX machines as it is.
ISA_FLAGS=(-DGGML_NATIVE=ON)

reuse_or_lock "ik_llama.cpp $COMMIT"

for tool in cmake c++ tar; do
    command -v "$tool" >/dev/null 2>&1 \
        || die "$tool is missing (scripts/install-deps.sh installs the build tools)"
done

# --- copy the source ----------------------------------------------------------------
# Once per commit: a build that was interrupted goes on from its objects.
SRC_DIR="$PREFIX/src"
BUILD_DIR="$PREFIX/build"
if [[ "$(cat "$SRC_DIR/.kite-commit" 2>/dev/null)" != "$COMMIT" ]]; then
    log "copying $SRC (without .git) to $SRC_DIR"
    rm -rf "$SRC_DIR" "$SRC_DIR.tmp" "$BUILD_DIR"
    mkdir -p "$SRC_DIR.tmp"
    tar -C "$SRC" --exclude=./.git -cf - . | tar -C "$SRC_DIR.tmp" -xf -
    echo "$COMMIT" >"$SRC_DIR.tmp/.kite-commit"
    mv "$SRC_DIR.tmp" "$SRC_DIR"
fi

# --- configure and build ------------------------------------------------------------
LOG_FILE="$PREFIX/build.log"
: >"$LOG_FILE"
generator=()
command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)

# A build dir configured with another generator cannot be reused.
gen_name="Unix Makefiles"
((${#generator[@]})) && gen_name="Ninja"
if [[ -f "$BUILD_DIR/CMakeCache.txt" ]] \
        && ! grep -qxF "CMAKE_GENERATOR:INTERNAL=$gen_name" "$BUILD_DIR/CMakeCache.txt"; then
    rm -rf "$BUILD_DIR"
fi
log "configuring (Release, CPU only, ${ISA_FLAGS[*]}, static libs); log: $LOG_FILE"
start=$SECONDS
run_logged cmake -S "$SRC_DIR" -B "$BUILD_DIR" "${generator[@]}" \
    -DCMAKE_BUILD_TYPE=Release \
    -DBUILD_SHARED_LIBS=OFF \
    "${ISA_FLAGS[@]}" \
    -DGGML_CUDA=OFF -DGGML_VULKAN=OFF -DGGML_METAL=OFF -DGGML_HIPBLAS=OFF \
    -DGGML_SYCL=OFF -DGGML_RPC=OFF \
    -DLLAMA_CURL=OFF \
    -DLLAMA_BUILD_TESTS=OFF \
    -DLLAMA_BUILD_SERVER=OFF
log "building ${TARGETS[*]} with -j$JOBS (this takes a while)"
run_logged cmake --build "$BUILD_DIR" --config Release -j "$JOBS" --target "${TARGETS[@]}"
log "build finished in $((SECONDS - start))s"

# --- install into bin/ ----------------------------------------------------------------
rm -rf "$BIN_DIR.tmp"
mkdir -p "$BIN_DIR.tmp"
for t in "${TARGETS[@]}"; do
    [[ -x "$BUILD_DIR/bin/$t" ]] || die "missing built binary $BUILD_DIR/bin/$t"
    cp -f "$BUILD_DIR/bin/$t" "$BIN_DIR.tmp/$t"
done
{
    echo "ik_llama.cpp commit $COMMIT"
    echo "built $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -m) for native: ${ISA_FLAGS[*]}"
} >"$BIN_DIR.tmp/.kite-build-complete"
rm -rf "$BIN_DIR"
mv "$BIN_DIR.tmp" "$BIN_DIR"

log "binaries are in $BIN_DIR"
echo "$BIN_DIR"
