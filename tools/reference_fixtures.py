#!/usr/bin/env python3
"""Write one reference fixture (JSON) for one GGUF model, computed with
llama.cpp through llama-cpp-python (pinned; see make-reference-fixtures.sh).

The fixture holds, for a fixed set of prompts: llama.cpp's prompt token ids,
the top of the first next-token distribution, and a 64-token greedy
continuation (with the top-2 logits of every step); and, for a teacher-forced
run over the first 1024 tokens of the GPL-3 text: the argmax at every
position and llama-perplexity-style perplexity, computed here and (when the
binary is given) by the real llama-perplexity.

The schema is described in tests/fixtures/reference/README.md. Run it via
tools/make-reference-fixtures.sh, which sets up the interpreter and the model
variants.
"""

import argparse
import hashlib
import json
import math
import os
import re
import subprocess
import sys

import numpy as np

import llama_cpp
from llama_cpp import Llama

SCHEMA_VERSION = 1

# Fixed settings, shared by every llama.cpp context made here.
N_CTX = 256
N_BATCH = 256
N_UBATCH = 256
FLASH_ATTN = False
SEED = 42  # irrelevant to greedy/argmax results, recorded for completeness
N_PREDICT = 64
TOP_K_FIRST = 10

# Teacher-forced run (llama-perplexity style).
TF_TOKENS = 1024
TF_N_CTX = 256

PROMPTS = [
    ("plain",
     "The history of the city begins in the early Middle Ages, when a small "
     "settlement grew up around"),
    ("chat_question",
     "<|im_start|>user\nWhat is the capital of France?<|im_end|>\n"
     "<|im_start|>assistant\n"),
    ("chat_system",
     "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained "
     "by Hugging Face<|im_end|>\n<|im_start|>user\nExplain what a prime number "
     "is in one sentence.<|im_end|>\n<|im_start|>assistant\n"),
    ("code",
     "def fibonacci(n):\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n"),
    ("list",
     "Things to pack for a weekend hiking trip:\n1. Water bottle\n2. Rain jacket\n3."),
    ("numbers",
     "1, 1, 2, 3, 5, 8, 13, 21, 34,"),
    ("french",
     "La tour Eiffel, construite pour l'Exposition universelle de 1889, est"),
    ("short",
     "Once upon"),
    ("json",
     "{\"name\": \"Alice\", \"age\": 30, \"languages\": [\"English\", "),
    ("long",
     "Lighthouses were once the most important aids to navigation along "
     "dangerous coasts. Before electricity, keepers lived in small houses at "
     "the base of the tower and climbed the stairs several times each night "
     "to trim the wicks, wind the clockwork that turned the lens, and polish "
     "the glass so that the beam would carry as far as possible across the "
     "water. The work was lonely and often dangerous, especially during "
     "winter storms, when waves could reach the lantern room itself. Over the "
     "twentieth century most lights were automated, and today satellite "
     "navigation has made many of them unnecessary, yet people still visit "
     "them in large numbers because they remind us of a time when a single "
     "light in the darkness could decide whether a ship reached the harbour. "
     "In many countries"),
]


def f32(x):
    """A float32 as the shortest decimal that reads back to the same float32."""
    return float(str(np.float32(x)))


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def make_llama(model, n_threads, logits_all):
    return Llama(
        model_path=model,
        n_ctx=N_CTX,
        n_batch=N_BATCH,
        n_ubatch=N_UBATCH,
        n_threads=n_threads,
        n_threads_batch=n_threads,
        n_gpu_layers=0,
        flash_attn=FLASH_ATTN,
        logits_all=logits_all,
        seed=SEED,
        verbose=False,
    )


def last_logits(llm):
    """Logits of the last output row of the last decode (a copy, float32)."""
    ptr = llama_cpp.llama_get_logits_ith(llm._ctx.ctx, -1)
    return np.ctypeslib.as_array(ptr, shape=(llm.n_vocab(),)).copy()


def topk(logits, k):
    """Top-k (ids, logits); equal logits are ordered by ascending id."""
    order = np.lexsort((np.arange(logits.size), -logits.astype(np.float64)))
    ids = order[:k]
    return [int(i) for i in ids], [f32(logits[i]) for i in ids]


