#!/usr/bin/env python3
"""Converts a sentence-transformers BERT model (a zip of its directory: config.json,
tokenizer.json, 1_Pooling/config.json, model.safetensors) to a GGUF file of architecture `bert`,
laid out as llama.cpp's convert_hf_to_gguf.py lays out BERT at --outtype f16: matrices F16;
1-D tensors, the position and token-type embeddings F32. Only the standard library is used
(no torch, no numpy), so the model installer needs nothing beyond Python 3.

    python3 tools/bert_to_gguf.py MODEL.zip NAME OUT.gguf

The output is deterministic (same input, same bytes), so the installer can pin its sha256.
"""
import array
import io
import json
import struct
import sys
import zipfile

ALIGNMENT = 32  # GGUF's default (general.alignment)
F32, F16 = 0, 1  # ggml types
# GGUF metadata value types
UINT32, INT32, FLOAT32, BOOL, STRING, ARRAY = 4, 5, 6, 7, 8, 9
TOKEN_NORMAL, TOKEN_CONTROL = 1, 3  # tokenizer.ggml.token_type
POOLING = {"pooling_mode_mean_tokens": 1, "pooling_mode_cls_token": 2}  # <arch>.pooling_type

# Hugging Face BertModel tensor names and their GGUF names ({} is the layer).
MODEL_TENSORS = {
    "embeddings.word_embeddings.weight": "token_embd.weight",
    "embeddings.token_type_embeddings.weight": "token_types.weight",
    "embeddings.position_embeddings.weight": "position_embd.weight",
    "embeddings.LayerNorm.weight": "token_embd_norm.weight",
    "embeddings.LayerNorm.bias": "token_embd_norm.bias",
}
LAYER_TENSORS = {
    "attention.self.query": "attn_q",
    "attention.self.key": "attn_k",
    "attention.self.value": "attn_v",
    "attention.output.dense": "attn_output",
    "attention.output.LayerNorm": "attn_output_norm",
    "intermediate.dense": "ffn_up",
    "output.dense": "ffn_down",
    "output.LayerNorm": "layer_output_norm",
}
# Not used for embeddings (llama.cpp's converter drops them too).
SKIPPED = ("embeddings.position_ids", "pooler.dense.weight", "pooler.dense.bias")
KEPT_F32 = ("position_embd.weight", "token_types.weight")


def gguf_name(hf_name):
    name = hf_name.removeprefix("bert.")
    if name in MODEL_TENSORS:
        return MODEL_TENSORS[name]
    parts = name.split(".")
    if parts[:2] == ["encoder", "layer"]:
        layer, module, kind = parts[2], ".".join(parts[3:-1]), parts[-1]
        if module in LAYER_TENSORS:
            return f"blk.{layer}.{LAYER_TENSORS[module]}.{kind}"
    sys.exit(f"bert_to_gguf: unexpected tensor '{hf_name}'")


def read_safetensors(data):
    (header_len,) = struct.unpack_from("<Q", data, 0)
    header = json.loads(data[8 : 8 + header_len])
    base = 8 + header_len
    tensors = []
    for name, info in header.items():
        if name == "__metadata__" or name in SKIPPED:
            continue
        if info["dtype"] != "F32":
            sys.exit(f"bert_to_gguf: tensor '{name}' is {info['dtype']}, expected F32")
        begin, end = info["data_offsets"]
        tensors.append((gguf_name(name), info["shape"], data[base + begin : base + end]))
    return tensors


def to_f16(raw):
    floats = array.array("f")
    floats.frombytes(raw)
    if sys.byteorder != "little":
        floats.byteswap()
    return struct.pack(f"<{len(floats)}e", *floats)  # round to nearest even


