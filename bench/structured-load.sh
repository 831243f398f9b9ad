#!/usr/bin/env bash
# Structured output under load: 32 concurrent streamed requests with a JSON Schema constraint
# beside the same requests unconstrained, alternated (bench/serve-load, 2 threads).
# The schema is an unbounded array of objects, so with ignore_eos every request stays inside
# the grammar for all its tokens (the constrained and free runs generate the same counts).
#   bench/structured-load.sh [ROUNDS] [MODEL]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-2}
model=${2:-models/default.gguf}
schema='{"json_schema": {"type": "array", "items": {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}, "city": {"type": "string"}}, "required": ["name", "age", "city"]}}}'
run() {
    bench/serve-load --server kite --model-path "$model" --threads 2 --requests 32 --concurrency 32 \
        --prompt-tokens 32:16 --output-tokens 64 --json "$@" |
        python3 -c 'import json,sys; print("%.1f" % json.load(sys.stdin)["output_tok_s"])'
}
for i in $(seq "$rounds"); do
    free=$(run)
    constrained=$(run --extra-body "$schema")
    echo "round $i: unconstrained $free tok/s, constrained $constrained tok/s"
done