def logsumexp(logits):
    x = logits.astype(np.float64)
    m = x.max()
    return float(m + math.log(np.exp(x - m).sum()))


def argmax(logits):
    return int(np.argmax(logits))  # first (lowest id) of equal maxima


def vocab_info(llm):
    vocab = llm._model.vocab
    return {
        "n_vocab": int(llm.n_vocab()),
        "add_bos": bool(llama_cpp.llama_vocab_get_add_bos(vocab)),
        "bos_id": int(llama_cpp.llama_vocab_bos(vocab)),
        "eos_id": int(llama_cpp.llama_vocab_eos(vocab)),
    }


def run_prompts(model, n_threads):
    llm = make_llama(model, n_threads, logits_all=False)
    info = vocab_info(llm)
    add_bos = info["add_bos"]
    out = []
    for name, text in PROMPTS:
        ids = llm.tokenize(text.encode("utf-8"), add_bos=add_bos, special=True)
        if len(ids) + N_PREDICT > N_CTX:
            raise SystemExit(f"prompt {name!r} too long for n_ctx={N_CTX}")
        llm.reset()
        llm._ctx.kv_cache_clear()
        llm.eval(ids)
        logits = last_logits(llm)
        top_ids, top_vals = topk(logits, TOP_K_FIRST)
        first = {
            "top10_ids": top_ids,
            "top10_logits": top_vals,
            "max_logit": f32(logits.max()),
            "min_logit": f32(logits.min()),
            "logsumexp": logsumexp(logits),
        }
        gen, top2_ids, top2_vals = [], [], []
        for step in range(N_PREDICT):
            if step > 0:
                llm.eval([gen[-1]])
                logits = last_logits(llm)
            t_ids, t_vals = topk(logits, 2)
            gen.append(t_ids[0])
            top2_ids.append(t_ids)
            top2_vals.append(t_vals)
        assert gen[0] == top_ids[0]
        text_out = llm.detokenize(gen, prev_tokens=ids, special=True).decode("utf-8", "replace")
        print(f"  {name:14s} {len(ids):3d} prompt tokens -> {text_out[:60]!r}", file=sys.stderr)
        out.append({
            "name": name,
            "text": text,
            "ids": [int(i) for i in ids],
            "first_step": first,
            "greedy": {
                "ids": gen,
                "top2_ids": top2_ids,
                "top2_logits": top2_vals,
                "text": text_out,
            },
        })
    llm.close()
    return info, out


def read_llama_perplexity_text(path):
    """The text exactly as llama-perplexity -f reads it: the whole file, with
    one trailing newline removed."""
    with open(path, "rb") as f:
        data = f.read()
    if data.endswith(b"\n"):
        data = data[:-1]
    return data


