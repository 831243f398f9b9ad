#!/usr/bin/env bash
# Regenerate tests/fixtures/reference/gemma3-270m-perplexity.json: the real llama-perplexity's
# estimate on Gemma 3 270M, whose tokenizer adds BOS, over the GPL-3 text at two context sizes.
# llama-perplexity tokenizes the whole text with BOS first, cuts windows of n_ctx tokens from
# that, puts BOS over each window's first token and scores the second half of each window;
# tests/reference_test.cpp runs `kite perplexity` on the same file, text and flags and asks for
# the same number, which it gets only when its windows hold the same tokens.
#
# The model is the installed file (scripts/install-model.sh gemma3-270m) converted to F32 by
# `kite quantize` (models/variants/gemma3-270m-f32.gguf, made here when missing): with F32
# weights nothing is requantized at run time, so the two engines agree to about 0.01% and the
# test can ask for far less than the 2% a one-token shift of the windows costs.
#
# Environment:
#   KITE_CACHE          cache root (default: $HOME/.cache/kite)
#   KITE_BIN            kite binary (default: build/bin/kite)
#   KITE_LLAMACPP_BIN   directory holding llama-perplexity (default: the bin/ directory of
#                       tools/llamacpp/build.sh's cache)
#   KITE_LP_THREADS     threads for llama-perplexity (default: 2)
#   KITE_FIXTURE_DIR    output directory (default: tests/fixtures/reference)
#   KITE_GPL3           the text (default: /usr/share/common-licenses/GPL-3)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
CACHE_ROOT="${KITE_CACHE:-$HOME/.cache/kite}"
LP_DIR="${KITE_LLAMACPP_BIN:-$CACHE_ROOT/llama.cpp-0.3.36/bin}"
KITE="${KITE_BIN:-build/bin/kite}"
THREADS="${KITE_LP_THREADS:-2}"
OUT="${KITE_FIXTURE_DIR:-tests/fixtures/reference}/gemma3-270m-perplexity.json"
GPL3="${KITE_GPL3:-/usr/share/common-licenses/GPL-3}"
SOURCE="models/gemma3-270m.gguf"
MODEL="models/variants/gemma3-270m-f32.gguf"
# n_ctx and chunks: a few windows each, so that the test stays short.
RUNS=("128 4" "256 2")

log() { printf '[bos-perplexity-fixture] %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

[[ -x "$KITE" ]] || die "kite not found at $KITE (build it first)"
[[ -x "$LP_DIR/llama-perplexity" ]] || die "$LP_DIR/llama-perplexity not found (tools/llamacpp/build.sh)"
[[ -f "$SOURCE" ]] || die "$SOURCE not found (scripts/install-model.sh gemma3-270m)"
[[ -f "$GPL3" ]] || die "text not found: $GPL3 (Debian's base-files package ships it)"

if [[ ! -s "$MODEL" ]]; then
    log "kite quantize $SOURCE $MODEL F32"
    mkdir -p "$(dirname "$MODEL")"
    "$KITE" quantize "$SOURCE" "$MODEL" F32 2>/dev/null
fi

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
for run in "${RUNS[@]}"; do
    read -r n_ctx chunks <<<"$run"
    args=(-c "$n_ctx" -b "$n_ctx" -ub "$n_ctx" --chunks "$chunks" -t "$THREADS" -tb "$THREADS"
          -fa off -ngl 0 -ctk f16 -ctv f16 --seed 42)
    log "llama-perplexity -m $MODEL -f $GPL3 ${args[*]}"
    "$LP_DIR/llama-perplexity" -m "$MODEL" -f "$GPL3" "${args[@]}" >"$WORK/lp-$n_ctx.log" 2>&1 ||
        { tail -20 "$WORK/lp-$n_ctx.log" >&2; die "llama-perplexity failed"; }
    echo "${args[*]}" >"$WORK/args-$n_ctx"
done

python3 - "$WORK" "$MODEL" "$SOURCE" "$GPL3" "$OUT" "${RUNS[@]}" <<'PY'
import hashlib
import json
import re
import sys

work, model, source, text, out = sys.argv[1:6]
runs = [r.split() for r in sys.argv[6:]]


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def run_entry(n_ctx, chunks):
    log = open(f"{work}/lp-{n_ctx}.log", encoding="utf-8", errors="replace").read()
    final = re.search(r"Final estimate: PPL = ([0-9.]+) \+/- ([0-9.]+)", log)
    used = re.search(r"calculating perplexity over (\d+) chunks, n_ctx=(\d+)", log)
    if not final or not used:
        sys.exit(f"llama-perplexity at n_ctx {n_ctx} printed no estimate or no chunk line")
    if (int(used.group(1)), int(used.group(2))) != (int(chunks), int(n_ctx)):
        sys.exit(f"llama-perplexity used other chunks: {used.group(0)}")
    args = open(f"{work}/args-{n_ctx}").read().strip()
    return {"n_ctx": int(n_ctx), "chunks": int(chunks),
            "command": f"llama-perplexity -m MODEL -f TEXT {args}",
            "ppl": float(final.group(1)), "ppl_error": float(final.group(2)),
            "output_line": final.group(0)}


doc = {
    "generator": "tools/make-bos-perplexity-fixture.sh",
    "library": {"name": "llama-perplexity of tools/llamacpp/build.sh",
                "llama_cpp_commit": "0c1e57098bba43ac29e6e3b677cdceebdd22334f"},
    "model": {"file": model, "sha256": sha256(model),
              "made_by": f"kite quantize {source} {model} F32", "source_sha256": sha256(source)},
    "text_file": text,
    "text_sha256": sha256(text),
    "runs": [run_entry(*r) for r in runs],
}
with open(out, "w") as f:
    f.write(json.dumps(doc, indent=1) + "\n")
for r in doc["runs"]:
    print(f"{out}: n_ctx {r['n_ctx']}, {r['chunks']} chunks: {r['output_line']}", file=sys.stderr)
PY
log "done"
