#!/usr/bin/env bash
# Regenerate tests/fixtures/quantize_hashes.json: the sha256 of every tensor's data bytes in
# the files the pinned llama.cpp's llama-quantize (see tools/llamacpp/) writes, so that the
# tests can check `kite quantize` against it byte for byte:
#   F32                   llama-quantize --pure --allow-requantize MODEL OUT F32
#   Q8_0 Q4_0 Q4_1 Q5_0 Q5_1 Q4_K Q5_K Q6_K F16 BF16
#                         llama-quantize --pure F32FILE OUT TYPE
# (for the K-quants, llama-quantize writes tensors whose rows are not a multiple of 256 in
# Q5_0, Q5_1 or Q8_0: the hashes record the type of each tensor)
#   Q4_K_M Q5_K_M Q6_K    llama-quantize F32FILE OUT MIX   (its mixes: a type per tensor,
#                         no importance matrix; "mix": true in the fixture)
# where F32FILE is `kite quantize MODEL F32FILE F32` (the tests check that it equals
# llama.cpp's F32 file, then quantize it with Kite and compare).
#
# Environment:
#   KITE_MODEL         model to start from (default: models/default.gguf)
#   KITE_BIN           the kite binary (default: build/bin/kite; build it first)
#   KITE_LLAMACPP_BIN  directory holding llama-quantize (default: built or located by
#                      tools/llamacpp/build.sh)
#   KITE_FIXTURE_OUT   output path (default: tests/fixtures/quantize_hashes.json)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
MODEL="${KITE_MODEL:-$ROOT/models/default.gguf}"
KITE="${KITE_BIN:-$ROOT/build/bin/kite}"
OUT="${KITE_FIXTURE_OUT:-$ROOT/tests/fixtures/quantize_hashes.json}"
TYPES=(Q8_0 Q4_0 Q4_1 Q5_0 Q5_1 Q4_K Q5_K Q6_K F16 BF16)
MIXES=(Q4_K_M Q5_K_M Q6_K)

[[ -f "$MODEL" ]] || { echo "model not found: $MODEL" >&2; exit 1; }
[[ -x "$KITE" ]] || { echo "kite not found at $KITE (build it first)" >&2; exit 1; }
if [[ -n "${KITE_LLAMACPP_BIN:-}" ]]; then
    BIN="$KITE_LLAMACPP_BIN"
else
    [[ -x "$ROOT/tools/llamacpp/build.sh" ]] ||
        { echo "set KITE_LLAMACPP_BIN (tools/llamacpp/build.sh is missing)" >&2; exit 1; }
    BIN="$("$ROOT/tools/llamacpp/build.sh" | tail -1)"
fi
QUANTIZE="$BIN/llama-quantize"
[[ -x "$QUANTIZE" ]] || { echo "llama-quantize not found in $BIN" >&2; exit 1; }

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

echo "kite quantize $MODEL -> F32" >&2
"$KITE" quantize "$MODEL" "$WORK/kite-F32.gguf" F32 2>/dev/null

run_llama_quantize() {  # log-name args...
    local log="$WORK/$1.log"
    shift
    echo "llama-quantize $*" >&2
    "$QUANTIZE" "$@" >"$log" 2>&1 || { tail -20 "$log" >&2; exit 1; }
}
run_llama_quantize F32 --pure --allow-requantize "$MODEL" "$WORK/llama-F32.gguf" F32
for t in "${TYPES[@]}"; do
    run_llama_quantize "$t" --pure "$WORK/kite-F32.gguf" "$WORK/llama-$t.gguf" "$t"
done
for m in "${MIXES[@]}"; do
    run_llama_quantize "mix-$m" "$WORK/kite-F32.gguf" "$WORK/llama-mix-$m.gguf" "$m"
done
# Which llama.cpp: from tools/llamacpp/build.sh's stamp, else as llama-quantize prints it
# ("version: 0.5.0-dev (build 0, commit 0c1e570)").
if [[ -f "$BIN/.kite-build-complete" ]]; then
    VERSION="$(head -2 "$BIN/.kite-build-complete" | paste -sd ',' - | sed 's/,/, /')"
else
    VERSION="$(sed -n 's/^.*version: *//p' "$WORK/F32.log" | head -1)"
fi

FILES=("$WORK/llama-F32.gguf")
for t in "${TYPES[@]}"; do FILES+=("$WORK/llama-$t.gguf"); done
for m in "${MIXES[@]}"; do FILES+=("$WORK/llama-mix-$m.gguf"); done
python3 "$ROOT/tools/gguf_tensor_hashes.py" "$WORK/kite-F32.gguf" "${FILES[@]}" >"$WORK/hashes.json"

mkdir -p "$(dirname "$OUT")"
python3 - "$WORK" "$MODEL" "$OUT" "$VERSION" "${MIXES[*]}" "${TYPES[@]}" <<'PY'
import hashlib
import json
import sys

work, model, out, version, mixes, *types = sys.argv[1:]
hashes = json.load(open(f"{work}/hashes.json"))
with open(model, "rb") as f:
    model_sha256 = hashlib.file_digest(f, "sha256").hexdigest() \
        if hasattr(hashlib, "file_digest") else hashlib.sha256(f.read()).hexdigest()

kite_f32 = hashes[f"{work}/kite-F32.gguf"]
llama_f32 = hashes[f"{work}/llama-F32.gguf"]
if kite_f32 != llama_f32:
    differ = [n for n in llama_f32 if kite_f32.get(n) != llama_f32[n]]
    print(f"note: kite's F32 file differs from llama.cpp's in {len(differ)} tensors "
          f"(first: {differ[:3]}); the tests will report it", file=sys.stderr)

variants = [{"type": "F32", "from": "model",
             "command": "llama-quantize --pure --allow-requantize MODEL OUT F32",
             "tensors": llama_f32}]
for t in types:
    variants.append({"type": t, "from": "F32",
                     "command": f"llama-quantize --pure F32FILE OUT {t}",
                     "tensors": hashes[f"{work}/llama-{t}.gguf"]})
for m in mixes.split():
    variants.append({"type": m, "mix": True, "from": "F32",
                     "command": f"llama-quantize F32FILE OUT {m}",
                     "tensors": hashes[f"{work}/llama-mix-{m}.gguf"]})

# One line per tensor keeps the file readable and its diffs small.
lines = ["{",
         '  "about": "sha256 of each tensor\'s data bytes in llama-quantize\'s output; '
         'made by tools/make-quantize-fixtures.sh",',
         f'  "llama_cpp": {json.dumps(version)},',
         f'  "model_sha256": "{model_sha256}",',
         '  "variants": [']
for i, v in enumerate(variants):
    lines.append("    {")
    mix = '"mix": true, ' if v.get("mix") else ""
    lines.append(f'      "type": "{v["type"]}", {mix}"from": "{v["from"]}", '
                 f'"command": {json.dumps(v["command"])},')
    lines.append('      "tensors": {')
    names = list(v["tensors"])
    for j, name in enumerate(names):
        t = v["tensors"][name]
        entry = json.dumps({"type": t["type"], "dims": t["dims"], "sha256": t["sha256"]})
        lines.append(f"        {json.dumps(name)}: {entry}{',' if j + 1 < len(names) else ''}")
    lines.append("      }")
    lines.append("    }" + ("," if i + 1 < len(variants) else ""))
lines += ["  ]", "}"]
with open(out, "w") as f:
    f.write("\n".join(lines) + "\n")
json.load(open(out))  # still valid JSON
print(f"wrote {out}: {len(variants)} variants, {len(llama_f32)} tensors each", file=sys.stderr)
PY
