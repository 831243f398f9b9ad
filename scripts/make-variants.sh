#!/usr/bin/env bash
# Makes variants of the default model with `kite quantize`: F32, F16, Q8_0 and Q4_0 from the
# default model, and llama-quantize's Q4_K_M and Q5_K_M mixes from the F32 variant (every
# tensor equal to llama-quantize's; tests/quant/quantize_test.cpp checks that). The reference tests
# compare F32, Q8_0, Q4_K_M and Q5_K_M against llama.cpp's outputs on the same bytes;
# bench/compare-llamacpp measures F16, Q8_0, Q4_0 and Q4_K_M beside llama.cpp. Also Gemma 3
# 270M in F32 where that model is installed. Needs build/bin/kite.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p models/variants
make_variant() {  # source type
  local out="models/variants/default-$(echo "$2" | tr 'A-Z' 'a-z').gguf"
  if [ ! -s "$out" ]; then
    echo "[variants] making $out"
    build/bin/kite quantize "$1" "$out" "$2" 2> /dev/null
  fi
}
for type in F32 F16 Q8_0 Q4_0; do make_variant models/default.gguf "$type"; done
for mix in Q4_K_M Q5_K_M; do make_variant models/variants/default-f32.gguf "$mix"; done
# Gemma 3 270M in F32, where it is installed (the slow tier installs it): a model whose tokenizer
# adds BOS, for the reference test of kite perplexity's windows against llama-perplexity's.
gemma_f32=models/variants/gemma3-270m-f32.gguf
if [ -f models/gemma3-270m.gguf ] && [ ! -s "$gemma_f32" ]; then
  echo "[variants] making $gemma_f32"
  build/bin/kite quantize models/gemma3-270m.gguf "$gemma_f32" F32 2> /dev/null
fi
echo "[variants] F32, F16, Q8_0, Q4_0, Q4_K_M and Q5_K_M variants present in models/variants/"
