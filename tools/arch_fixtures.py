#!/usr/bin/env python3
"""Tiny random-weight GGUF files, one per architecture Kite describes, for
tests/model/architecture_test.cpp (run by tools/make-arch-fixtures.sh, which adds
llama.cpp's outputs for them).

Each file has every tensor and hyper-parameter key the real files of its
architecture have, at small sizes and in F32, and a minimal SentencePiece-style
vocabulary of 64 tokens so that llama.cpp loads it.

usage: arch_fixtures.py OUT_DIR
"""
import hashlib
import json
import sys
from pathlib import Path

import numpy as np
import gguf

VOCAB = 64
PROMPT_LEN = 24
GREEDY = 16


def vocabulary(w):
    tokens = ["<unk>", "<s>", "</s>", "\u2581"]
    tokens += [chr(c) for c in range(ord("a"), ord("z") + 1)]
    tokens += ["\u2581" + chr(c) for c in range(ord("a"), ord("z") + 1)]
    tokens += [str(d) for d in range(VOCAB - len(tokens))]
    assert len(tokens) == VOCAB
    w.add_tokenizer_model("llama")
    w.add_tokenizer_pre("default")
    w.add_token_list(tokens)
    w.add_token_scores([0.0] * 3 + [-float(i) for i in range(VOCAB - 3)])
    w.add_token_types([2, 3, 3] + [1] * (VOCAB - 3))
    w.add_unk_token_id(0)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_add_bos_token(True)
    w.add_add_eos_token(False)


class Tiny:
    """Random tensors with a fixed seed; shapes given as GGUF gives them: [cols, rows]."""

    def __init__(self, writer, seed):
        self.w = writer
        self.rng = np.random.default_rng(seed)

    def matrix(self, name, cols, rows):
        a = self.rng.normal(0, 1 / np.sqrt(cols), size=(rows, cols)).astype(np.float32)
        self.w.add_tensor(name, a)

    def norm(self, name, n):
        self.w.add_tensor(name, (1 + 0.2 * self.rng.normal(size=n)).astype(np.float32))

    def bias(self, name, n):
        self.w.add_tensor(name, (0.2 * self.rng.normal(size=n)).astype(np.float32))

    def values(self, name, values):
        self.w.add_tensor(name, np.asarray(values, dtype=np.float32))


def common_keys(w, arch, h):
    # Not the architecture's name: llama.cpp adjusts vocabularies by the model name (Phi-3).
    w.add_string("general.name", "tiny random weights")
    w.add_uint32(f"{arch}.block_count", h["layers"])
    w.add_uint32(f"{arch}.context_length", h.get("ctx", 4096))
    w.add_uint32(f"{arch}.embedding_length", h["embd"])
    w.add_uint32(f"{arch}.feed_forward_length", h["ff"])
    w.add_uint32(f"{arch}.attention.head_count", h["heads"])
    w.add_uint32(f"{arch}.attention.head_count_kv", h["kv_heads"])
    w.add_float32(f"{arch}.attention.layer_norm_rms_epsilon", h.get("eps", 1e-6))
    if "freq_base" in h:
        w.add_float32(f"{arch}.rope.freq_base", h["freq_base"])
    if "head_dim" in h:
        w.add_uint32(f"{arch}.attention.key_length", h["head_dim"])
        w.add_uint32(f"{arch}.attention.value_length", h["head_dim"])


