#!/usr/bin/env bash
# Reference embeddings of nomic-embed-text-v1.5 from llama.cpp's llama-embedding, for
# tests/model/encoder_test.cpp: tests/fixtures/embeddings/nomic.json.
#   bash tools/make-embedding-fixtures.sh
# LLAMA_EMBEDDING: a llama-embedding binary to use instead of building llama.cpp.
set -euo pipefail
cd "$(dirname "$0")/.."
model="${KITE_EMBED_MODEL:-models/nomic-embed-v1.5.gguf}"
[[ -f "$model" ]] || bash scripts/install-model.sh nomic-embed-v1.5
binary="${LLAMA_EMBEDDING:-}"
if [[ -z "$binary" ]]; then
    binary="$(bash tools/llamacpp/build.sh | tail -1)/llama-embedding"
fi
python3 tools/make_embedding_fixtures.py "$binary" "$model" tests/fixtures/embeddings/nomic.json
