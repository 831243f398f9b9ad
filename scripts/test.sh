#!/usr/bin/env bash
# All tests, set-up included: unit and reference tests (release and AddressSanitizer+UBSan
# builds), tokenizer and chat-template conformance, the HTTP server tests (Python, openai
# client), and bounded fuzz runs of the GGUF parser, the template engine, the HTTP request
# parser, the request-to-parameters layer and the grammar compilers; the Python package
# (tests/python); the benchmark harness's peers (tests/bench).
set -euo pipefail
cd "$(dirname "$0")/.."
fuzz_seconds="${KITE_FUZZ_SECONDS:-40}"
template_fuzz_seconds="${KITE_TEMPLATE_FUZZ_SECONDS:-30}"
server_fuzz_seconds="${KITE_SERVER_FUZZ_SECONDS:-15}"
grammar_fuzz_seconds="${KITE_GRAMMAR_FUZZ_SECONDS:-15}"

bash scripts/install-deps.sh
bash scripts/install-model.sh
# The slow tier's real files, checked briefly against llama.cpp: Qwen2.5-Coder-0.5B (Q4_K_M:
# K-quant kernels, the qwen2 architecture, its own chat template and tool calls) and Gemma 3
# 270M (gemma3: sliding window, GeGLU, q/k norms).
bash scripts/install-model.sh qwen2.5-coder-0.5b
bash scripts/install-model.sh gemma3-270m
# The encoder: nomic-embed-text-v1.5 (nomic-bert, WordPiece), against llama-embedding's
# vectors (tests/model/encoder_test.cpp) and behind /v1/embeddings (tests/server).
bash scripts/install-model.sh nomic-embed-v1.5
# A classic BERT encoder: all-MiniLM-L6-v2 (bert: learned positions, biases, GELU), 46 MB.
bash scripts/install-model.sh all-minilm-l6-v2

echo "[test] formatting (clang-format)"
git ls-files '*.cpp' '*.h' | xargs clang-format --dry-run --Werror

# nanobind in .venv before the release build configures, so that it also builds the Python
# module (cmake/python.cmake) from the same layer libraries; tests/python then drives it.
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/python -m pip install --quiet --disable-pip-version-check -r python/requirements.txt
bash scripts/build.sh release
bash scripts/make-variants.sh
echo "[test] unit tests (release)"
ctest --test-dir build --output-on-failure -j2
bash scripts/test-server.sh
bash scripts/test-python.sh
# bench/compare-llamacpp's peers and tools/ikllamacpp/build.sh, without an engine (seconds).
echo "[test] bench harness (tests/bench)"
timeout 120 .venv/bin/python -m pytest -q -p no:cacheprovider tests/bench
# Opt-in: Ray Serve (kite.ray) on a local cluster; downloading ray[serve] alone takes ~3 minutes.
if [ "${KITE_TEST_RAY:-}" = 1 ]; then
  bash scripts/test-ray.sh
fi

# One clang build with AddressSanitizer + UBSan holds the unit tests and the fuzz targets.
bash scripts/build.sh asan
echo "[test] unit tests (AddressSanitizer + UBSan)"
# Tests named *Slow run whole generations over the model: release build only.
ctest --test-dir build-asan --output-on-failure -j2 -E Slow

corpus=$(mktemp -d)
trap 'rm -rf "$corpus"' EXIT
# fuzz TARGET SEEDS SECONDS [libFuzzer flags]: a bounded run from the committed seeds.
fuzz() {
  echo "[test] fuzzing $1 for $3 s"
  rm -rf "${corpus:?}"/*
  cp fuzz/seeds/"$2"/* "$corpus"/
  build-asan/bin/"$1" -max_total_time="$3" -rss_limit_mb=2048 -timeout=10 "${@:4}" \
    -print_final_stats=1 "$corpus" 2>&1 | tail -n 15
}
fuzz gguf_fuzz gguf "$fuzz_seconds"
fuzz template_fuzz template "$template_fuzz_seconds" -max_len=8192
fuzz http_request_fuzz http "$server_fuzz_seconds"
fuzz completion_request_fuzz completion "$server_fuzz_seconds"
fuzz grammar_fuzz grammar "$grammar_fuzz_seconds" -max_len=4096
echo "[test] fuzz runs found no crash"
