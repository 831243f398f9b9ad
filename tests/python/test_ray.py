"""kite.ray on a local Ray cluster, driven by the openai client: `python -m kite.ray` with two
replicas of one thread answers as `kite serve` does (streaming included), a repeated
conversation returns to one replica (its prefix-cache hits in that replica's /metrics), and
killing a replica's engine mid-load loses no request. An opt-in tier, not in CI (ray[serve]
takes ~3 minutes to download, these tests 2 more): `bash scripts/test-ray.sh` installs Ray and
runs this file with KITE_TEST_RAY=1."""

import concurrent.futures
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time

import httpx
import pytest
from conftest import KITE_BIN, MODEL, ROOT

if os.environ.get("KITE_TEST_RAY") != "1":
    pytest.skip("the Ray tier is opt-in: bash scripts/test-ray.sh", allow_module_level=True)
pytest.importorskip("ray.serve")
openai = pytest.importorskip("openai")

TIMEOUT = 120
SYSTEM = ("You are a patient assistant for a shipping company. Answer in one short sentence, "
          "name the port when you know it, and never invent tracking numbers. ")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def kite_ray(*args, stderr=subprocess.PIPE):
    path = f"{ROOT / 'build' / 'python'}:{ROOT / 'python'}"
    env = dict(os.environ, PYTHONPATH=path, KITE_BIN=str(KITE_BIN))
    return subprocess.Popen([sys.executable, "-m", "kite.ray", "--model", str(MODEL),
                             "--threads", "1", "--num-cpus", "2", *args],
                            stdout=subprocess.PIPE, stderr=stderr, text=True, env=env)


# Two replicas either way: a fixed number (the ingress reaches each kite serve over HTTP) or
# Ray's autoscaling between 2 and 2 (requests go through Ray's handles and request router).
SCALING = {"fixed": ["--replicas", "2"],
           "autoscaling": ["--autoscaling-config",
                           '{"min_replicas": 2, "max_replicas": 2, "initial_replicas": 2}']}


@pytest.fixture(scope="module", params=list(SCALING))
def cluster(request):
    port = free_port()
    # Ray's log goes to a file: a pipe nobody reads would fill and block it.
    log = tempfile.TemporaryFile("w+")
    proc = kite_ray(*SCALING[request.param], "--port", str(port), "--max-seqs", "8",
                    "--serve-arg=-c", "--serve-arg=2048", "--serve-arg=--kv-mem",
                    "--serve-arg=128M", stderr=log)
    line = proc.stdout.readline()
    if "serving on" not in line:
        proc.kill()
        log.seek(0)
        pytest.fail("kite.ray did not start: " + line + log.read()[-2000:])
    yield f"http://127.0.0.1:{port}"
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(60)
    except subprocess.TimeoutExpired:
        proc.kill()
    log.close()


@pytest.fixture
def client(cluster):
    return openai.OpenAI(base_url=cluster + "/v1", api_key="unused", max_retries=0,
                         timeout=TIMEOUT)


def chat(client, messages, **kw):
    raw = client.chat.completions.with_raw_response.create(
        model="default", messages=messages, temperature=0, max_tokens=kw.pop("max_tokens", 16),
        **kw)
    return raw.parse(), raw.headers


def metric(url: str, name: str) -> float:
    text = httpx.get(url + "/metrics", timeout=10).text
    found = re.search(rf"^{name} (\S+)$", text, re.M)
    return float(found.group(1))


# First: it starts its own Ray instance, before the module's cluster exists.
def test_replicas_ray_cannot_place_exit_nonzero():
    proc = kite_ray("--replicas", "3", "--port", str(free_port()))
    out, err = proc.communicate(timeout=TIMEOUT)
    assert proc.returncode == 1
    assert "3 replicas x 1 threads need 3 CPUs; the Ray cluster has 2" in err


def test_answers_as_kite_serve(client):
    assert [m.id for m in client.models.list().data] == ["default"]
    messages = [{"role": "user", "content": "Name a large river."}]
    reply, headers = chat(client, messages)
    direct = openai.OpenAI(base_url=headers["x-kite-replica-url"] + "/v1", api_key="unused",
                           max_retries=0, timeout=TIMEOUT)
    alone = direct.chat.completions.create(model="default", messages=messages, temperature=0,
                                           max_tokens=16)
    assert reply.choices[0].message.content == alone.choices[0].message.content
    assert reply.choices[0].finish_reason == alone.choices[0].finish_reason
    assert reply.usage.model_dump() == alone.usage.model_dump()
    text = client.completions.create(model="default", prompt="The sea is", max_tokens=8,
                                     temperature=0)
    assert text.choices[0].text and text.usage.completion_tokens == 8


