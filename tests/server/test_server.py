"""kite serve against the official openai client: a real server on 127.0.0.1 with a free port,
started and stopped by these tests. Loopback only; every wait is bounded."""

import concurrent.futures
import json
import os
import re
import signal
import socket
import subprocess
import time
from pathlib import Path

import httpx
import openai
import pytest

ROOT = Path(__file__).resolve().parents[2]
KITE = os.environ.get("KITE_BIN", str(ROOT / "build" / "bin" / "kite"))
MODEL = os.environ.get("KITE_MODEL", str(ROOT / "models" / "default.gguf"))
STARTUP_TIMEOUT = 60
REQUEST_TIMEOUT = 120


class Server:
    def __init__(self, *args, model=MODEL, ctx="2048"):
        cmd = [KITE, "serve", "-m", model, "--host", "127.0.0.1", "--port", "0", "-t", "2",
               "-c", ctx, "--kv-mem", "128M", *args]
        self.proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + STARTUP_TIMEOUT
        self.port = None
        self.log = []
        while self.port is None:
            if time.monotonic() > deadline or self.proc.poll() is not None:
                self.stop()
                raise RuntimeError("kite serve did not start: " + "".join(self.log))
            line = self.proc.stderr.readline()
            self.log.append(line)
            m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", line)
            if m:
                self.port = int(m.group(1))
        self.url = f"http://127.0.0.1:{self.port}"
        self.http = httpx.Client(base_url=self.url, timeout=REQUEST_TIMEOUT)

    def client(self, api_key="unused"):
        return openai.OpenAI(base_url=self.url + "/v1", api_key=api_key, max_retries=0,
                             timeout=REQUEST_TIMEOUT)

    def metrics(self):
        out = {}
        for line in self.http.get("/metrics").text.splitlines():
            if line and not line.startswith("#"):
                name, value = line.rsplit(" ", 1)
                out[name] = float(value)
        return out

    def wait_idle(self, timeout=30):
        """The engine's gauges once nothing runs or holds KV blocks (bounded wait)."""
        deadline = time.monotonic() + timeout
        while True:
            m = self.metrics()
            idle = m["kite_kv_blocks_used"] == 0 and m["kite_num_requests_running"] == 0
            if idle or time.monotonic() > deadline:
                return m
            time.sleep(0.1)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)


@pytest.fixture(scope="module")
def server():
    s = Server("--max-seqs", "32")
    yield s
    s.stop()
    assert s.proc.returncode == 0, "kite serve did not exit cleanly"


@pytest.fixture(scope="module")
def model_id(server):
    return server.client().models.list().data[0].id


def greedy(client, model, prompt, n_tokens=16, **kw):
    r = client.completions.create(model=model, prompt=prompt, max_tokens=n_tokens,
                                  temperature=0, extra_body={"ignore_eos": True}, **kw)
    return r.choices[0].text


def test_health_and_models(server, model_id):
    assert server.http.get("/health").json() == {"status": "ok"}
    assert model_id == "default"
    assert server.client().models.retrieve(model_id).id == model_id


def test_completion_and_usage(server, model_id):
    r = server.client().completions.create(model=model_id, prompt="The capital of France is",
                                           max_tokens=8, temperature=0)
    assert "Paris" in r.choices[0].text
    assert r.choices[0].finish_reason == "length"
    assert r.usage.completion_tokens == 8
    assert r.usage.prompt_tokens > 3
    assert r.usage.total_tokens == r.usage.prompt_tokens + 8


def test_streaming_gives_the_same_text(server, model_id):
    c = server.client()
    whole = greedy(c, model_id, "Once upon a time", 20)
    stream = c.completions.create(model=model_id, prompt="Once upon a time", max_tokens=20,
                                  temperature=0, stream=True, extra_body={"ignore_eos": True},
                                  stream_options={"include_usage": True})
    chunks = list(stream)
    text = "".join(ch.choices[0].text for ch in chunks if ch.choices)
    assert text == whole
    assert [ch.choices[0].finish_reason for ch in chunks if ch.choices][-1] == "length"
    assert chunks[-1].usage.completion_tokens == 20


