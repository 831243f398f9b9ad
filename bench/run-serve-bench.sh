#!/usr/bin/env bash
# The serving benchmark of bench/RESULTS.md: the same workloads against kite serve and
# llama.cpp's llama-server (tools/llamacpp/build.sh), 2 threads each, one after the other.
# Prints one JSON line per run (bench/serve-load --json). Takes about 10 minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
threads="${KITE_BENCH_THREADS:-2}"
load=(python3 bench/serve-load --threads "$threads" --json --seed 1)

# 32 clients, short prompts (16-48 words), about 64 output tokens.
short=(--requests 32 --concurrency 32 --slots 32 --ctx 512 --prompt-tokens 32:16
       --output-tokens 64:8)
# One ~1000-token system prompt shared by 64 requests, 8 at a time.
shared=(--concurrency 8 --slots 8 --ctx 1280 --shared-prefix 1000 --prompt-tokens 16:8
        --output-tokens 64)

for server in kite llama-server; do
  "${load[@]}" --server "$server" "${short[@]}"
  "${load[@]}" --server "$server" "${shared[@]}" --requests 64
  # Without prefix caching every request prefills the whole system prompt: 8 requests.
  "${load[@]}" --server "$server" "${shared[@]}" --requests 8 --no-cache
done
# The prefix-caching target compares kite with and without its cache on the same 64 requests.
"${load[@]}" --server kite "${shared[@]}" --requests 64 --no-cache
# Soak: 1,000 short requests, 64 clients, 32 running at once; reports failures and the RSS.
"${load[@]}" --server kite --requests 1000 --concurrency 64 --slots 32 --ctx 256 \
  --prompt-tokens 32:16 --output-tokens 16:8 --time-limit 1200
