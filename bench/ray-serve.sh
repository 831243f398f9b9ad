#!/usr/bin/env bash
# kite.ray's targets (bench/RESULTS.md, "Ray Serve"), on this machine:
#  - throughput: 96 streamed completions, 32 clients at once (prompts 32:16 words, 64:8 output
#    tokens, ignore_eos) through `python -m kite.ray` with 2 replicas x 1 thread, then with
#    1 replica x 1 thread: aggregate output tokens/s;
#  - overhead: bench/ray-ttft.py on the 1-replica endpoint: 60 pairs of requests one at a
#    time, through the ingress and straight to that replica's kite serve, alternated: TTFT p50
#    of each and of the paired differences (a busy host slows both alike);
#  - for reference, `kite serve -t 1` alone (same flags) with the 32 clients.
# Rounds alternate (KITE_BENCH_ROUNDS, default 2), each printing JSON lines with a "setup"
# field. Installs ray[serve] (python/requirements-ray.txt) into .venv.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds="${KITE_BENCH_ROUNDS:-2}"
py=.venv/bin/python
$py -m pip install --quiet --disable-pip-version-check -r python/requirements-ray.txt
export PYTHONPATH="$PWD/build/python:$PWD/python"
export KITE_BIN="${KITE_BIN:-$PWD/build/bin/kite}"
load=("$py" bench/serve-load --json --seed 1 --threads 1 --slots 32 --ctx 512)
many=(--requests 96 --concurrency 32 --prompt-tokens 32:16 --output-tokens 64:8)
log=$(mktemp)
ray_pid=""
trap '[ -n "$ray_pid" ] && kill -TERM "$ray_pid" 2>/dev/null; rm -f "$log"' EXIT

# start_ray REPLICAS PORT: kite.ray with the flags serve-load gives its own kite serve.
start_ray() {
  "$py" -m kite.ray --model models/default.gguf --replicas "$1" --threads 1 --num-cpus 2 \
    --max-seqs 32 --port "$2" --serve-arg=-c --serve-arg=512 > "$log" 2>&1 &
  ray_pid=$!
  for _ in $(seq 600); do
    grep -q "serving on" "$log" && return 0
    kill -0 "$ray_pid" 2>/dev/null || { cat "$log" >&2; exit 1; }
    sleep 0.5
  done
  echo "kite.ray did not start" >&2
  exit 1
}
stop_ray() {
  kill -TERM "$ray_pid"
  wait "$ray_pid" || true
  ray_pid=""
}
tag() { sed "s/^{/{\"setup\": \"$1\", /"; }

for round in $(seq "$rounds"); do
  echo "# round $round" >&2
  for replicas in 2 1; do
    start_ray "$replicas" 8765
    "${load[@]}" --url http://127.0.0.1:8765 "${many[@]}" | tag "ray ${replicas}x1 32 clients"
    if [ "$replicas" = 1 ]; then
      "$py" bench/ray-ttft.py --url http://127.0.0.1:8765 --pairs 60 | tag "ttft paired"
    fi
    stop_ray
  done
  "${load[@]}" --server kite "${many[@]}" | tag "kite serve 32 clients"
done
