# Shared by build.sh (llama.cpp's tools) and install-python.sh (llama-cpp-python): the pinned
# sdist, where it is cached, and the ggml instruction-set flags. Sourced, not run.

LCPP_PY_VERSION="0.3.36"
LCPP_PY_SDIST_SHA256="832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e"
# llama.cpp commit vendored by that sdist (read from the sdist at build time,
# recorded here for reference): 0c1e57098bba43ac29e6e3b677cdceebdd22334f

CACHE_ROOT="${KITE_CACHE:-$HOME/.cache/kite}"

log() { printf '[llamacpp-build] %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

# llamacpp_isa_flags native|avx2: sets ISA_FLAGS, the CMake options for ggml's CPU backend.
llamacpp_isa_flags() {
    case "$1" in
        native)
            ISA_FLAGS=(-DGGML_NATIVE=ON)
            if grep -qw amx_tile /proc/cpuinfo 2>/dev/null; then
                # ggml's AMX matmul dies with SIGILL at its first ldtilecfg on an AMX CPU here
                # (a KVM guest; a plain program that asks for the tile state and loads a tile
                # config runs), so every llama.cpp tool crashes with -march=native. On CPUs that
                # advertise AMX, "native" is each other extension ggml has an option for, as
                # /proc/cpuinfo lists them, with AMX off.
                ISA_FLAGS=(-DGGML_NATIVE=OFF -DGGML_CPU_ALL_VARIANTS=OFF -DGGML_BACKEND_DL=OFF
                           -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF)
                local pair on
                for pair in sse4_2:SSE42 avx:AVX avx2:AVX2 fma:FMA f16c:F16C bmi2:BMI2 \
                            avx512f:AVX512 avx512vbmi:AVX512_VBMI avx512_vnni:AVX512_VNNI \
                            avx512_bf16:AVX512_BF16 avx_vnni:AVX_VNNI; do
                    on=OFF
                    grep -qw "${pair%%:*}" /proc/cpuinfo && on=ON
                    ISA_FLAGS+=("-DGGML_${pair##*:}=$on")
                done
            fi
            ;;
        avx2)
            # ggml's own x86 "haswell" level (SSE4.2 AVX F16C AVX2 BMI2 FMA). Only ggml-cpu
            # gets these -m flags; the rest of llama.cpp builds for baseline x86-64.
            ISA_FLAGS=(-DGGML_NATIVE=OFF -DGGML_CPU_ALL_VARIANTS=OFF -DGGML_BACKEND_DL=OFF
                       -DGGML_SSE42=ON -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON
                       -DGGML_BMI2=ON
                       -DGGML_AVX_VNNI=OFF -DGGML_AVX512=OFF -DGGML_AVX512_VBMI=OFF
                       -DGGML_AVX512_VNNI=OFF -DGGML_AVX512_BF16=OFF
                       -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF)
            ;;
        *)
            die "KITE_LLAMACPP_ISA=$1 is not native or avx2"
            ;;
    esac
}

sha256_of() { sha256sum "$1" | awk '{print $1}'; }

# llamacpp_fetch_sdist: sets SDIST to the verified llama-cpp-python sdist, downloading it once
# (or copying KITE_LLAMACPP_SDIST, for offline builds).
llamacpp_fetch_sdist() {
    local name="llama_cpp_python-$LCPP_PY_VERSION.tar.gz"
    # In the native variant's directory, where it always was, shared by every variant.
    local dl_dir="$CACHE_ROOT/llama.cpp-$LCPP_PY_VERSION/download"
    SDIST="$dl_dir/$name"
    mkdir -p "$dl_dir"
    if [[ -n "${KITE_LLAMACPP_SDIST:-}" ]]; then
        log "using local sdist $KITE_LLAMACPP_SDIST"
        cp -f "$KITE_LLAMACPP_SDIST" "$SDIST.tmp.$$"
        mv -f "$SDIST.tmp.$$" "$SDIST"
    elif [[ -f "$SDIST" && "$(sha256_of "$SDIST")" == "$LCPP_PY_SDIST_SHA256" ]]; then
        log "sdist already downloaded: $SDIST"
    else
        log "downloading llama-cpp-python==$LCPP_PY_VERSION sdist from PyPI"
        # Into a private directory, then renamed: another variant's build may share dl_dir.
        local dl_tmp
        dl_tmp="$(mktemp -d "$dl_dir/.tmp.XXXXXX")"
        python3 -m pip download --quiet --no-deps --no-binary :all: \
            "llama-cpp-python==$LCPP_PY_VERSION" -d "$dl_tmp" >&2
        [[ -f "$dl_tmp/$name" ]] && mv -f "$dl_tmp/$name" "$SDIST"
        rm -rf "$dl_tmp"
    fi
    [[ -f "$SDIST" ]] || die "sdist not found after download: $SDIST"
    local got
    got="$(sha256_of "$SDIST")"
    [[ "$got" == "$LCPP_PY_SDIST_SHA256" ]] \
        || die "sha256 mismatch for $SDIST: got $got, want $LCPP_PY_SDIST_SHA256"
    log "sdist sha256 OK"
}