def run_teacher_forced(model, n_threads, add_bos, text_path):
    llm = make_llama(model, n_threads, logits_all=True)
    text = read_llama_perplexity_text(text_path)
    # llama-perplexity: common_tokenize(ctx, text, add_special=true,
    # parse_special=false); add_special adds BOS only when the model says so.
    all_ids = llm.tokenize(text, add_bos=add_bos, special=False)
    if len(all_ids) < TF_TOKENS:
        raise SystemExit(f"{text_path} has only {len(all_ids)} tokens")
    ids = [int(i) for i in all_ids[:TF_TOKENS]]
    n_windows = TF_TOKENS // TF_N_CTX
    first = TF_N_CTX // 2
    bos = llama_cpp.llama_vocab_bos(llm._model.vocab)

    windows = []
    nll_sum = 0.0
    nll2_sum = 0.0
    count = 0
    for w in range(n_windows):
        start = w * TF_N_CTX
        win = ids[start:start + TF_N_CTX]
        if add_bos:  # as llama-perplexity: first token of each window becomes BOS
            win = [bos] + win[1:]
        llm.reset()
        llm._ctx.kv_cache_clear()
        llm.eval(win)
        logits = np.array(llm.scores[:TF_N_CTX, :], dtype=np.float32)
        am = [argmax(row) for row in logits]
        srt = np.sort(logits, axis=1)
        gap = [f32(srt[j, -1] - srt[j, -2]) for j in range(TF_N_CTX)]
        w_nll = 0.0
        w_nll2 = 0.0
        for j in range(first, TF_N_CTX - 1):
            row = logits[j].astype(np.float64)
            m = row.max()
            lse = m + math.log(np.exp(row - m).sum())
            v = lse - row[ids[start + j + 1]]
            w_nll += v
            w_nll2 += v * v
        w_count = TF_N_CTX - 1 - first
        nll_sum += w_nll
        nll2_sum += w_nll2
        count += w_count
        windows.append({
            "start": start,
            "argmax": am,
            "top2_gap": gap,
            "nll_sum": w_nll,
            "count": w_count,
            "ppl": math.exp(w_nll / w_count),
        })
        print(f"  window {w}: ppl {math.exp(w_nll / w_count):.4f}, "
              f"running ppl {math.exp(nll_sum / count):.4f}", file=sys.stderr)
    llm.close()

    mean = nll_sum / count
    mean2 = nll2_sum / count
    ppl = math.exp(mean)
    var = mean2 - mean * mean
    err = ppl * math.sqrt(var / (count - 1)) if var > 0 else None
    return {
        "text_file": text_path,
        "text_sha256": sha256_file(text_path),
        "tokenization": ("whole file, one trailing newline removed (as llama-perplexity -f "
                         "reads it), tokenized with add_bos from the model metadata and "
                         "parse_special=false (as llama-perplexity does); the first n_tokens "
                         "ids are used"),
        "n_tokens": TF_TOKENS,
        "ids": ids,
        "n_ctx": TF_N_CTX,
        "n_windows": n_windows,
        "first_scored": first,
        "logits_all": True,
        "windows": windows,
        "perplexity": {
            "count": count,
            "nll_mean": mean,
            "nll2_mean": mean2,
            "ppl": ppl,
            "ppl_error": err,
        },
    }


FINAL_RE = re.compile(r"Final estimate: PPL = ([0-9.]+) \+/- ([0-9.]+)")


def run_llama_perplexity(binary, model, text_path, n_threads, n_windows):
    args = [binary, "-m", model, "-f", text_path,
            "-c", str(TF_N_CTX), "-b", str(TF_N_CTX), "-ub", str(TF_N_CTX),
            "--chunks", str(n_windows), "-t", str(n_threads), "-tb", str(n_threads),
            "-fa", "on" if FLASH_ATTN else "off", "-ngl", "0",
            "-ctk", "f16", "-ctv", "f16", "--seed", str(SEED)]
    # Its asynchronous logger has been seen to lose the last lines of output
    # now and then (exit status 0 all the same): try again in that case.
    for attempt in range(1, 4):
        print(f"  running {os.path.basename(binary)} (attempt {attempt}) ...", file=sys.stderr)
        res = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, check=False)
        output = res.stdout.decode("utf-8", "replace")
        m = FINAL_RE.search(output)
        if res.returncode == 0 and m:
            break
        sys.stderr.write(output[-2000:] + "\n")
        print(f"  llama-perplexity gave no final estimate (rc={res.returncode})", file=sys.stderr)
    else:
        raise SystemExit("llama-perplexity failed 3 times")
    chunks = re.search(r"calculating perplexity over (\d+) chunks, n_ctx=(\d+)", output)
    if not chunks or int(chunks.group(1)) != n_windows or int(chunks.group(2)) != TF_N_CTX:
        raise SystemExit("llama-perplexity did not use the expected chunks: "
                         + (chunks.group(0) if chunks else "no chunk line"))
    shown = ["llama-perplexity", "-m", "MODEL", "-f", "TEXT"] + args[5:]
    return {
        "command": " ".join(shown),
        "ppl": float(m.group(1)),
        "ppl_error": float(m.group(2)),
        "output_line": m.group(0),
    }


