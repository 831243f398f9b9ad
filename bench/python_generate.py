"""Decode throughput of kite.LLM.generate, for comparison with `kite bench -b B`'s
Bx(S+N) test: B prompts of S synthetic tokens, N greedy tokens each, end-of-text ignored.

kite bench times only the generation (its prefill runs untimed); this script times the
whole generate call, so compare with short prompts (-s 1, and --batch-prompt 1 for kite
bench), where the prefill is one small pass: B*N tokens over the call's time, Python's
per-step work included, a slight underestimate.

  PYTHONPATH=build/python:python .venv/bin/python bench/python_generate.py -t 2 -b 32 -s 1
"""

import argparse
import random
import time

import kite


def timed(llm, prompts, n):
    params = kite.SamplingParams(temperature=0, max_tokens=n, ignore_eos=True)
    start = time.perf_counter()
    outs = llm.generate(prompts, params)
    assert all(len(o.token_ids) == n for o in outs)
    return time.perf_counter() - start


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-m", "--model", default=None)
    ap.add_argument("-t", "--threads", type=int, default=None)
    ap.add_argument("-b", "--batch", type=int, default=32)
    ap.add_argument("-s", "--prompt", type=int, default=1)
    ap.add_argument("-n", "--n-gen", type=int, default=128)
    ap.add_argument("-r", "--reps", type=int, default=3)
    a = ap.parse_args()
    with kite.LLM(a.model, threads=a.threads, max_seqs=a.batch) as llm:
        rng = random.Random(0)
        vocab = 1000  # ordinary tokens, far from the special ones at the vocabulary's ends
        rates = []
        for rep in range(a.reps + 1):  # the first is a warm-up
            # New prompts each time, so no run reuses another's cached prefix.
            prompts = [[rng.randrange(100, 100 + vocab) for _ in range(a.prompt)]
                       for _ in range(a.batch)]
            whole = timed(llm, prompts, a.n_gen)
            if rep > 0:
                rates.append(a.batch * a.n_gen / whole)
        mean = sum(rates) / len(rates)
        print(f"python generate {a.batch}x({a.prompt}+{a.n_gen}): {mean:.1f} tok/s "
              f"(runs: {', '.join(f'{r:.1f}' for r in rates)})")


if __name__ == "__main__":
    main()
