#!/usr/bin/env bash
# Reference embeddings from llama.cpp's llama-embedding, for tests/model/encoder_test.cpp
# (nomic-embed-text-v1.5: tests/fixtures/embeddings/nomic.json; all-MiniLM-L6-v2, a BERT:
# minilm.json) and
# tests/model/decoder_embed_test.cpp (generative models pooled by mean and by last token:
# smollm2-{mean,last}.json, qwen2.5-coder-0.5b-last.json).
#   bash tools/make-embedding-fixtures.sh
# LLAMA_EMBEDDING: a llama-embedding binary to use instead of building llama.cpp.
set -euo pipefail
cd "$(dirname "$0")/.."
for name in nomic-embed-v1.5 all-minilm-l6-v2 smollm2-135m qwen2.5-coder-0.5b; do
    [[ -f "models/$name.gguf" ]] || bash scripts/install-model.sh "$name"
done
binary="${LLAMA_EMBEDDING:-}"
if [[ -z "$binary" ]]; then
    binary="$(bash tools/llamacpp/build.sh | tail -1)/llama-embedding"
fi
out=tests/fixtures/embeddings
fixture() { python3 tools/make_embedding_fixtures.py "$binary" "models/$1.gguf" "$1" "$2" "$3" "$4"; }
fixture nomic-embed-v1.5 mean 0 "$out/nomic.json"
# all-MiniLM-L6-v2 reads at most 512 tokens: the first 19 texts (up to about 400).
fixture all-minilm-l6-v2 mean 19 "$out/minilm.json"
# The generative models: texts up to about 400 tokens (the first 19).
fixture smollm2-135m mean 19 "$out/smollm2-mean.json"
fixture smollm2-135m last 19 "$out/smollm2-last.json"
fixture qwen2.5-coder-0.5b last 19 "$out/qwen2.5-coder-0.5b-last.json"
