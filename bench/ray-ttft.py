#!/usr/bin/env python3
"""ray-ttft: what kite.ray's ingress adds to the time to first token, paired.

With a kite.ray endpoint running (--url), it takes one replica's own kite serve from
/kite/replicas and sends N streamed /v1/completions one at a time, alternately through the
ingress and straight to that kite serve (the order flips every pair), each with a fresh prompt
(no prefix-cache hit) and 8 output tokens. Both paths reach the same engine at nearly the same
moment, so a busy host slows both alike: the paired differences isolate the ingress's cost.
Prints one JSON line: TTFT p50 and mean of each path and the p50 of the differences, in ms.
Standard library only.

  bench/ray-ttft.py --url http://127.0.0.1:8000 --pairs 60
"""

import argparse
import http.client
import json
import random
import statistics
import time
import urllib.parse
import urllib.request


def ttft(url: str, prompt: str) -> float:
    """Seconds from sending the request to the first SSE event with text."""
    u = urllib.parse.urlparse(url)
    body = json.dumps({"model": "default", "prompt": prompt, "max_tokens": 8, "stream": True,
                       "temperature": 0, "ignore_eos": True}).encode()
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=120)
    start = time.perf_counter()
    conn.request("POST", "/v1/completions", body, {"Content-Type": "application/json"})
    response = conn.getresponse()
    if response.status != 200:
        raise SystemExit(f"ray-ttft: {url} answered {response.status}: {response.read()[:200]}")
    first = None
    for line in response:
        if first is None and line.startswith(b"data: {"):
            first = time.perf_counter() - start
        if line.startswith(b"data: [DONE]"):
            break
    conn.close()
    return first


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--url", required=True, help="the kite.ray endpoint")
    ap.add_argument("--pairs", type=int, default=60)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    with urllib.request.urlopen(a.url + "/kite/replicas", timeout=30) as r:
        replicas = json.load(r)
    direct = next(iter(replicas.values()))["url"]
    rng = random.Random(a.seed)
    words = "river stone cloud lantern harbor meadow copper violet engine orchard".split()
    through, alone = [], []
    for i in range(a.pairs + 2):  # the first two pairs warm both paths up
        prompts = [" ".join(rng.choice(words) for _ in range(24)) + f" {i}-{k}" for k in (0, 1)]
        order = [(a.url, through), (direct, alone)]
        if i % 2:
            order.reverse()
        for (url, out), prompt in zip(order, prompts):
            t = ttft(url, prompt)
            if i >= 2:
                out.append(t)
    diffs = [1000 * (x - y) for x, y in zip(through, alone)]
    ms = lambda v: round(1000 * v, 2)  # noqa: E731
    print(json.dumps({
        "pairs": a.pairs, "ingress_ttft_p50_ms": ms(statistics.median(through)),
        "kite_serve_ttft_p50_ms": ms(statistics.median(alone)),
        "ingress_ttft_mean_ms": ms(statistics.mean(through)),
        "kite_serve_ttft_mean_ms": ms(statistics.mean(alone)),
        "added_p50_ms": round(statistics.median(diffs), 2), "replica": direct}))


if __name__ == "__main__":
    main()
