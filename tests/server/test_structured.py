"""Structured output through kite serve with the openai client: every constraint field the
server takes, replies checked by Python's jsonschema and re (not by Kite's grammar code),
streaming, forced tool calls, and the 400s for constraints that cannot be enforced."""

import json
import re

import jsonschema
import openai
import pytest

from test_server import QWEN, Server

PERSON = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 1, "maxLength": 16},
        "age": {"type": "integer", "minimum": 0, "maximum": 130},
        "born": {"type": "string", "format": "date"},
        "tags": {"type": "array", "items": {"enum": ["a", "b", "c"]}, "maxItems": 3},
    },
    "required": ["name", "age", "born", "tags"],
    "additionalProperties": False,
}


@pytest.fixture(scope="module")
def server():
    s = Server("--max-seqs", "8")
    yield s
    s.stop()
    assert s.proc.returncode == 0, "kite serve did not exit cleanly"


def chat(server, content, **kw):
    c = server.client()
    return c.chat.completions.create(model=c.models.list().data[0].id,
                                     messages=[{"role": "user", "content": content}], **kw)


def validate(schema, value):
    cls = jsonschema.validators.validator_for(schema)
    cls(schema, format_checker=cls.FORMAT_CHECKER).validate(value)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_json_schema_replies_validate(server, seed):
    r = chat(server, "Describe a person as JSON.", temperature=0.9, seed=seed, max_tokens=160,
             response_format={"type": "json_schema",
                              "json_schema": {"name": "person", "schema": PERSON,
                                              "strict": True}})
    assert r.choices[0].finish_reason == "stop", r.choices[0]
    validate(PERSON, json.loads(r.choices[0].message.content))


STORY = {
    "type": "object",
    "properties": {"title": {"type": "string"}, "story": {"type": "string"},
                   "pages": {"type": "integer", "minimum": 1}},
    "required": ["title", "story", "pages"],
    "additionalProperties": False,
}


@pytest.mark.parametrize("stream", [False, True])
def test_a_reply_cut_by_max_tokens_still_validates(server, stream):
    kw = dict(temperature=0.8, seed=5, max_tokens=30, stream=stream,
              response_format={"type": "json_schema",
                               "json_schema": {"name": "story", "schema": STORY}})
    r = chat(server, "Write a very long story about the sea, as JSON.", **kw)
    if stream:
        chunks = list(r)
        text = "".join(ch.choices[0].delta.content or "" for ch in chunks if ch.choices)
        finish = [ch.choices[0].finish_reason for ch in chunks if ch.choices][-1]
    else:
        text, finish = r.choices[0].message.content, r.choices[0].finish_reason
    assert finish == "length", text  # closed early: the story was cut short
    validate(STORY, json.loads(text))


def test_json_object_mode_streams(server):
    c = server.client()
    chunks = list(c.completions.create(model="default", prompt="A JSON object:", max_tokens=200,
                                       temperature=0.7, seed=4, stream=True,
                                       extra_body={"response_format": {"type": "json_object"}}))
    text = "".join(ch.choices[0].text for ch in chunks if ch.choices)
    assert chunks[-1].choices[0].finish_reason == "stop", text
    assert isinstance(json.loads(text), dict)


def test_llama_cpp_and_vllm_fields(server):
    c = server.client()

    def complete(prompt, **extra):
        r = c.completions.create(model="default", prompt=prompt, max_tokens=40, temperature=0.8,
                                 seed=9, extra_body=extra)
        assert r.choices[0].finish_reason == "stop", r.choices[0]
        return r.choices[0].text

    assert complete("Is fire hot?", guided_choice=["yes", "no", "maybe"]) in ("yes", "no", "maybe")
    assert re.fullmatch(r"[A-Z]{3}-[0-9]{4}", complete("Plate:", guided_regex="[A-Z]{3}-[0-9]{4}"))
    gbnf = 'root ::= "(" item ("," item){0,3} ")"\nitem ::= [a-z]{1,6}'
    for field in ("grammar", "guided_grammar"):
        assert re.fullmatch(r"\([a-z]{1,6}(,[a-z]{1,6}){0,3}\)", complete("List:", **{field: gbnf}))
    schema = {"type": "array", "items": {"type": "integer", "minimum": 10, "maximum": 99},
              "minItems": 2, "maxItems": 4}
    for field, value in (("json_schema", schema), ("guided_json", json.dumps(schema))):
        validate(schema, json.loads(complete("Numbers:", **{field: value})))


def test_forced_tool_call_matches_the_parameters(server):
    tool = {"type": "function", "function": {
        "name": "set_alarm", "description": "Set an alarm",
        "parameters": {"type": "object", "properties": {
            "hour": {"type": "integer", "minimum": 0, "maximum": 23},
            "label": {"type": "string", "maxLength": 20}}, "required": ["hour", "label"],
            "additionalProperties": False}}}
    other = {"type": "function", "function": {"name": "other", "parameters": {"type": "object"}}}
    for choice in ("required", {"type": "function", "function": {"name": "set_alarm"}}):
        r = chat(server, "Wake me at seven.", tools=[other, tool] if choice != "required"
                 else [tool], tool_choice=choice, temperature=0, max_tokens=80)
        assert r.choices[0].finish_reason == "tool_calls", r.choices[0]
        [call] = r.choices[0].message.tool_calls
        assert call.function.name == "set_alarm"
        validate(tool["function"]["parameters"], json.loads(call.function.arguments))


@pytest.mark.parametrize("extra,param", [
    ({"response_format": {"type": "json_schema", "json_schema": {"name": "x"}}}, "response_format"),
    ({"json_schema": {"type": "string", "pattern": "(?<=a)b"}}, "json_schema"),
    ({"guided_regex": "[a-"}, "guided_regex"),
    ({"grammar": "root ::= missing"}, "grammar"),
    ({"guided_choice": []}, "guided_choice"),
    ({"guided_json": "{not json"}, "guided_json"),
    ({"guided_regex": "a", "grammar": 'root ::= "a"'}, "guided_regex"),
])
def test_constraints_that_cannot_be_enforced_are_400s(server, extra, param):
    with pytest.raises(openai.BadRequestError) as e:
        server.client().completions.create(model="default", prompt="x", max_tokens=4,
                                           extra_body=extra)
    assert e.value.body["param"] == param, e.value.body
    # The server goes on serving.
    assert server.http.get("/health").json() == {"status": "ok"}


@pytest.mark.skipif(not QWEN.exists(), reason="scripts/install-model.sh qwen2.5-coder-0.5b")
def test_qwen_forced_tool_call_in_its_own_format():
    s = Server(model=str(QWEN))
    try:
        tool = {"type": "function", "function": {
            "name": "get_time", "parameters": {"type": "object", "properties": {
                "timezone": {"type": "string"}}, "required": ["timezone"]}}}
        r = chat(s, "What is the weather in Paris?", tools=[tool], tool_choice="required",
                 temperature=0, max_tokens=48)
        assert r.choices[0].finish_reason == "tool_calls", r.choices[0]
        [call] = r.choices[0].message.tool_calls
        assert call.function.name == "get_time"
        assert isinstance(json.loads(call.function.arguments)["timezone"], str)
    finally:
        s.stop()