def test_chat_streamed_and_not(server, model_id):
    c = server.client()
    messages = [{"role": "user", "content": "What is the capital of France?"}]
    r = c.chat.completions.create(model=model_id, messages=messages, max_tokens=24,
                                  temperature=0)
    assert r.choices[0].message.role == "assistant"
    assert r.choices[0].finish_reason in ("stop", "length")
    chunks = list(c.chat.completions.create(model=model_id, messages=messages, max_tokens=24,
                                            temperature=0, stream=True))
    assert chunks[0].choices[0].delta.role == "assistant"
    assert "".join(ch.choices[0].delta.content or "" for ch in chunks) == r.choices[0].message.content
    assert chunks[-1].choices[0].finish_reason == r.choices[0].finish_reason
    # Parts-style content gives the same prompt.
    parts = [{"role": "user", "content": [{"type": "text", "text": "What is the capital "},
                                          {"type": "text", "text": "of France?"}]}]
    r2 = c.chat.completions.create(model=model_id, messages=parts, max_tokens=24, temperature=0)
    assert r2.choices[0].message.content == r.choices[0].message.content


def test_stop_strings(server, model_id):
    c = server.client()
    r = c.completions.create(model=model_id, prompt="1, 2, 3, 4,", max_tokens=30, temperature=0,
                             stop=[" 7", "never"])
    assert r.choices[0].text == " 5, 6,"
    assert r.choices[0].finish_reason == "stop"
    r = c.completions.create(model=model_id, prompt="1, 2, 3, 4,", max_tokens=30, temperature=0,
                             stop=" 6", stream=False)
    assert r.choices[0].text == " 5,"
    chunks = list(c.completions.create(model=model_id, prompt="1, 2, 3, 4,", max_tokens=30,
                                       temperature=0, stop=" 7", stream=True))
    assert "".join(ch.choices[0].text for ch in chunks) == " 5, 6,"
    assert chunks[-1].choices[0].finish_reason == "stop"


def test_seed_reproducibility(server, model_id):
    c = server.client()

    def sample(seed):
        return c.completions.create(model=model_id, prompt="My favourite animal is the",
                                    max_tokens=16, temperature=1.0, seed=seed).choices[0].text

    a = sample(1234)
    assert sample(1234) == a
    assert any(sample(s) != a for s in (1, 2, 3))
    # n choices: different draws, each reproducible.
    # (ignore_eos: a draw that ends early would change the token count checked below)
    r1 = c.completions.create(model=model_id, prompt="My favourite animal is the", max_tokens=8,
                              temperature=1.0, seed=7, n=3, extra_body={"ignore_eos": True})
    r2 = c.completions.create(model=model_id, prompt="My favourite animal is the", max_tokens=8,
                              temperature=1.0, seed=7, n=3, extra_body={"ignore_eos": True})
    assert [ch.index for ch in r1.choices] == [0, 1, 2]
    assert [ch.text for ch in r1.choices] == [ch.text for ch in r2.choices]
    assert r1.usage.completion_tokens == 24


def test_logprobs(server, model_id):
    c = server.client()
    r = c.completions.create(model=model_id, prompt="The capital of France is", max_tokens=5,
                             temperature=0, logprobs=3)
    lp = r.choices[0].logprobs
    assert len(lp.tokens) == len(lp.token_logprobs) == len(lp.top_logprobs) == 5
    for token, logprob, top in zip(lp.tokens, lp.token_logprobs, lp.top_logprobs):
        assert logprob <= 0
        assert len(top) <= 3
        assert max(top.values()) == pytest.approx(logprob)  # greedy: the most likely token
    r = c.chat.completions.create(model=model_id, max_tokens=4, temperature=0, logprobs=True,
                                  top_logprobs=2,
                                  messages=[{"role": "user", "content": "Say hi"}])
    content = r.choices[0].logprobs.content
    assert len(content) == 4
    for item in content:
        assert len(item.top_logprobs) == 2
        assert item.top_logprobs[0].token == item.token
        assert item.top_logprobs[0].logprob >= item.top_logprobs[1].logprob
        assert bytes(item.bytes).decode("utf-8", "replace") is not None
    chunks = list(c.chat.completions.create(model=model_id, max_tokens=4, temperature=0,
                                            logprobs=True, stream=True,
                                            messages=[{"role": "user", "content": "Say hi"}]))
    streamed = [t for ch in chunks if ch.choices[0].logprobs for t in ch.choices[0].logprobs.content]
    assert [t.token for t in streamed] == [t.token for t in content]


