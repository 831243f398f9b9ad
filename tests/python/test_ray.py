"""kite.ray on a local Ray cluster: two replicas answer as kite.LLM does, and equal prefixes
land on one replica. Skipped without Ray (not in CI's packages: it is large and starts in
tens of seconds); run it with ray[serve] installed."""

import json
import socket
import urllib.request

import pytest
from conftest import MODEL

ray = pytest.importorskip("ray")
serve = pytest.importorskip("ray.serve")

from kite import SamplingParams  # noqa: E402
from kite.ray import build_app  # noqa: E402


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def post(port: int, body: dict) -> dict:
    req = urllib.request.Request(f"http://127.0.0.1:{port}/", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=120) as r:
        return json.loads(r.read())


def test_two_replicas_prefix_affine(llm):
    port = free_port()
    ray.init(num_cpus=2, include_dashboard=False)
    try:
        serve.start(http_options={"host": "127.0.0.1", "port": port})
        serve.run(build_app(str(MODEL), 2, threads=1, max_seqs=2, prefix_chars=20),
                  route_prefix="/")
        params = {"temperature": 0, "max_tokens": 16}
        prompt = "You are a poet. Write about the sea:"
        answer = post(port, {"prompt": prompt, "params": params})
        assert answer["text"] == llm.generate(prompt, SamplingParams(**params))[0].text
        replicas = {post(port, {"prompt": prompt + f" take {i}", "params": params})["replica"]
                    for i in range(3)}
        assert replicas == {answer["replica"]}
    finally:
        serve.shutdown()
        ray.shutdown()