class Writer:
    def __init__(self):
        self.kv = io.BytesIO()
        self.count = 0

    def _string(self, out, s):
        b = s.encode("utf-8")
        out.write(struct.pack("<Q", len(b)) + b)

    def _key(self, key, vtype):
        self._string(self.kv, key)
        self.kv.write(struct.pack("<I", vtype))
        self.count += 1

    def uint32(self, key, v):
        self._key(key, UINT32)
        self.kv.write(struct.pack("<I", v))

    def float32(self, key, v):
        self._key(key, FLOAT32)
        self.kv.write(struct.pack("<f", v))

    def bool(self, key, v):
        self._key(key, BOOL)
        self.kv.write(struct.pack("<?", v))

    def string(self, key, v):
        self._key(key, STRING)
        self._string(self.kv, v)

    def strings(self, key, values):
        self._key(key, ARRAY)
        self.kv.write(struct.pack("<IQ", STRING, len(values)))
        for v in values:
            self._string(self.kv, v)

    def int32s(self, key, values):
        self._key(key, ARRAY)
        self.kv.write(struct.pack("<IQ", INT32, len(values)))
        self.kv.write(struct.pack(f"<{len(values)}i", *values))

    def write(self, path, tensors):
        infos, offset = io.BytesIO(), 0
        for name, shape, ggml_type, data in tensors:
            self._string(infos, name)
            dims = list(reversed(shape))  # GGUF lists the row length first
            infos.write(struct.pack(f"<I{len(dims)}QIQ", len(dims), *dims, ggml_type, offset))
            offset += -(-len(data) // ALIGNMENT) * ALIGNMENT
        with open(path, "wb") as out:
            out.write(b"GGUF" + struct.pack("<IQQ", 3, len(tensors), self.count))
            out.write(self.kv.getvalue() + infos.getvalue())
            out.write(b"\0" * (-out.tell() % ALIGNMENT))
            for _, _, _, data in tensors:
                out.write(data + b"\0" * (-len(data) % ALIGNMENT))


def vocabulary(tokenizer):
    model = tokenizer["model"]
    if model["type"] != "WordPiece" or model.get("continuing_subword_prefix", "##") != "##":
        sys.exit("bert_to_gguf: the tokenizer is not WordPiece with ## continuations")
    by_id = sorted(model["vocab"].items(), key=lambda item: item[1])
    if [i for _, i in by_id] != list(range(len(by_id))):
        sys.exit("bert_to_gguf: the vocabulary's ids are not 0..n-1")
    special = {t["content"] for t in tokenizer.get("added_tokens", []) if t.get("special")}
    tokens, types = [], []
    # llama.cpp's spelling: a word start gets U+2581 in front, a continuation loses its ##,
    # special tokens stay as they are.
    for token, _ in by_id:
        if token in special:
            tokens.append(token)
            types.append(TOKEN_CONTROL)
        else:
            tokens.append(token[2:] if token.startswith("##") else "\u2581" + token)
            types.append(TOKEN_NORMAL)
    return [t for t, _ in by_id], tokens, types


def main():
    if len(sys.argv) != 4:
        sys.exit("usage: bert_to_gguf.py MODEL.zip NAME OUT.gguf")
    zip_path, name, out_path = sys.argv[1:]
    with zipfile.ZipFile(zip_path) as z:
        config = json.loads(z.read("config.json"))
        pooling_config = json.loads(z.read("1_Pooling/config.json"))
        tokenizer = json.loads(z.read("tokenizer.json"))
        weights = z.read("model.safetensors")
    if config.get("model_type") != "bert" or config.get("hidden_act") != "gelu":
        sys.exit("bert_to_gguf: config.json is not a BERT model with GELU")
    if config.get("position_embedding_type", "absolute") != "absolute":
        sys.exit("bert_to_gguf: only absolute position embeddings are supported")
    poolings = [v for k, v in POOLING.items() if pooling_config.get(k)]
    if len(poolings) != 1:
        sys.exit("bert_to_gguf: 1_Pooling/config.json names no mean or CLS pooling")

    plain, tokens, types = vocabulary(tokenizer)
    special_ids = {
        "bos_token_id": "[CLS]",
        "eos_token_id": "[SEP]",
        "unknown_token_id": "[UNK]",
        "seperator_token_id": "[SEP]",  # GGUF's spelling
        "padding_token_id": "[PAD]",
        "cls_token_id": "[CLS]",
        "mask_token_id": "[MASK]",
    }
    w = Writer()
    w.string("general.architecture", "bert")
    w.string("general.name", name)
    w.uint32("general.file_type", 1)  # mostly F16
    w.uint32("bert.context_length", config["max_position_embeddings"])
    w.uint32("bert.embedding_length", config["hidden_size"])
    w.uint32("bert.feed_forward_length", config["intermediate_size"])
    w.uint32("bert.block_count", config["num_hidden_layers"])
    w.uint32("bert.attention.head_count", config["num_attention_heads"])
    w.float32("bert.attention.layer_norm_epsilon", config["layer_norm_eps"])
    w.bool("bert.attention.causal", False)
    w.uint32("bert.pooling_type", poolings[0])
    w.uint32("tokenizer.ggml.token_type_count", config["type_vocab_size"])
    w.string("tokenizer.ggml.model", "bert")
    w.strings("tokenizer.ggml.tokens", tokens)
    w.int32s("tokenizer.ggml.token_type", types)
    for key, token in special_ids.items():
        w.uint32(f"tokenizer.ggml.{key}", plain.index(token))
    w.bool("tokenizer.ggml.normalizer.lowercase", tokenizer["normalizer"].get("lowercase", True))

    tensors = []
    for gname, shape, raw in read_safetensors(weights):
        matrix = len(shape) == 2 and gname not in KEPT_F32
        tensors.append((gname, shape, F16 if matrix else F32, to_f16(raw) if matrix else raw))
    if len(tensors) != len(MODEL_TENSORS) + len(LAYER_TENSORS) * 2 * config["num_hidden_layers"]:
        sys.exit(f"bert_to_gguf: {len(tensors)} tensors, not those of a BERT model")
    w.write(out_path, tensors)


if __name__ == "__main__":
    main()
