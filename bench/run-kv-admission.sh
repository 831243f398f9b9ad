#!/usr/bin/env bash
# The KV-type admission benchmark of bench/RESULTS.md: the 32-client workload of
# run-serve-bench.sh (32 streamed requests at once, 16-48-word prompts, 56-72 output tokens,
# the default model) against kite serve at a fixed --kv-mem, once per KV type. serve-load
# --metrics polls /metrics for the most sequences running before the first preemption and
# counts the preemptions. The scheduler admits a prompt while free blocks hold it, so the first
# number is how many sequences a budget admits; with 32 clients it cannot pass 32, so a ratio
# to f16 shows only where f16 admits well under a third of them.
#
#   bench/run-kv-admission.sh [KV_MEM ...]   # default: 6M 22.5M
#
# 6M is 17 f16 blocks of 16 tokens: about 8 of these prompts. 22.5M is 64 blocks: 8 whole
# sequences of the longest (121 tokens, 8 blocks). Prints one JSON line per run, then a table
# per budget with each type's ratios to f16. About 3 minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
threads="${KITE_BENCH_THREADS:-2}"
budgets=("$@")
[ ${#budgets[@]} -gt 0 ] || budgets=(6M 22.5M)
out="$(mktemp)"
trap 'rm -f "$out"' EXIT
for kv_mem in "${budgets[@]}"; do
  for kv in f16 q8_0 q4_0; do
    python3 bench/serve-load --server kite --threads "$threads" --json --seed 1 --requests 32 \
      --concurrency 32 --slots 32 --ctx 512 --prompt-tokens 32:16 --output-tokens 64:8 \
      --kv-mem "$kv_mem" --kv-type "$kv" --metrics | tee -a "$out"
  done
done
python3 - "$out" "${budgets[@]}" <<'PY'
import json, sys
runs = [json.loads(line) for line in open(sys.argv[1])]
for i, kv_mem in enumerate(sys.argv[2:]):
    print(f"\n--kv-mem {kv_mem}\n| KV type | KV blocks | running before the first preemption | "
          "x f16 | preemptions | output tok/s | x f16 |\n|---|---:|---:|---:|---:|---:|---:|")
    group = runs[3 * i:3 * i + 3]
    f16 = group[0]
    for kv, r in zip(("f16", "q8_0", "q4_0"), group):
        admitted = r["running_peak_before_preemption"]
        print(f"| {kv} | {r['kv_blocks_total']} | {admitted} | "
              f"{admitted / f16['running_peak_before_preemption']:.2f}x | {r['preemptions']} | "
              f"{r['output_tok_s']} | {r['output_tok_s'] / f16['output_tok_s']:.2f}x |")
PY
