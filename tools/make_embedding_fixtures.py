#!/usr/bin/env python3
"""Reference embeddings for Kite's Model::embed, from llama.cpp's llama-embedding.

Runs llama-embedding once over all texts (one prompt per line; --pooling as given, L2
normalisation) on the same GGUF Kite loads, and writes the texts, their token ids and
counts, and their vectors (rounded to 6 decimals) as JSON.
Usage: make_embedding_fixtures.py LLAMA_EMBEDDING MODEL NAME POOLING MAX_TEXTS OUT.json
(an encoder: its own pooling, mean for nomic-embed; a generative model: mean or last of its
final hidden state after the output norm; MAX_TEXTS: the first that many texts, 0 for all).
"""
import json
import re
import subprocess
import sys

PARAGRAPH = (
    "The lighthouse keeper climbed the spiral stairs every evening at dusk, trimmed the wick, "
    "polished the great lens and watched the ships pass the reef until morning came. "
)

TEXTS = [
    "hello",
    "Hello, world!",
    "search_query: What is the capital of France?",
    "search_document: Paris is the capital and most populous city of France.",
    "The quick brown fox jumps over the lazy dog.",
    "Äpfel, Birnen und Kirschen wachsen im Garten meiner Großmutter.",
    "Le café était très chaud, mais la crème brûlée était parfaite.",
    "Москва — столица России, крупнейший по численности населения город страны.",
    "東京は日本の首都であり、世界で最も人口の多い都市圏の一つです。",
    "我想在天工作，然后回家吃饭。",
    "서울은 대한민국의 수도이다.",
    "Η Αθήνα είναι η πρωτεύουσα της Ελλάδας.",
    "مرحبا بالعالم، هذه جملة باللغة العربية.",
    "def fibonacci(n): return n if n < 2 else fibonacci(n - 1) + fibonacci(n - 2)",
    "Prices rose 3.5% in Q2 2024 ($1,234.56 vs. $1,192.00); see https://example.com/report?id=42.",
    "🚀 Launch day! 🎉 Emojis 😀 and symbols ✅ → ∑ ∫ ≤ ≥ £ € ¥",
    "ALL CAPS SENTENCE WITH MIXED case and unusualwordsthatarenotinthevocabulary",
    PARAGRAPH * 3,
    PARAGRAPH * 12,
    PARAGRAPH * 30,
    PARAGRAPH * 60,
]


def run(binary, model, pooling, texts):
    """All texts in one run (one prompt per line): their token ids and vectors, in order."""
    cmd = [binary, "-m", model, "-p", "\n".join(texts), "--pooling", pooling,
           "--embd-normalize", "2", "--embd-output-format", "array", "--verbose-prompt",
           "-c", "4096", "-b", "4096", "-ub", "4096", "-t", "2"]
    r = subprocess.run(cmd, capture_output=True, text=True, errors="replace")
    if r.returncode != 0:
        sys.exit(f"llama-embedding failed:\n{r.stderr[-2000:]}")
    both = r.stdout + r.stderr
    counts = [int(n) for n in re.findall(r"number of tokens in prompt = (\d+)", both)]
    # --verbose-prompt lists each prompt's tokens after its count, one "  ID -> 'piece'" a line.
    ids = [int(i) for i in re.findall(r"^\s*(\d+) -> '", r.stdout, re.MULTILINE)]
    tokens, at = [], 0
    for n in counts:
        tokens.append(ids[at:at + n])
        at += n
    start = r.stdout.find("[[")
    vectors = json.loads(r.stdout[start:r.stdout.rfind("]]") + 2]) if start >= 0 else []
    if len(tokens) != len(texts) or len(vectors) != len(texts) or at != len(ids):
        sys.exit(f"unexpected llama-embedding output ({len(tokens)} counts, {len(vectors)} "
                 f"vectors for {len(texts)} texts):\n{both[-2000:]}")
    return tokens, vectors


def main():
    binary, model, name, pooling, max_texts, out = sys.argv[1:7]
    texts = TEXTS[:int(max_texts)] if int(max_texts) > 0 else TEXTS
    assert all("\n" not in t for t in texts)
    tokens, vectors = run(binary, model, pooling, texts)
    cases = []
    for text, ids, vector in zip(texts, tokens, vectors):
        cases.append({"text": text, "tokens": len(ids), "ids": ids,
                      "embedding": [round(x, 6) for x in vector]})
        print(f"{len(ids):5d} tokens: {text[:50]!r}", file=sys.stderr)
    with open(out, "w", encoding="utf-8") as f:
        json.dump({"model": name, "pooling": pooling, "normalize": "l2",
                   "reference": "llama.cpp llama-embedding (llama-cpp-python 0.3.36)",
                   "cases": cases}, f, ensure_ascii=False)
        f.write("\n")


if __name__ == "__main__":
    main()
