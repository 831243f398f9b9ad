#!/usr/bin/env bash
# Regenerate tests/fixtures/reference/default-q4_k_m.json and default-q5_k_m.json: llama.cpp's
# teacher-forced view of the default model's Q4_K_M and Q5_K_M variants, which between them
# hold every type real K-quant files use (Q4_K_M: Q4_K, Q6_K, Q5_0, Q8_0; Q5_K_M: Q5_K, Q6_K,
# Q5_1, Q8_0). For each variant:
#   - the file, made by `kite quantize models/variants/default-f32.gguf OUT Q4_K_M` (as
#     scripts/make-variants.sh makes it), after checking that every tensor equals the one
#     `llama-quantize` writes from the same F32 file (type and bytes; only the order of the
#     tensors in the file differs);
#   - llama.cpp's argmax and top-2 logit gap at every position of four 256-token windows of
#     the token ids of tests/fixtures/reference/default.json (the GPL-3 text), and the
#     perplexity over their second halves, from tools/llamacpp/teacher_forced.cpp (built here
#     against the static libraries tools/llamacpp/build.sh leaves);
#   - llama-perplexity's own estimate on the same file and text.
#
# Environment:
#   KITE_CACHE          cache root (default: $HOME/.cache/kite)
#   KITE_BIN            kite binary (default: build/bin/kite)
#   KITE_LLAMACPP_DIR   llama.cpp build of tools/llamacpp/build.sh, holding bin/, build/
#                       and src/ (default: $KITE_CACHE/llama.cpp-0.3.36)
#   KITE_LP_THREADS     threads for llama.cpp (default: 2)
#   KITE_FIXTURE_DIR    output directory (default: tests/fixtures/reference)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
CACHE_ROOT="${KITE_CACHE:-$HOME/.cache/kite}"
LLAMA="${KITE_LLAMACPP_DIR:-$CACHE_ROOT/llama.cpp-0.3.36}"
KITE="${KITE_BIN:-build/bin/kite}"
THREADS="${KITE_LP_THREADS:-2}"
OUT_DIR="${KITE_FIXTURE_DIR:-tests/fixtures/reference}"
BASE_FIXTURE="$OUT_DIR/default.json"
F32="models/variants/default-f32.gguf"
MIXES=(Q4_K_M Q5_K_M)
N_CTX=256
N_WINDOWS=4

