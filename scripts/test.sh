#!/usr/bin/env bash
# All tests, set-up included: unit and reference tests (release and AddressSanitizer+UBSan
# builds), tokenizer conformance, the HTTP server tests (Python, openai client), and a
# bounded fuzz run of the GGUF parser and of the template engine.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzz_seconds="${KITE_FUZZ_SECONDS:-60}"
template_fuzz_seconds="${KITE_TEMPLATE_FUZZ_SECONDS:-30}"

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
echo "[test] fuzzing the template engine for ${template_fuzz_seconds}s"
template_corpus=$(mktemp -d)
trap 'rm -rf "$corpus" "$template_corpus"' EXIT
cp fuzz/seeds/template/* "$template_corpus"/
build-fuzz/bin/template_fuzz -max_total_time="$template_fuzz_seconds" -rss_limit_mb=2048 \
  -timeout=10 -max_len=8192 -print_final_stats=1 "$template_corpus" 2>&1 | tail -n 15
echo "[test] fuzz runs found no crash"
