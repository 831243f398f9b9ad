#!/usr/bin/env bash
# Regenerate tests/fixtures/real_tokenize/ID.json: llama.cpp's token ids for the prompts of
# tools/make-tokenizer-fixtures.sh on the real models whose tokenizers the vocab vectors do not
# cover on their own (Qwen2.5-Coder's qwen2 BPE, Gemma 3's 262,144-token SentencePiece).
#
# Each model is looked up as models/ID.gguf (scripts/install-model.sh ID), else as
# ${KITE_CACHE:-$HOME/.cache/kite}/real/ID.gguf; a model found in neither is skipped.
# KITE_LLAMACPP_BIN is passed on (see tools/make-tokenizer-fixtures.sh).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
REAL="${KITE_CACHE:-$HOME/.cache/kite}/real"

for id in qwen2.5-coder-0.5b gemma3-270m; do
    model="$ROOT/models/$id.gguf"
    [[ -f "$model" ]] || model="$REAL/$id.gguf"
    if [[ ! -f "$model" ]]; then
        echo "skipping $id: not installed (bash scripts/install-model.sh $id)" >&2
        continue
    fi
    KITE_MODEL="$model" KITE_FIXTURE_OUT="$ROOT/tests/fixtures/real_tokenize/$id.json" \
        "$ROOT/tools/make-tokenizer-fixtures.sh"
done