def test_sampling_parameters_are_accepted(server, model_id):
    c = server.client()
    r = c.completions.create(model=model_id, prompt="Hello", max_tokens=8, temperature=0.7,
                             top_p=0.9, presence_penalty=0.5, frequency_penalty=0.5, seed=3,
                             logit_bias={"28": -100},
                             extra_body={"top_k": 20, "min_p": 0.05, "repetition_penalty": 1.1})
    assert r.usage.completion_tokens >= 1
    # A bias of +100 on one token makes greedy pick it every time.
    token = 330
    r = c.completions.create(model=model_id, prompt="Hello", max_tokens=4, temperature=0,
                             logit_bias={str(token): 100}, logprobs=0)
    assert r.choices[0].logprobs.tokens[0] == r.choices[0].logprobs.tokens[-1]


def test_repeat_last_n_is_the_penalties_window(server, model_id):
    prompt = "one two one two one two one two one two one two"
    plain = greedy(server.client(), model_id, prompt, 16)

    def penalised(last_n):
        r = server.http.post("/v1/completions", json={
            "prompt": prompt, "max_tokens": 16, "temperature": 0, "ignore_eos": True,
            "repetition_penalty": 3.0, "repeat_last_n": last_n})
        assert r.status_code == 200, r.text
        return r.json()["choices"][0]["text"]

    assert penalised(0) == plain  # no tokens in the window: no penalty
    assert penalised(64) != plain
    assert penalised(-1) != plain  # the whole context
    r = server.http.post("/v1/completions", json={"prompt": prompt, "repeat_last_n": -2})
    assert r.status_code == 400 and r.json()["error"]["param"] == "repeat_last_n"


def test_dry_fields_leave_a_loop_as_kite_run_does(server, model_id):
    prompt = "1 2 3 4 1 2 3 4 1 2 3 4 1 2 3 4 1 2 3 4"
    body = {"prompt": prompt, "max_tokens": 24, "temperature": 0, "dry_multiplier": 0.8,
            "dry_base": 1.75, "dry_allowed_length": 2, "dry_penalty_last_n": -1,
            "dry_sequence_breakers": ["\n", ":", "\"", "*"]}
    r = server.http.post("/v1/completions", json=body)
    assert r.status_code == 200, r.text
    text = r.json()["choices"][0]["text"]
    assert greedy(server.client(), model_id, prompt, 24).startswith(" 1 2 3 4 1 2 3 4")
    assert not text.startswith(" 1 2 3 4 1 2 3 4"), text
    cmd = [KITE, "run", "-m", MODEL, "-t", "2", "-p", prompt, "-n", "24", "--temp", "0",
           "--dry-multiplier", "0.8"]
    assert subprocess.run(cmd, check=True, capture_output=True, text=True).stdout == prompt + text
    for field, value in [("dry_multiplier", -1), ("dry_base", 0.5), ("dry_allowed_length", -1),
                         ("dry_penalty_last_n", -2), ("dry_sequence_breakers", "\n"),
                         ("dry_sequence_breakers", [""]), ("dry_sequence_breakers", ["x"] * 33)]:
        r = server.http.post("/v1/completions", json={"prompt": prompt, field: value})
        assert r.status_code == 400 and r.json()["error"]["param"] == field, (field, r.text)


PROMPTS = [f"{subject} {verb}" for subject in
           ("The cat", "My grandmother", "A small robot", "The old lighthouse", "Every winter the river",
            "In 1492, Columbus", "The recipe for bread", "Quantum computers")
           for verb in ("is", "was known for", "always", "could not")]


def test_concurrent_streams_match_solo_runs(server, model_id):
    c = server.client()
    n_tokens = 12
    solo = [greedy(c, model_id, p, n_tokens) for p in PROMPTS]

    def streamed(prompt):
        s = c.completions.create(model=model_id, prompt=prompt, max_tokens=n_tokens, temperature=0,
                                 stream=True, extra_body={"ignore_eos": True})
        return "".join(ch.choices[0].text for ch in s)

    with concurrent.futures.ThreadPoolExecutor(max_workers=len(PROMPTS)) as pool:
        together = list(pool.map(streamed, PROMPTS, timeout=300))
    assert len(PROMPTS) == 32
    for prompt, a, b in zip(PROMPTS, solo, together):
        assert a == b, prompt
    m = server.wait_idle()
    assert m["kite_kv_blocks_used"] == 0
    assert m["kite_num_requests_waiting"] == 0


