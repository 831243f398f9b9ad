#!/usr/bin/env bash
# The JSON Schema conformance check (kite structured check) on the shared JSONSchemaBench set,
# or every Nth schema of it: bench/structured-check.sh [EVERY] [MODEL]. Prints the summary;
# the per-schema lines go to build/structured-check.jsonl.
set -euo pipefail
cd "$(dirname "$0")/.."
every="${1:-1}"
model="${2:-models/default.gguf}"
data="${KITE_TESTDATA:-../shared/testdata}/jsonschema/maskbench-public.jsonl.gz"
gzip -dc "$data" | awk -v every="$every" '(NR - 1) % every == 0' |
  build/bin/kite structured check -m "$model" --cases - -o json > build/structured-check.jsonl
tail -n 1 build/structured-check.jsonl