log() { printf '[kquant-fixtures] %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

[[ -x "$KITE" ]] || die "kite not found at $KITE (build it first)"
[[ -f "$BASE_FIXTURE" ]] || die "$BASE_FIXTURE is missing (tools/make-reference-fixtures.sh)"
for b in llama-quantize llama-perplexity; do
    [[ -x "$LLAMA/bin/$b" ]] || die "$LLAMA/bin/$b not found (tools/llamacpp/build.sh)"
done
for lib in src/libllama.a ggml/src/libggml.a ggml/src/libggml-cpu.a ggml/src/libggml-base.a; do
    [[ -f "$LLAMA/build/$lib" ]] || die "$LLAMA/build/$lib not found (tools/llamacpp/build.sh)"
done

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

TF="$LLAMA/teacher_forced"
if [[ ! -x "$TF" || "$TF" -ot tools/llamacpp/teacher_forced.cpp ]]; then
    log "building $TF"
    # ggml is built with OpenMP (tools/llamacpp/build.sh leaves it on).
    c++ -O2 -std=c++17 tools/llamacpp/teacher_forced.cpp -I"$LLAMA/src/include" \
        -I"$LLAMA/src/ggml/include" -o "$TF" "$LLAMA/build/src/libllama.a" \
        "$LLAMA/build/ggml/src/libggml.a" "$LLAMA/build/ggml/src/libggml-cpu.a" \
        "$LLAMA/build/ggml/src/libggml-base.a" -fopenmp -lpthread -ldl
fi

mkdir -p models/variants
if [[ ! -s "$F32" ]]; then
    log "kite quantize models/default.gguf $F32 F32"
    "$KITE" quantize models/default.gguf "$F32" F32 2>/dev/null
fi

for mix in "${MIXES[@]}"; do
    lower="$(echo "$mix" | tr 'A-Z' 'a-z')"
    file="models/variants/default-$lower.gguf"
    log "kite quantize $F32 $file $mix"
    "$KITE" quantize "$F32" "$file" "$mix" 2>/dev/null
    log "llama-quantize $F32 (tmp) $mix"
    "$LLAMA/bin/llama-quantize" "$F32" "$WORK/llama-$mix.gguf" "$mix" >"$WORK/q.log" 2>&1 ||
        { tail -20 "$WORK/q.log" >&2; die "llama-quantize failed"; }
    python3 tools/gguf_tensor_hashes.py "$file" "$WORK/llama-$mix.gguf" >"$WORK/hashes.json"
    python3 - "$WORK/hashes.json" "$file" "$WORK/llama-$mix.gguf" <<'PY' || die "$file differs from llama-quantize's $mix"
import json, sys
h = json.load(open(sys.argv[1]))
ours, theirs = h[sys.argv[2]], h[sys.argv[3]]
differ = sorted(n for n in set(ours) | set(theirs) if ours.get(n) != theirs.get(n))
if differ:
    sys.exit(f"{len(differ)} tensors differ, first {differ[:3]}")
PY

    lp_args=(-m "$file" -f "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["teacher_forced"]["text_file"])' "$BASE_FIXTURE")"
             -c "$N_CTX" -b "$N_CTX" -ub "$N_CTX" --chunks "$N_WINDOWS" -t "$THREADS"
             -tb "$THREADS" -fa off -ngl 0
             -ctk f16 -ctv f16 --seed 42)
    log "llama-perplexity ${lp_args[*]}"
    "$LLAMA/bin/llama-perplexity" "${lp_args[@]}" >"$WORK/lp.log" 2>&1 ||
        { tail -20 "$WORK/lp.log" >&2; die "llama-perplexity failed"; }

    log "teacher_forced $file"
    python3 - "$BASE_FIXTURE" "$file" "$TF" "$THREADS" "$WORK/lp.log" "$mix" \
        "$OUT_DIR/default-$lower.json" "$N_CTX" "$N_WINDOWS" "${lp_args[*]}" <<'PY'
import hashlib
import json
import math
import re
import subprocess
import sys

base_path, model, tf_bin, threads, lp_log, mix, out, n_ctx, n_windows, lp_command = sys.argv[1:]
base = json.load(open(base_path))
tf = base["teacher_forced"]
n_ctx, n_windows = int(n_ctx), int(n_windows)
first = n_ctx // 2  # as llama-perplexity scores each window
ids = tf["ids"][:n_ctx * n_windows]
# SmolLM2 adds no BOS, so each window is fed as it is (llama-perplexity would otherwise put
# BOS first in each window).
if base["settings"]["add_bos"]:
    sys.exit("the model adds BOS: put it first in each window before running")
run = subprocess.run([tf_bin, model, str(n_ctx), threads], input=" ".join(map(str, ids)),
                     capture_output=True, text=True, check=True)
rows = [json.loads(line) for line in run.stdout.splitlines()]
assert len(rows) == n_windows
windows = []
nll_sum = count = 0
for w, row in enumerate(rows):
    scored = row["nll"][first:]
    nll_sum += sum(scored)
    count += len(scored)
    windows.append({"start": w * n_ctx, "argmax": row["argmax"], "top2_gap": row["top2_gap"],
                    "ppl": math.exp(sum(scored) / len(scored))})
log_text = open(lp_log, encoding="utf-8", errors="replace").read()
final = re.search(r"Final estimate: PPL = ([0-9.]+) \+/- ([0-9.]+)", log_text)
if not final:
    sys.exit("llama-perplexity printed no final estimate")
with open(model, "rb") as f:
    sha = hashlib.sha256(f.read()).hexdigest()
with open(f"models/variants/default-f32.gguf", "rb") as f:
    source_sha = hashlib.sha256(f.read()).hexdigest()
doc = {
    "schema_version": 1,
    "generator": "tools/make-kquant-reference-fixtures.sh",
    "library": {"name": "llama.cpp, static libraries and binaries of tools/llamacpp/build.sh",
                "llama_cpp_commit": base["library"]["llama_cpp_commit"]},
    "model": {"file": model, "sha256": sha,
              "made_by": f"kite quantize models/variants/default-f32.gguf {model} {mix}",
              "equal_to": f"llama-quantize models/variants/default-f32.gguf OUT {mix} "
                          "(every tensor's type and bytes; checked when this was made)",
              "source_sha256": source_sha},
    "teacher_forced": {
        "text_file": tf["text_file"], "text_sha256": tf["text_sha256"],
        "n_tokens": len(ids), "ids": ids, "n_ctx": n_ctx, "n_windows": n_windows,
        "first_scored": first,
        "windows": windows,
        "perplexity": {"count": count, "ppl": math.exp(nll_sum / count)},
        "llama_perplexity": {"command": "llama-perplexity " + re.sub(
                                 r"-m \S+ -f \S+", "-m MODEL -f TEXT", lp_command),
                             "ppl": float(final.group(1)), "ppl_error": float(final.group(2)),
                             "output_line": final.group(0)},
    },
}
# Lists of numbers on one line each keep the file short.
text = json.dumps(doc, indent=1)
text = re.sub(r"\[\s+([-0-9.e,\s]+?)\s+\]",
              lambda m: "[" + ",".join(x.strip() for x in m.group(1).split(",")) + "]", text)
with open(out, "w") as f:
    f.write(text + "\n")
print(f"{out}: perplexity {math.exp(nll_sum / count):.4f} (llama-perplexity "
      f"{final.group(1)})", file=sys.stderr)
PY
done
log "done"
