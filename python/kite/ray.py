"""Ray Serve scale-out: N replicas of kite.LLM behind one HTTP endpoint, prefix-affine.

    python -m kite.ray --model M --replicas N [--port 8000] [--threads T] [--max-seqs S]

POST / with JSON {"prompt": "...", "params": {SamplingParams fields}} answers
{"text", "token_ids", "finish_reason", "replica"}. Each replica is its own deployment with one
LLM; the ingress routes by prompt prefix (kite.routing.PrefixRouter), so requests sharing a
system prompt reuse one replica's prefix cache. Within a replica, concurrent requests batch
together in its engine (each runs as an astream; every engine step advances all of them).
Needs ``pip install "ray[serve]"`` (not a dependency of kite).
"""

from __future__ import annotations

import argparse
import time
from typing import Any, Dict, List, Optional


def build_app(model: Optional[str], replicas: int, threads: Optional[int] = None,
              max_seqs: int = 16, prefix_chars: int = 256) -> Any:
    """The Ray Serve application (serve.run it): an ingress and `replicas` LLM deployments."""
    from ray import serve

    # A replica reserves the CPUs its engine's threads use; the router, which only forwards,
    # reserves none (else two replicas on two CPUs would leave it unscheduled).
    @serve.deployment(num_replicas=1, max_ongoing_requests=4 * max_seqs,
                      ray_actor_options={"num_cpus": threads or 1})
    class KiteReplica:
        def __init__(self, index: int) -> None:
            from kite import LLM

            self.index = index
            self.llm = LLM(model, threads=threads, max_seqs=max_seqs)

        async def generate(self, request: Dict[str, Any]) -> Dict[str, Any]:
            from kite import SamplingParams

            params = SamplingParams(**request.get("params", {}))
            stream = self.llm.stream(request["prompt"], params)
            text = "".join([piece async for piece in _pieces(stream)])
            return {"text": text, "finish_reason": stream.finish_reason, "replica": self.index}

    @serve.deployment(max_ongoing_requests=1024, ray_actor_options={"num_cpus": 0})
    class KiteRouter:
        def __init__(self, handles: List[Any]) -> None:
            from kite.routing import PrefixRouter

            self.handles = handles
            self.router = PrefixRouter(len(handles), prefix_chars=prefix_chars)

        async def __call__(self, http_request: Any) -> Dict[str, Any]:
            request = await http_request.json()
            if not isinstance(request.get("prompt"), str):
                return {"error": "the request needs a string 'prompt'"}
            replica = self.router.acquire(request["prompt"])
            try:
                return await self.handles[replica].generate.remote(request)
            finally:
                self.router.release(replica)

    return KiteRouter.bind(
        [KiteReplica.options(name=f"kite_{i}").bind(i) for i in range(replicas)]
    )


async def _pieces(stream: Any):
    from kite._stream import astream_pieces

    async for piece in astream_pieces(stream):
        yield piece


def main(argv: Optional[List[str]] = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m kite.ray", description=__doc__.splitlines()[0])
    ap.add_argument("--model", "-m", default=None, help="path or installed name, as kite -m")
    ap.add_argument("--replicas", "-r", type=int, default=2)
    ap.add_argument("--threads", "-t", type=int, default=None, help="threads per replica")
    ap.add_argument("--max-seqs", type=int, default=16, help="sequences per replica at once")
    ap.add_argument("--port", type=int, default=8000)
    ap.add_argument("--prefix-chars", type=int, default=256,
                    help="characters of the prompt that choose its replica")
    a = ap.parse_args(argv)
    if a.replicas < 1:
        ap.error("--replicas must be at least 1")
    from ray import serve

    serve.start(http_options={"host": "127.0.0.1", "port": a.port})
    serve.run(build_app(a.model, a.replicas, a.threads, a.max_seqs, a.prefix_chars),
              route_prefix="/")
    print(f"kite.ray: {a.replicas} replicas on http://127.0.0.1:{a.port}/ (Ctrl-C stops)")
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        serve.shutdown()


if __name__ == "__main__":
    main()
