"""Kite's Python generate of B prompts beside llama-cpp-python on the same GGUF file.

llama-cpp-python's Llama runs one sequence at a time, so its B prompts go one after another;
kite.LLM.generate takes all B at once into the engine's continuous batching. Both generate N
greedy tokens per prompt with end-of-text ignored, from the same B prompts of S token ids, on
the same threads; each side's time covers its prompts' prefill and decode. The rounds alternate
the two sides. Install llama-cpp-python with tools/llamacpp/install-python.sh first.

  PYTHONPATH=build/python:python .venv/bin/python bench/python_llamacpp.py -m models/default.gguf
"""

import argparse
import random
import time

import llama_cpp

import kite


def prompts_for(round_index, batch, length):
    # Ordinary token ids, new each round, so no run reuses another's cached prefix.
    rng = random.Random(round_index)
    return [[rng.randrange(100, 1100) for _ in range(length)] for _ in range(batch)]


def kite_rate(llm, prompts, n):
    params = kite.SamplingParams(temperature=0, max_tokens=n, ignore_eos=True)
    start = time.perf_counter()
    outs = llm.generate(prompts, params)
    elapsed = time.perf_counter() - start
    assert all(len(o.token_ids) == n for o in outs)
    return len(prompts) * n / elapsed


def llamacpp_rate(llm, prompts, n):
    start = time.perf_counter()
    for prompt in prompts:
        made = 0
        # Llama.generate samples forever (stopping is the caller's): greedy at temp 0.
        for _ in llm.generate(prompt, temp=0.0, reset=True):
            made += 1
            if made == n:
                break
    return len(prompts) * n / (time.perf_counter() - start)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-m", "--model", default="models/default.gguf")
    ap.add_argument("-t", "--threads", type=int, default=2)
    ap.add_argument("-b", "--batch", type=int, default=32)
    ap.add_argument("-s", "--prompt", type=int, default=16)
    ap.add_argument("-n", "--n-gen", type=int, default=128)
    ap.add_argument("-r", "--rounds", type=int, default=2)
    a = ap.parse_args()
    ctx = a.prompt + a.n_gen + 8
    ours = kite.LLM(a.model, threads=a.threads, max_seqs=a.batch)
    theirs = llama_cpp.Llama(model_path=a.model, n_threads=a.threads, n_threads_batch=a.threads,
                             n_ctx=ctx, n_batch=ctx, verbose=False)
    kite_rate(ours, prompts_for(1000, a.batch, a.prompt), 8)  # warm-up, both sides
    llamacpp_rate(theirs, prompts_for(1001, 2, a.prompt), 8)
    print(f"{a.batch} prompts x ({a.prompt} + {a.n_gen} tokens), {a.threads} threads, tok/s")
    print("| round | kite.LLM.generate (batched) | llama-cpp-python (one at a time) | ratio |")
    print("|---:|---:|---:|---:|")
    for r in range(a.rounds):
        prompts = prompts_for(r, a.batch, a.prompt)
        k = kite_rate(ours, prompts, a.n_gen)
        lc = llamacpp_rate(theirs, prompts, a.n_gen)
        print(f"| {r + 1} | {k:.1f} | {lc:.1f} | {k / lc:.2f}x |", flush=True)
    ours.close()


if __name__ == "__main__":
    main()
