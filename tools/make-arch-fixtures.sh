#!/usr/bin/env bash
# Regenerate tests/fixtures/arch/: llama.cpp's outputs that tests/model/architecture_test.cpp
# compares Kite's forward pass against, for every architecture Kite describes.
#
#   <name>.gguf, <name>.json   a tiny random-weight F32 model per architecture
#                              (tools/arch_fixtures.py) and llama.cpp's logits at every
#                              prompt position plus its greedy continuation
#   real-<name>.json           for the real files below, when present: the token IDs
#                              llama-tokenize gives the start of the GPL-3, llama.cpp's argmax
#                              and top-2 logits at every position of eight 256-token windows
#                              (each from an empty cache), and llama-perplexity's estimate on
#                              the same windows (f16 KV cache and no flash attention, as Kite
#                              computes: llama.cpp's CPU flash attention sums values in f16)
#
#   tools/make-arch-fixtures.sh [--real-only]   (--real-only: leave the tiny models as they are)
#
# llama.cpp is linked as a library (tools/llamacpp/arch_reference.cpp, built here against the
# static libraries tools/llamacpp/build.sh leaves in its build directory) with an F32 KV cache
# and no flash attention, so the logits are as exact as F32 weights allow.
#
# Environment:
#   KITE_CACHE      cache root (default: $HOME/.cache/kite); holds llama.cpp-<version>/ and
#                   venv-gguf-0.19.0/ (PyPI's gguf 0.19 with numpy), and real/ with the real
#                   files (qwen2.5-coder-0.5b.gguf, qwen2.5-coder-1.5b.gguf, gemma3-270m.gguf)
#   KITE_GPL3       text for the real-file runs (default: /usr/share/common-licenses/GPL-3)
set -euo pipefail

LCPP_VERSION="0.3.36"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
CACHE_ROOT="${KITE_CACHE:-$HOME/.cache/kite}"
LCPP="$CACHE_ROOT/llama.cpp-$LCPP_VERSION"
PY="$CACHE_ROOT/venv-gguf-0.19.0/bin/python"
GPL3="${KITE_GPL3:-/usr/share/common-licenses/GPL-3}"
OUT="tests/fixtures/arch"

log() { printf '[arch-fixtures] %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

[[ -x "$PY" ]] || die "no python with gguf at $PY"
[[ -f "$LCPP/build/src/libllama.a" ]] || die "no llama.cpp build in $LCPP (tools/llamacpp/build.sh)"

REF="$LCPP/bin/arch_reference"
log "building $REF"
g++ -O2 -std=c++17 tools/llamacpp/arch_reference.cpp -I"$LCPP/src/include" \
    -I"$LCPP/src/ggml/include" "$LCPP/build/src/libllama.a" "$LCPP/build/ggml/src/libggml.a" \
    "$LCPP/build/ggml/src/libggml-cpu.a" "$LCPP/build/ggml/src/libggml-base.a" \
    -fopenmp -lpthread -ldl -o "$REF"

# --- tiny models --------------------------------------------------------------------------
mkdir -p "$OUT"
[[ "${1:-}" == "--real-only" ]] || "$PY" tools/arch_fixtures.py "$OUT" >&2
for input in $([[ "${1:-}" == "--real-only" ]] || ls "$OUT"/*.input.json); do
    name="$(basename "$input" .input.json)"
    log "llama.cpp on $name"
    mapfile -t ids < <("$PY" -c 'import json,sys; print(*json.load(open(sys.argv[1]))["ids"], sep="\n")' "$input")
    greedy="$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["greedy_tokens"])' "$input")"
    "$REF" "$OUT/$name.gguf" 0 -1 "$greedy" 1 "${ids[@]}" > "$OUT/$name.ref.json"
    "$PY" - "$input" "$OUT/$name.ref.json" "$OUT/$name.json" <<'PY'
import json, sys
meta = json.load(open(sys.argv[1]))
ref = json.load(open(sys.argv[2]))
window = ref["windows"][0]
meta["logits"] = [p["logits"] for p in window["positions"]]
meta["greedy"] = window["greedy"]
json.dump(meta, open(sys.argv[3], "w"), separators=(",", ":"))
PY
    rm "$input" "$OUT/$name.ref.json"
done

# --- real files -----------------------------------------------------------------------------
TEXT="$(mktemp)"
trap 'rm -f "$TEXT"' EXIT
TEXT_BYTES=16000
head -c "$TEXT_BYTES" "$GPL3" > "$TEXT"
WINDOW=256
CHUNKS=8
for name in qwen2.5-coder-0.5b qwen2.5-coder-1.5b gemma3-270m; do
    model="$CACHE_ROOT/real/$name.gguf"
    if [[ ! -f "$model" ]]; then log "skipping $name: no $model"; continue; fi
    log "llama.cpp on $name"
    ids="$("$LCPP/bin/llama-tokenize" -m "$model" -f "$TEXT" --ids --log-disable 2>/dev/null | tail -1)"
    bos="$("$PY" - "$model" <<'PY'
import sys, gguf
r = gguf.GGUFReader(sys.argv[1])
def value(key):
    f = r.fields.get(key)
    return None if f is None else f.contents()
print(value("tokenizer.ggml.bos_token_id") if value("tokenizer.ggml.add_bos_token") else -1)
PY
)"
    mapfile -t first < <("$PY" -c 'import sys; print(*eval(sys.argv[1])[:int(sys.argv[2])], sep="\n")' "$ids" "$((WINDOW * CHUNKS))")
    "$REF" "$model" "$WINDOW" "$bos" 0 0 "${first[@]}" > "$TEXT.ref"
    ppl="$("$LCPP/bin/llama-perplexity" -m "$model" -f "$TEXT" -c "$WINDOW" -b "$WINDOW" \
        -ub "$WINDOW" --chunks "$CHUNKS" -t 2 -fa off -ctk f16 -ctv f16 2>&1 | sed -n 's/.*Final estimate: PPL = \([0-9.]*\).*/\1/p')"
    [[ -n "$ppl" ]] || die "llama-perplexity gave no estimate for $name"
    "$PY" - "$name" "$model" "$TEXT.ref" "$ppl" "$bos" "$WINDOW" "$OUT/real-$name.json" "$TEXT_BYTES" "${first[@]}" <<'PY'
import hashlib, json, sys
name, model, ref, ppl, bos, window, out, text_bytes = sys.argv[1:9]
ids = [int(x) for x in sys.argv[9:]]
windows = json.load(open(ref))["windows"]
json.dump({
    "model": {"name": name, "bytes": __import__("os").path.getsize(model)},
    "text": f"the first {text_bytes} bytes of the GPL-3", "ids": ids, "n_ctx": int(window),
    "bos": int(bos), "llama_perplexity": float(ppl),
    "windows": [{"argmax": [p["argmax"] for p in w["positions"]],
                 "top2_gap": [p["top2"][0] - p["top2"][1] for p in w["positions"]]}
                for w in windows],
}, open(out, "w"), separators=(",", ":"))
PY
    rm -f "$TEXT.ref"
done
log "done: $(ls "$OUT" | tr '\n' ' ')"
