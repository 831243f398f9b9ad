#!/usr/bin/env bash
# Makes the F32, F16, Q8_0 and Q4_0 variants of the default model with `kite quantize` (the
# reference tests compare F32 and Q8_0 against llama.cpp's outputs on the same bytes;
# bench/compare-llamacpp measures F16, Q8_0 and Q4_0 beside llama.cpp). Needs build/bin/kite.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p models/variants
for type in F32 F16 Q8_0 Q4_0; do
  out="models/variants/default-$(echo "$type" | tr 'A-Z' 'a-z').gguf"
  if [ ! -s "$out" ]; then
    echo "[variants] making $out"
    build/bin/kite quantize models/default.gguf "$out" "$type" 2> /dev/null
  fi
done
echo "[variants] F32, F16, Q8_0 and Q4_0 variants present in models/variants/"