def dump(doc, out):
    """Compact JSON: one top-level key per line, one prompt / window per line."""
    def j(v):
        return json.dumps(v, ensure_ascii=False, separators=(",", ":"))

    lines = ["{"]
    keys = list(doc.keys())
    for k_i, key in enumerate(keys):
        sep = "," if k_i + 1 < len(keys) else ""
        val = doc[key]
        if key == "prompts":
            lines.append(f"  {j(key)}: [")
            for i, p in enumerate(val):
                lines.append(f"    {j(p)}" + ("," if i + 1 < len(val) else ""))
            lines.append("  ]" + sep)
        elif key == "teacher_forced":
            lines.append(f"  {j(key)}: {{")
            sub = list(val.keys())
            for s_i, s in enumerate(sub):
                ssep = "," if s_i + 1 < len(sub) else ""
                if s == "windows":
                    lines.append(f"    {j(s)}: [")
                    for i, w in enumerate(val[s]):
                        lines.append(f"      {j(w)}" + ("," if i + 1 < len(val[s]) else ""))
                    lines.append("    ]" + ssep)
                else:
                    lines.append(f"    {j(s)}: {j(val[s])}{ssep}")
            lines.append("  }" + sep)
        else:
            lines.append(f"  {j(key)}: {j(val)}{sep}")
    lines.append("}")
    tmp = out + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    with open(tmp, encoding="utf-8") as f:
        assert json.load(f) == json.loads(json.dumps(doc))
    os.replace(tmp, out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", required=True, help="GGUF model file")
    ap.add_argument("--model-name", required=True,
                    help="the model path to record (relative to the repository)")
    ap.add_argument("--made-by", default=None,
                    help="command that produced the model file (for variants)")
    ap.add_argument("--source-sha256", default=None,
                    help="sha256 of the file the variant was made from")
    ap.add_argument("--text", default="/usr/share/common-licenses/GPL-3")
    ap.add_argument("--llama-perplexity", default=None,
                    help="llama-perplexity binary (optional)")
    ap.add_argument("--llama-cpp-commit", default=None)
    ap.add_argument("--threads", type=int, default=1,
                    help="llama.cpp threads for the python runs (results do not depend "
                         "on it; 1 is far faster on a busy machine)")
    ap.add_argument("--lp-threads", type=int, default=2,
                    help="threads for llama-perplexity")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()

    print(f"{args.model_name}: prompts", file=sys.stderr)
    vocab, prompts = run_prompts(args.model, args.threads)
    add_bos = vocab["add_bos"]
    print(f"{args.model_name}: teacher-forced run", file=sys.stderr)
    tf = run_teacher_forced(args.model, args.threads, add_bos, args.text)
    lp = None
    if args.llama_perplexity:
        lp = run_llama_perplexity(args.llama_perplexity, args.model, args.text,
                                  args.lp_threads, tf["n_windows"])
    tf["llama_perplexity"] = lp
    pp = tf["perplexity"]
    print(f"{args.model_name}: PPL python {pp['ppl']:.4f} +/- {pp['ppl_error']:.5f}; "
          f"llama-perplexity " + (lp["output_line"] if lp else "not run"), file=sys.stderr)

    doc = {
        "schema_version": SCHEMA_VERSION,
        "generator": "tools/make-reference-fixtures.sh (tools/reference_fixtures.py)",
        "library": {
            "name": "llama-cpp-python",
            "version": llama_cpp.__version__,
            "llama_cpp_commit": args.llama_cpp_commit,
            "backend": "CPU",
            "system_info": llama_cpp.llama_print_system_info().decode("utf-8", "replace").strip(),
        },
        "model": {
            "file": args.model_name,
            "sha256": sha256_file(args.model),
            "made_by": args.made_by,
            "source_sha256": args.source_sha256,
        },
        "vocab": vocab,
        "settings": {
            "n_ctx": N_CTX,
            "n_batch": N_BATCH,
            "n_ubatch": N_UBATCH,
            "n_threads": args.threads,
            "n_threads_batch": args.threads,
            "n_gpu_layers": 0,
            "type_k": "f16",
            "type_v": "f16",
            "flash_attn": FLASH_ATTN,
            "seed": SEED,
            "add_bos": add_bos,
            "parse_special": True,
            "logits_all": False,
            "n_predict": N_PREDICT,
            "sampling": "greedy: argmax of the logits, lowest id among equal maxima; "
                        "EOS is not a stop condition",
            "eval": "prompt evaluated in one llama_decode from an empty cache, then one "
                    "token per llama_decode with the KV cache",
        },
        "prompts": prompts,
        "teacher_forced": tf,
    }
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    dump(doc, args.out)
    print(f"wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