BAD_REQUESTS = [
    ("/v1/completions", b"{not json", 400),
    ("/v1/completions", b"[1, 2, 3]", 400),
    ("/v1/completions", b'"just a string"', 400),
    ("/v1/completions", b"", 400),
    ("/v1/completions", b'{"prompt": "hi", "max_tokens": "ten"}', 400),
    ("/v1/completions", b'{"prompt": "hi", "temperature": "hot"}', 400),
    ("/v1/completions", b'{"prompt": "hi", "stream": "yes"}', 400),
    ("/v1/completions", b'{"prompt": 42}', 400),
    ("/v1/completions", b'{"prompt": []}', 400),
    ("/v1/completions", b'{"prompt": [1, 2, -5]}', 400),
    ("/v1/completions", b'{"prompt": [1, 2, 99999999]}', 400),
    ("/v1/completions", b'{"max_tokens": 4}', 400),
    ("/v1/completions", b'{"prompt": "hi", "model": "gpt-4"}', 404),
    ("/v1/completions", b'{"prompt": "hi", "model": 7}', 400),
    ("/v1/completions", b'{"prompt": "hi", "temperature": 2.5}', 400),
    ("/v1/completions", b'{"prompt": "hi", "temperature": -1}', 400),
    ("/v1/completions", b'{"prompt": "hi", "top_p": 0}', 400),
    ("/v1/completions", b'{"prompt": "hi", "top_p": 1.5}', 400),
    ("/v1/completions", b'{"prompt": "hi", "max_tokens": 0}', 400),
    ("/v1/completions", b'{"prompt": "hi", "max_tokens": 100000000000000000000}', 400),
    ("/v1/completions", b'{"prompt": "hi", "max_tokens": 2048}', 400),  # beyond the context
    ("/v1/completions", b'{"prompt": "hi", "n": 0}', 400),
    ("/v1/completions", b'{"prompt": "hi", "n": 1000}', 400),
    ("/v1/completions", b'{"prompt": "hi", "logprobs": 50}', 400),
    ("/v1/completions", b'{"prompt": "hi", "presence_penalty": 3}', 400),
    ("/v1/completions", b'{"prompt": "hi", "frequency_penalty": -2.5}', 400),
    ("/v1/completions", b'{"prompt": "hi", "stop": ""}', 400),
    ("/v1/completions", b'{"prompt": "hi", "stop": [1]}', 400),
    ("/v1/completions", b'{"prompt": "hi", "stop": ["a","b","c","d","e","f","g","h","i"]}', 400),
    ("/v1/completions", b'{"prompt": "hi", "logit_bias": {"x": 1}}', 400),
    ("/v1/completions", b'{"prompt": "hi", "logit_bias": {"5": 1000}}', 400),
    ("/v1/completions", b'{"prompt": "hi", "logit_bias": {"999999": 1}}', 400),
    ("/v1/completions", b'{"prompt": "hi", "logit_bias": []}', 400),
    ("/v1/completions", b'{"prompt": "hi", "seed": "x"}', 400),
    ("/v1/completions", b'{"prompt": "hi", "seed": 1.5}', 400),
    ("/v1/completions", b'{"prompt": "hi", "echo": true}', 400),
    ("/v1/chat/completions", b'{"messages": "hi"}', 400),
    ("/v1/chat/completions", b'{"messages": []}', 400),
    ("/v1/chat/completions", b'{"messages": [{"role": "wizard", "content": "hi"}]}', 400),
    ("/v1/chat/completions", b'{"messages": [{"content": "hi"}]}', 400),
    ("/v1/chat/completions", b'{"messages": [{"role": "user", "content": 5}]}', 400),
    ("/v1/chat/completions", b'{"messages": [{"role": "user", "content": [{"type": "image_url"}]}]}', 400),
    ("/v1/chat/completions", b'{"messages": [{"role": "user", "content": "hi"}], "top_logprobs": 2}', 400),
    ("/v1/chat/completions", b'{"messages": [{"role": "user", "content": "hi"}], "logprobs": true, "top_logprobs": 21}', 400),
    ("/v1/chat/completions", b'{"messages": [{"role": "user", "content": "hi"}], "tools": [{"type": "function"}]}', 400),
    ("/v1/completions", b"[" * 100000 + b"]" * 100000, 400),
    ("/v1/completions", b'{"prompt": "' + b"\xff\xfe" * 10 + b'"}', 400),
    ("/v1/completions", b'{"prompt": "hi", "kv_window": 2, "kv_sinks": 4}', 400),
    ("/v1/completions", b'{"prompt": "hi", "kv_sinks": 4}', 400),
    ("/v1/completions", b'{"prompt": "hi", "kv_window": -1}', 400),
    ("/v1/completions", b'{"prompt": "hi", "kv_window": "64"}', 400),
    ("/v1/completions", b'{"prompt": "hi", "kv_window": 1.5}', 400),
    ("/v1/completions", b'{"prompt": "hi", "kv_window": 100000}', 400),
    ("/v1/nothing", b"{}", 404),
]


