"""POST /tokenize and /detokenize in llama-server's and vLLM's shapes: a text or a chat
request's messages become the tokens the generation routes would run (counted without
generating), ids become text, and bad fields are 400s that name them."""

import pytest

from test_server import Server


@pytest.fixture(scope="module")
def server():
    s = Server("--max-seqs", "2")
    yield s
    s.stop()
    assert s.proc.returncode == 0


def tokenize(server, **body):
    r = server.http.post("/tokenize", json=body)
    assert r.status_code == 200, r.text
    return r.json()


def usage_of(server, path, **body):
    r = server.http.post(path, json={"max_tokens": 1, **body})
    assert r.status_code == 200, r.text
    return r.json()["usage"]["prompt_tokens"]


def test_text_tokens_are_what_a_completion_runs(server):
    text = "The capital of France is"
    r = tokenize(server, content=text)
    assert set(r) == {"tokens", "count", "max_model_len"}
    assert all(isinstance(t, int) for t in r["tokens"])
    assert r["count"] == len(r["tokens"]) == usage_of(server, "/v1/completions", prompt=text)
    assert r["max_model_len"] == 2048
    assert tokenize(server, prompt=text)["tokens"] == r["tokens"]  # vLLM's field
    plain = tokenize(server, content=text, add_special=False)["tokens"]
    assert r["tokens"][-len(plain):] == plain and len(plain) <= len(r["tokens"])
    back = server.http.post("/detokenize", json={"tokens": plain})
    assert back.status_code == 200 and back.json() == {"content": text}


def test_pieces_spell_the_text(server):
    r = tokenize(server, content="Hello world, héllo", add_special=False, with_pieces=True)
    assert all(set(t) == {"id", "piece"} for t in r["tokens"])
    pieces = [t["piece"] for t in r["tokens"]]
    # A piece that is part of a character comes as its bytes (llama-server's shape).
    text = b"".join(bytes(p) if isinstance(p, list) else p.encode() for p in pieces)
    assert text.decode() == "Hello world, héllo"
    ids = tokenize(server, content="Hello world, héllo", add_special=False)["tokens"]
    assert [t["id"] for t in r["tokens"]] == ids


def test_chat_messages_are_counted_as_the_chat_route_runs_them(server):
    messages = [{"role": "system", "content": "Be brief."},
                {"role": "user", "content": "What is the capital of France?"}]
    r = tokenize(server, messages=messages)
    assert r["count"] == usage_of(server, "/v1/chat/completions", messages=messages)
    without = tokenize(server, messages=messages, add_generation_prompt=False)
    assert without["count"] < r["count"]
    assert r["tokens"][:without["count"]] == without["tokens"]


@pytest.mark.parametrize("path, body, param", [
    ("/tokenize", {}, "content"),
    ("/tokenize", {"content": 5}, "content"),
    ("/tokenize", {"prompt": ["a"]}, "prompt"),
    ("/tokenize", {"content": "a", "prompt": "b"}, "prompt"),
    ("/tokenize", {"messages": "hi"}, "messages"),
    ("/tokenize", {"messages": [{"role": "wizard", "content": "x"}]}, "messages[0].role"),
    ("/tokenize", {"content": "a", "add_special": "yes"}, "add_special"),
    ("/tokenize", {"content": "a", "with_pieces": 1}, "with_pieces"),
    ("/detokenize", {}, "tokens"),
    ("/detokenize", {"tokens": "12"}, "tokens"),
    ("/detokenize", {"tokens": [1, "2"]}, "tokens"),
    ("/detokenize", {"tokens": [10 ** 9]}, "tokens"),
    ("/detokenize", {"tokens": [-1]}, "tokens"),
])
def test_bad_fields_are_400s_naming_them(server, path, body, param):
    r = server.http.post(path, json=body)
    assert r.status_code == 400, r.text
    assert r.json()["error"]["param"] == param, r.text


def test_a_body_that_is_not_an_object_is_a_400(server):
    for path in ("/tokenize", "/detokenize"):
        r = server.http.post(path, content=b"[1, 2]", headers={"Content-Type": "application/json"})
        assert r.status_code == 400 and r.json()["error"]["message"], r.text