def test_streaming(client):
    messages = [{"role": "user", "content": "Count from one to five."}]
    whole, _ = chat(client, messages, max_tokens=24)
    pieces = [c.choices[0].delta.content or "" for c in client.chat.completions.create(
        model="default", messages=messages, temperature=0, max_tokens=24, stream=True)
        if c.choices]
    assert len([p for p in pieces if p]) > 3
    assert "".join(pieces) == whole.choices[0].message.content
    stream = client.completions.create(model="default", prompt="Once upon a time",
                                       max_tokens=12, temperature=0, stream=True)
    assert len([c.choices[0].text for c in stream if c.choices]) >= 12


def test_bad_request_is_kite_serves_400(client):
    with pytest.raises(openai.BadRequestError, match="temperature"):
        client.chat.completions.create(model="default", temperature=-1,
                                       messages=[{"role": "user", "content": "hi"}])


def test_conversation_returns_to_its_replica(client):
    messages = [{"role": "system", "content": SYSTEM * 3},
                {"role": "user", "content": "Where is my parcel?"}]
    first, headers = chat(client, messages)
    home = headers["x-kite-replica"]
    urls = {home: headers["x-kite-replica-url"]}
    hits_before = metric(urls[home], "kite_prefix_cache_hits_total")
    for turn in range(3):
        messages += [{"role": "assistant", "content": first.choices[0].message.content},
                     {"role": "user", "content": f"And the one from order {turn}?"}]
        first, headers = chat(client, messages)
        assert headers["x-kite-replica"] == home
    # The system prompt and the earlier turns were found in that replica's prefix cache.
    assert metric(urls[home], "kite_prefix_cache_hits_total") - hits_before > 3 * 100


def test_new_prefixes_spread_over_both_replicas(client):
    def ask(i):
        return chat(client, [{"role": "user", "content": f"{i} is my lucky number. Why?"}],
                    max_tokens=24)[1]["x-kite-replica"]

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        replicas = list(pool.map(ask, range(16)))
    assert len(set(replicas)) == 2, replicas


def test_killed_replica_loses_no_request(cluster, client):
    _, headers = chat(client, [{"role": "user", "content": "warm up"}], max_tokens=1)
    victim = int(headers["x-kite-replica-pid"])

    def ask(i):
        reply, headers = chat(client, [{"role": "user", "content": f"Tell a story about {i}."}],
                              max_tokens=48)
        return reply.choices[0].finish_reason, headers["x-kite-replica-pid"]

    def ask_streaming(i):
        try:
            pieces = client.completions.create(model="default", prompt=f"Story {i}:",
                                               max_tokens=48, temperature=0, stream=True)
            return "".join(c.choices[0].text for c in pieces if c.choices)
        except openai.APIError as e:  # broke after its first bytes: a clear error, no hang
            assert "failed mid-stream" in str(e)
            return None

    with concurrent.futures.ThreadPoolExecutor(16) as pool:
        answers = [pool.submit(ask, i) for i in range(24)]
        streams = [pool.submit(ask_streaming, i) for i in range(8)]
        time.sleep(1.5)
        os.kill(victim, signal.SIGKILL)
        results = [a.result(timeout=TIMEOUT) for a in answers]
        streamed = [s.result(timeout=TIMEOUT) for s in streams]
    assert all(reason == "length" for reason, _ in results)
    assert all(text is None or text for text in streamed)
    # Ray replaces the replica (its health check fails within seconds; a new replica loads
    # the model): two engines answer again, the victim not among them.
    deadline = time.monotonic() + 150
    while time.monotonic() < deadline:
        announced = httpx.get(cluster + "/kite/replicas", timeout=10).json()
        if len(announced) == 2 and victim not in {r["pid"] for r in announced.values()}:
            break
        time.sleep(1)
    assert len(announced) == 2 and victim not in {r["pid"] for r in announced.values()}
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        pids = set(pid for _, pid in pool.map(ask, range(100, 116)))
    assert pids == {str(r["pid"]) for r in announced.values()}
