#!/usr/bin/env bash
# Regenerate tests/fixtures/smollm2_tokenize.json: reference token ids for a
# set of varied prompts, produced by the pinned llama.cpp's llama-tokenize
# (see tools/llamacpp/) on the default model.
#
# Ids are produced WITHOUT a BOS token (--no-bos) and WITH special-token
# parsing (the llama-tokenize default, so "<|im_start|>" becomes one token).
# Each text is passed through a file, read verbatim, with escape processing
# off (--no-escape), so whitespace, newlines and backslashes are exact.
#
# Environment:
#   KITE_MODEL         model to tokenize with (default: models/default.gguf)
#   KITE_LLAMACPP_BIN  directory holding llama-tokenize (default: built or
#                      located by tools/llamacpp/build.sh)
#   KITE_FIXTURE_OUT   output path (default: tests/fixtures/smollm2_tokenize.json)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
MODEL="${KITE_MODEL:-$ROOT/models/default.gguf}"
OUT="${KITE_FIXTURE_OUT:-$ROOT/tests/fixtures/smollm2_tokenize.json}"

[[ -f "$MODEL" ]] || { echo "model not found: $MODEL" >&2; exit 1; }

if [[ -n "${KITE_LLAMACPP_BIN:-}" ]]; then
    BIN="$KITE_LLAMACPP_BIN"
else
    BIN="$("$ROOT/tools/llamacpp/build.sh" | tail -1)"
fi
TOKENIZE="$BIN/llama-tokenize"
[[ -x "$TOKENIZE" ]] || { echo "llama-tokenize not found in $BIN" >&2; exit 1; }

BUILD_INFO=""
if [[ -f "$BIN/.kite-build-complete" ]]; then
    BUILD_INFO="$(head -2 "$BIN/.kite-build-complete" | awk '{ printf "%s%s", (NR > 1 ? ", " : ""), $0 }')"
fi

mkdir -p "$(dirname "$OUT")"
echo "tokenizing with $TOKENIZE on $MODEL" >&2

python3 - "$TOKENIZE" "$MODEL" "$OUT" "$BUILD_INFO" <<'PY'
import hashlib
import json
import os
import subprocess
import sys
import tempfile

tokenize, model, out, build_info = sys.argv[1:5]

FLAGS = ["--ids", "--no-bos", "--no-escape", "--log-disable"]

CASES = [
    "Hello world",
    "Hello, world! How are you today?",
    "The quick brown fox jumps over the lazy dog.",
    "don't can't won't I'm you're it's we'll they'd O'Neil's",
    "1234567",
    "Numbers: 3.14159, -42, 1,000,000, 2024-01-15 and 0x1F",
    "def fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)\n",
    "int main(void) {\n\tprintf(\"%d\\n\", 42);\n\treturn 0;\n}\n",
    "I love 🦙 and 🚀! 👍🏽 👨‍👩‍👧",
    "你好，世界！今日は良い天気ですね。안녕하세요",
    "Привет, мир! Как дела? Ёлка",
    "a  b   c    d     e",
    "   leading and trailing   ",
    "line one\nline two\n\nline four\n\n\n",
    "\tindented\t\ttabs\t",
    " \t \n \r\n mixed whitespace",
    "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n",
    "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n<|im_start|>user\nWhat is 2+2?<|im_end|>\n",
    "text<|endoftext|>more text",
    "HeLLo WoRLD, CamelCaseIdentifier snake_case_name SCREAMING_CASE",
    "Visit https://example.com/path?q=1&x=y or mail me@example.org",
    "Café naïve résumé façade Ñandú Straße",
    "مرحبا بالعالم — नमस्ते दुनिया",
    "!!! ??? ... --- *** ((nested [brackets] {braces}))",
    "{\"key\": \"value\", \"list\": [1, 2, 3], \"nested\": {\"a\": null}}",
    "C:\\path\\to\\file and a literal \\n",
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa hello hello hello",
    "Hello世界123abc🙂",
    " ",
    "\n",
    "",
]


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def run_tokenize(text):
    with tempfile.NamedTemporaryFile("wb", suffix=".txt", delete=False) as f:
        f.write(text.encode("utf-8"))
        path = f.name
    try:
        res = subprocess.run(
            [tokenize, "-m", model, "-f", path] + FLAGS,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False,
        )
    finally:
        os.unlink(path)
    if res.returncode != 0:
        sys.stderr.write(res.stderr.decode("utf-8", "replace"))
        raise SystemExit(f"llama-tokenize failed (rc={res.returncode}) for {text!r}")
    lines = [l for l in res.stdout.decode("utf-8").splitlines() if l.startswith("[")]
    if len(lines) != 1:
        raise SystemExit(f"unexpected llama-tokenize output for {text!r}: {res.stdout!r}")
    ids = json.loads(lines[0])
    if not all(isinstance(i, int) for i in ids):
        raise SystemExit(f"non-integer ids for {text!r}: {ids!r}")
    return ids


cases = []
for text in CASES:
    ids = run_tokenize(text)
    cases.append({"text": text, "ids": ids})
    print(f"{len(ids):4d} tokens  {text[:50]!r}", file=sys.stderr)

generator = "llama.cpp llama-tokenize -f <text file> " + " ".join(FLAGS)
if build_info:
    generator += f" ({build_info})"

doc = {
    "generator": generator,
    "add_bos": False,
    "parse_special": True,
    "model": os.path.basename(os.path.realpath(model)),
    "model_sha256": sha256_file(model),
    "cases": cases,
}

# One case per line keeps diffs readable.
with open(out, "w", encoding="utf-8") as f:
    f.write("{\n")
    for key in ("generator", "add_bos", "parse_special", "model", "model_sha256"):
        f.write(f"  {json.dumps(key)}: {json.dumps(doc[key], ensure_ascii=False)},\n")
    f.write('  "cases": [\n')
    for i, c in enumerate(cases):
        sep = "," if i + 1 < len(cases) else ""
        f.write(f"    {json.dumps(c, ensure_ascii=False)}{sep}\n")
    f.write("  ]\n}\n")

# Round-trip check of what we wrote.
with open(out, encoding="utf-8") as f:
    assert json.load(f) == doc
print(f"wrote {len(cases)} cases to {out}", file=sys.stderr)
PY