def test_bad_requests_get_4xx_and_the_server_keeps_serving(server, model_id):
    for path, body, status in BAD_REQUESTS:
        r = server.http.post(path, content=body, headers={"Content-Type": "application/json"})
        assert r.status_code == status, (path, body[:80], r.text)
        err = r.json()["error"]
        assert set(err) == {"message", "type", "param", "code"}
        assert err["message"]
    # A huge body is refused before it is read in full.
    r = server.http.post("/v1/completions", content=b'{"prompt": "' + b"a" * (2 << 20) + b'"}',
                         headers={"Content-Type": "application/json"})
    assert r.status_code == 413
    assert "error" in r.json()
    # The openai client maps them to its exceptions.
    c = server.client()
    with pytest.raises(openai.NotFoundError):
        c.completions.create(model="no-such-model", prompt="hi", max_tokens=2)
    with pytest.raises(openai.BadRequestError) as e:
        c.completions.create(model=model_id, prompt="hi", max_tokens=2, temperature=9)
    assert e.value.body["param"] == "temperature"
    assert server.http.get("/health").status_code == 200
    assert greedy(c, model_id, "The capital of France is", 4)
    m = server.metrics()
    assert m['kite_requests_total{status="400"}'] >= len(BAD_REQUESTS) - 2
    assert m['kite_requests_total{status="404"}'] >= 2
    assert m['kite_requests_total{status="413"}'] >= 1


def test_cancelled_stream_frees_its_blocks(server, model_id):
    body = {"model": model_id, "prompt": "Once upon a time", "max_tokens": 1000, "stream": True,
            "ignore_eos": True}
    with server.http.stream("POST", "/v1/completions", json=body) as r:
        assert r.status_code == 200
        lines = 0
        for line in r.iter_lines():
            lines += bool(line.startswith("data: "))
            if lines == 3:
                break
        # The gauges are a snapshot the engine publishes after each step: poll (bounded).
        deadline = time.monotonic() + 5
        used = server.metrics()["kite_kv_blocks_used"]
        while used == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
            used = server.metrics()["kite_kv_blocks_used"]
        assert used > 0
    m = server.wait_idle()
    assert m["kite_kv_blocks_used"] == 0
    assert m["kite_num_requests_running"] == 0
    assert m["kite_generation_tokens_total"] < 10000


def test_client_gone_before_a_whole_response_frees_its_blocks(server, model_id):
    # Not streamed: the server sends a space every second until the JSON, so a write fails
    # once the client has gone and the request is cancelled long before its 4 x 2000 tokens.
    before = server.metrics()["kite_generation_tokens_total"]
    body = json.dumps({"model": model_id, "prompt": "Once upon a time", "max_tokens": 2000,
                       "n": 4, "ignore_eos": True}).encode()
    with socket.create_connection(("127.0.0.1", server.port), timeout=REQUEST_TIMEOUT) as sock:
        sock.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\n"
                     b"Content-Type: application/json\r\nContent-Length: "
                     + str(len(body)).encode() + b"\r\n\r\n" + body)
        head = sock.recv(4096)  # headers once the request has run for a second
        assert head.startswith(b"HTTP/1.1 200"), head
        assert server.metrics()["kite_kv_blocks_used"] > 0
    m = server.wait_idle()
    assert m["kite_kv_blocks_used"] == 0
    assert m["kite_num_requests_running"] == 0
    assert m["kite_generation_tokens_total"] - before < 4 * 2000