def head_dim(h):
    return h.get("head_dim", h["embd"] // h["heads"])


def llama_layer(t, i, h, bias=False, qk_norm=False, post_norms=False):
    e, d = h["embd"], head_dim(h)
    qw, kvw = h["heads"] * d, h["kv_heads"] * d
    p = f"blk.{i}."
    t.norm(p + "attn_norm.weight", e)
    t.matrix(p + "attn_q.weight", e, qw)
    t.matrix(p + "attn_k.weight", e, kvw)
    t.matrix(p + "attn_v.weight", e, kvw)
    if bias:
        t.bias(p + "attn_q.bias", qw)
        t.bias(p + "attn_k.bias", kvw)
        t.bias(p + "attn_v.bias", kvw)
    if qk_norm:
        t.norm(p + "attn_q_norm.weight", d)
        t.norm(p + "attn_k_norm.weight", d)
    t.matrix(p + "attn_output.weight", qw, e)
    if post_norms:
        t.norm(p + "post_attention_norm.weight", e)
    t.norm(p + "ffn_norm.weight", e)
    t.matrix(p + "ffn_gate.weight", e, h["ff"])
    t.matrix(p + "ffn_up.weight", e, h["ff"])
    t.matrix(p + "ffn_down.weight", h["ff"], e)
    if post_norms:
        t.norm(p + "post_ffw_norm.weight", e)


def head(t, h, tied):
    t.matrix("token_embd.weight", h["embd"], VOCAB)
    t.norm("output_norm.weight", h["embd"])
    if not tied:
        t.matrix("output.weight", h["embd"], VOCAB)


def llama3_freq_factors(n):
    # The shape of Llama 3.1's factors: 1 for high frequencies, 8 for low ones, a ramp between.
    return [1.0 if i < n // 3 else 8.0 if i >= 2 * n // 3 else 1.0 + 7.0 * (i - n // 3) / (n // 3)
            for i in range(n)]


def write(out, name, arch, h, seed, body, extra_keys=lambda w: None):
    path = out / f"{name}.gguf"
    w = gguf.GGUFWriter(str(path), arch)
    common_keys(w, arch, h)
    extra_keys(w)
    w.add_uint32("general.file_type", 0)
    vocabulary(w)
    t = Tiny(w, seed)
    body(t)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def main():
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    small = dict(layers=2, embd=32, ff=48, heads=2, kv_heads=1)
    models = {}

    h = dict(small, freq_base=10000.0, eps=1e-5)
    models["llama"] = write(out, "llama", "llama", h, 1, lambda t: (
        head(t, h, False), [llama_layer(t, i, h) for i in range(h["layers"])]))

    h = dict(small, freq_base=1e6, ctx=32768)
    models["qwen2"] = write(out, "qwen2", "qwen2", h, 2, lambda t: (
        head(t, h, False), [llama_layer(t, i, h, bias=True) for i in range(h["layers"])]))

    h = dict(small, heads=4, kv_heads=2, head_dim=16, freq_base=1e6, ctx=40960)
    models["qwen3"] = write(out, "qwen3", "qwen3", h, 3, lambda t: (
        head(t, h, True), [llama_layer(t, i, h, qk_norm=True) for i in range(h["layers"])]))

    # Six layers: five with the sliding window of 8 positions, the sixth global (the default
    # pattern of llama.cpp for Gemma 3); the prompt is three windows long.
    h = dict(layers=6, embd=32, ff=16, heads=4, kv_heads=1, head_dim=16, freq_base=1e6,
             ctx=32768)
    models["gemma3"] = write(
        out, "gemma3", "gemma3", h, 4,
        lambda t: (head(t, h, True),
                   [llama_layer(t, i, h, qk_norm=True, post_norms=True)
                    for i in range(h["layers"])]),
        lambda w: w.add_uint32("gemma3.attention.sliding_window", 8))

    # Phi-3: fused attn_qkv and ffn_up (gate rows first), LongRoPE factors and attention factor.
    h = dict(small, kv_heads=2, freq_base=10000.0, ctx=131072, eps=1e-5)

    def phi3_body(t):
        e, d, ff = h["embd"], head_dim(h), h["ff"]
        head(t, h, False)
        t.values("rope_factors_long.weight", 1 + np.arange(d // 2, dtype=np.float32))
        t.values("rope_factors_short.weight", 1 + 0.25 * np.arange(d // 2, dtype=np.float32))
        for i in range(h["layers"]):
            p = f"blk.{i}."
            t.norm(p + "attn_norm.weight", e)
            t.matrix(p + "attn_qkv.weight", e, (h["heads"] + 2 * h["kv_heads"]) * d)
            t.matrix(p + "attn_output.weight", h["heads"] * d, e)
            t.norm(p + "ffn_norm.weight", e)
            t.matrix(p + "ffn_up.weight", e, 2 * ff)
            t.matrix(p + "ffn_down.weight", ff, e)

    def phi3_keys(w):
        w.add_uint32("phi3.rope.dimension_count", head_dim(h))
        w.add_uint32("phi3.rope.scaling.original_context_length", 4096)
        w.add_float32("phi3.rope.scaling.attn_factor", 1.19)
        w.add_uint32("phi3.attention.sliding_window", 262144)

    models["phi3"] = write(out, "phi3", "phi3", h, 5, phi3_body, phi3_keys)

    # Llama 3.x: RoPE frequency factors; linear and YaRN scaling from rope.scaling.*.
    h = dict(small, freq_base=500000.0, eps=1e-5)
    models["llama-rope-freqs"] = write(out, "llama-rope-freqs", "llama", h, 6, lambda t: (
        head(t, h, False), t.values("rope_freqs.weight", llama3_freq_factors(head_dim(h) // 2)),
        [llama_layer(t, i, h) for i in range(h["layers"])]))

    def linear_keys(w):
        w.add_string("llama.rope.scaling.type", "linear")
        w.add_float32("llama.rope.scaling.factor", 4.0)

    models["llama-linear"] = write(out, "llama-linear", "llama", h, 7, lambda t: (
        head(t, h, False), [llama_layer(t, i, h) for i in range(h["layers"])]), linear_keys)

    def yarn_keys(w):
        w.add_string("llama.rope.scaling.type", "yarn")
        w.add_float32("llama.rope.scaling.factor", 4.0)
        w.add_uint32("llama.rope.scaling.original_context_length", 64)

    h = dict(small, freq_base=10000.0, eps=1e-5)
    models["llama-yarn"] = write(out, "llama-yarn", "llama", h, 8, lambda t: (
        head(t, h, False), [llama_layer(t, i, h) for i in range(h["layers"])]), yarn_keys)

    rng = np.random.default_rng(0)
    prompt = [1] + [int(x) for x in rng.integers(3, VOCAB, size=PROMPT_LEN - 1)]
    for name, path in models.items():
        meta = {"model": {"file": f"tests/fixtures/arch/{path.name}",
                          "sha256": hashlib.sha256(path.read_bytes()).hexdigest()},
                "ids": prompt, "greedy_tokens": GREEDY}
        (out / f"{name}.input.json").write_text(json.dumps(meta))
        print(name, path.stat().st_size)


if __name__ == "__main__":
    main()
