#!/usr/bin/env bash
# All tests, set-up included: unit and reference tests (release and AddressSanitizer+UBSan
# builds), tokenizer conformance, the HTTP server tests (Python, openai client), and bounded
# fuzz runs of the GGUF parser, the HTTP request parser and the request-to-parameters layer.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzz_seconds="${KITE_FUZZ_SECONDS:-60}"
server_fuzz_seconds="${KITE_SERVER_FUZZ_SECONDS:-20}"

bash scripts/install-deps.sh
bash scripts/install-model.sh

echo "[test] formatting (clang-format)"
git ls-files '*.cpp' '*.h' | xargs clang-format --dry-run --Werror

bash scripts/build.sh release
bash scripts/make-variants.sh
echo "[test] unit tests (release)"
ctest --test-dir build --output-on-failure -j2
bash scripts/test-server.sh

bash scripts/build.sh asan
echo "[test] unit tests (AddressSanitizer + UBSan)"
# Tests named *Slow run whole generations over the model: release build only.
ctest --test-dir build-asan --output-on-failure -j2 -E Slow

bash scripts/build.sh fuzz
echo "[test] fuzzing the GGUF parser for ${fuzz_seconds}s"
corpus=$(mktemp -d)
trap 'rm -rf "$corpus"' EXIT
cp fuzz/seeds/gguf/* "$corpus"/
build-fuzz/bin/gguf_fuzz -max_total_time="$fuzz_seconds" -rss_limit_mb=2048 -timeout=10 \
  -print_final_stats=1 "$corpus" 2>&1 | tail -n 15
for target in http_request completion_request; do
  echo "[test] fuzzing ${target} for ${server_fuzz_seconds}s"
  rm -rf "${corpus:?}"/*
  cp fuzz/seeds/"${target%_request}"/* "$corpus"/
  build-fuzz/bin/"${target}_fuzz" -max_total_time="$server_fuzz_seconds" -rss_limit_mb=2048 \
    -timeout=10 -print_final_stats=1 "$corpus" 2>&1 | tail -n 15
done
echo "[test] fuzz runs found no crash"