def test_long_whole_response_is_valid_json(server, model_id):
    # Longer than a second: chunked, leading spaces, then the usual body.
    r = server.client().completions.create(model=model_id, prompt="Once upon a time",
                                           max_tokens=600, temperature=0, n=2,
                                           extra_body={"ignore_eos": True})
    assert [c.finish_reason for c in r.choices] == ["length", "length"]
    assert r.usage.completion_tokens == 1200


def test_prefix_cache_hits_and_metrics(server, model_id):
    c = server.client()
    system = "You are a terse assistant. " * 12
    before = server.metrics()
    answers = [c.chat.completions.create(model=model_id, max_tokens=4, temperature=0,
                                         messages=[{"role": "system", "content": system},
                                                   {"role": "user", "content": q}])
               for q in ("Hi", "Hello", "Hi")]
    assert answers[0].choices[0].message.content == answers[2].choices[0].message.content
    m = server.metrics()
    assert m["kite_prefix_cache_hits_total"] - before["kite_prefix_cache_hits_total"] >= 2 * 64
    assert m["kite_prefix_cache_queries_total"] > before["kite_prefix_cache_queries_total"]
    assert m["kite_kv_blocks_total"] > 0
    assert m["kite_kv_bytes_total"] == m["kite_kv_bytes_per_token"] * 16 * m["kite_kv_blocks_total"]
    assert m["kite_time_to_first_token_seconds_count"] > 0
    assert m["kite_time_per_output_token_seconds_count"] > 0
    assert 'kite_time_to_first_token_seconds_bucket{le="+Inf"}' in m
    assert m["kite_prompt_tokens_total"] > 0 and m["kite_generation_tokens_total"] > 0
    text = server.http.get("/metrics").text
    assert "# TYPE kite_time_per_output_token_seconds histogram" in text


def test_api_key():
    s = Server("--max-seqs", "2", "--api-key", "sekrit", "--no-prefix-caching")
    try:
        with pytest.raises(openai.AuthenticationError):
            s.client("wrong").models.list()
        r = s.http.post("/v1/completions", json={"prompt": "hi"})
        assert r.status_code == 401 and r.json()["error"]["type"] == "authentication_error"
        assert s.http.get("/health").status_code == 200
        r = s.client("sekrit").completions.create(model="default", prompt="Hi", max_tokens=2)
        assert r.usage.completion_tokens == 2
        assert s.metrics()["kite_prefix_cache_queries_total"] == 0
    finally:
        s.stop()
    assert s.proc.returncode == 0


WEATHER_TOOL = {"type": "function", "function": {
    "name": "get_weather", "description": "Current weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                   "required": ["city"]}}}


def test_chat_accepts_tools_and_tool_messages(server, model_id):
    c = server.client()
    messages = [
        {"role": "user", "content": "What's the weather in Paris?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function",
             "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "{\"temperature\": 21}"},
    ]
    r = c.chat.completions.create(model=model_id, messages=messages, tools=[WEATHER_TOOL],
                                  tool_choice="auto", max_tokens=8, temperature=0)
    assert r.choices[0].finish_reason in ("stop", "length", "tool_calls")
    chunks = list(c.chat.completions.create(model=model_id, messages=messages,
                                            tools=[WEATHER_TOOL], max_tokens=8, temperature=0,
                                            stream=True))
    streamed = "".join(ch.choices[0].delta.content or "" for ch in chunks if ch.choices)
    assert streamed == (r.choices[0].message.content or "")
    with pytest.raises(openai.BadRequestError):
        c.chat.completions.create(model=model_id, messages=messages[:1], max_tokens=4,
                                  tools=[{"type": "function", "function": {"description": "x"}}])


QWEN = ROOT / "models" / "qwen2.5-coder-0.5b.gguf"


@pytest.mark.skipif(not QWEN.exists(), reason="scripts/install-model.sh qwen2.5-coder-0.5b")
def test_qwen_weather_tool_round_trip():
    # A real instruct model with its own chat template (Hermes-style <tool_call> JSON; this
    # small model writes the call bare or in a ```json fence, a near-tie in its first token
    # that the CPU's kernels decide, and both parse as the call): it calls the tool, the client runs it and sends the result back as a role "tool" message,
    # and the model answers from it. Greedy, so the replies are the model's most likely ones.
    s = Server(model=str(QWEN))
    try:
        c = s.client()
        model = c.models.list().data[0].id
        messages = [{"role": "user", "content": "What's the weather in Paris right now?"}]
        r = c.chat.completions.create(model=model, messages=messages, tools=[WEATHER_TOOL],
                                      max_tokens=64, temperature=0)
        choice = r.choices[0]
        assert choice.finish_reason == "tool_calls", choice
        assert choice.message.content is None
        [call] = choice.message.tool_calls
        assert call.type == "function" and call.function.name == "get_weather"
        assert json.loads(call.function.arguments) == {"city": "Paris"}

        chunks = list(c.chat.completions.create(model=model, messages=messages,
                                                tools=[WEATHER_TOOL], max_tokens=64,
                                                temperature=0, stream=True))
        deltas = [ch.choices[0] for ch in chunks]
        # Nothing is sent while the call's text is held back: the role, then the call.
        assert all(d.delta.role or d.delta.content or d.delta.tool_calls or d.finish_reason
                   for d in deltas), deltas
        [streamed] = [tc for d in deltas for tc in (d.delta.tool_calls or [])]
        assert streamed.index == 0 and streamed.id
        assert streamed.function.name == "get_weather"
        assert streamed.function.arguments == call.function.arguments
        assert deltas[-1].finish_reason == "tool_calls"

        messages += [{"role": "assistant", "content": None,
                      "tool_calls": [call.model_dump()]},
                     {"role": "tool", "tool_call_id": call.id,
                      "content": json.dumps({"temperature_c": 21, "sky": "sunny"})}]
        r2 = c.chat.completions.create(model=model, messages=messages, tools=[WEATHER_TOOL],
                                       max_tokens=64, temperature=0)
        assert r2.choices[0].finish_reason == "stop"
        assert "21" in r2.choices[0].message.content
        assert r2.usage.prompt_tokens > r.usage.prompt_tokens + 20
    finally:
        s.stop()
    assert s.proc.returncode == 0


def test_tools_reach_the_template(tmp_path):
    # A template that writes the tools' names and the tool results into the prompt: the
    # prompt grows by their tokens, and tool_choice "none" leaves the tools out.
    template = tmp_path / "tools.jinja"
    template.write_text("{% for t in tools %}TOOL {{ t.function.name }} "
                        "{{ t.function.parameters | tojson }}\n{% endfor %}"
                        "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}"
                        "<|im_end|>\n{% endfor %}<|im_start|>assistant\n")
    s = Server("--chat-template", str(template))
    try:
        c = s.client()
        model = c.models.list().data[0].id
        messages = [{"role": "user", "content": "Is it raining in Oslo?"}]

        def prompt_tokens(**kw):
            return c.chat.completions.create(model=model, messages=messages, max_tokens=1,
                                             temperature=0, **kw).usage.prompt_tokens

        without = prompt_tokens()
        with_tools = prompt_tokens(tools=[WEATHER_TOOL])
        assert with_tools > without + 10
        assert prompt_tokens(tools=[WEATHER_TOOL], tool_choice="none") == without
        assert prompt_tokens(tools=[WEATHER_TOOL, dict(WEATHER_TOOL, function=dict(
            WEATHER_TOOL["function"], name="get_time"))]) > with_tools
    finally:
        s.stop()


DRAFT_MODEL = ROOT / "models" / "variants" / "default-q4_0.gguf"


def test_draft_model_keeps_the_output_and_frees_its_cache(server, model_id):
    """A server-wide draft model (the default model's Q4_0 variant, drafting K = 8 always):
    greedy text as without it, alone and concurrent, a request may opt out, the draft
    counters move, and both KV caches are empty once the requests end."""
    if not DRAFT_MODEL.exists():
        pytest.skip(f"{DRAFT_MODEL} is missing: scripts/make-variants.sh")
    prompts = PROMPTS[:6]
    plain = [greedy(server.client(), model_id, p, 12) for p in prompts]
    s = Server("--max-seqs", "8", "--draft-model", str(DRAFT_MODEL), "--draft-fixed")
    try:
        assert any("speculative decoding draft model" in line for line in s.log)
        c = s.client()
        assert greedy(c, model_id, prompts[0], 12) == plain[0]
        with concurrent.futures.ThreadPoolExecutor(max_workers=len(prompts)) as pool:
            together = list(pool.map(lambda p: greedy(c, model_id, p, 12), prompts, timeout=300))
        assert together == plain
        m = s.wait_idle()
        assert m["kite_spec_draft_tokens_total"] > 0
        assert m["kite_spec_accepted_tokens_total"] > 0
        assert m["kite_draft_kv_blocks_used"] == 0 and m["kite_kv_blocks_used"] == 0
        drafted = m["kite_spec_draft_tokens_total"]
        r = c.completions.create(model=model_id, prompt=prompts[1], max_tokens=12, temperature=0,
                                 extra_body={"ignore_eos": True, "speculative": False})
        assert r.choices[0].text == plain[1]
        assert s.wait_idle()["kite_spec_draft_tokens_total"] == drafted
    finally:
        s.stop()
    assert s.proc.returncode == 0


def test_unusable_draft_models_stop_the_server_before_it_listens(tmp_path):
    missing = tmp_path / "missing.gguf"
    cases = [(missing, "cannot load the draft model")]
    qwen = ROOT / "models" / "qwen2.5-coder-0.5b.gguf"
    if qwen.exists():
        cases.append((qwen, "cannot draft for"))
    for path, why in cases:
        r = subprocess.run([KITE, "serve", "-m", MODEL, "--port", "0", "--draft-model", str(path)],
                           capture_output=True, text=True, timeout=STARTUP_TIMEOUT)
        assert r.returncode == 1, r.stderr
        assert why in r.stderr and "listening" not in r.stderr


def test_kv_window_runs_a_request_past_the_context():
    """Per request, kv_window and kv_sinks keep the first and the last tokens of a sequence
    and let it run past the context (a 128-token one here): all max_tokens come, streamed or
    not, the same; without them such a request is refused; bad values name the field; the
    blocks go back. A server started with --kv-window gives every request its window unless
    the request sets kv_window 0."""
    s = Server("--max-seqs", "4", ctx="128")
    try:
        c = s.client()
        model = c.models.list().data[0].id
        window = {"ignore_eos": True, "kv_window": 48, "kv_sinks": 4}
        with pytest.raises(openai.BadRequestError):
            c.completions.create(model=model, prompt=PROMPTS[0], max_tokens=200)
        r = c.completions.create(model=model, prompt=PROMPTS[0], max_tokens=200, temperature=0,
                                 extra_body=window)
        assert r.usage.completion_tokens == 200 and r.choices[0].finish_reason == "length"
        text = "".join(ch.choices[0].text for ch in c.completions.create(
            model=model, prompt=PROMPTS[0], max_tokens=200, temperature=0, stream=True,
            extra_body=window))
        assert text == r.choices[0].text
        for body, param in [({"kv_window": 2, "kv_sinks": 4}, "kv_window"),
                            ({"kv_sinks": 4}, "kv_sinks"), ({"kv_window": 129}, "kv_window")]:
            bad = s.http.post("/v1/completions", json={"prompt": "hi", **body})
            assert bad.status_code == 400 and bad.json()["error"]["param"] == param, bad.text
        assert s.wait_idle()["kite_kv_blocks_used"] == 0
    finally:
        s.stop()
    assert s.proc.returncode == 0

    s = Server("--max-seqs", "4", "--kv-window", "48", ctx="128")
    try:
        assert any("KV window 48 + 4 sinks" in line for line in s.log)
        c = s.client()
        model = c.models.list().data[0].id
        again = c.completions.create(model=model, prompt=PROMPTS[0], max_tokens=200,
                                     temperature=0, extra_body={"ignore_eos": True})
        assert again.choices[0].text == r.choices[0].text
        with pytest.raises(openai.BadRequestError):
            c.completions.create(model=model, prompt=PROMPTS[0], max_tokens=200,
                                 extra_body={"kv_window": 0})
    finally:
        s.stop()
    assert s.proc.returncode == 0
