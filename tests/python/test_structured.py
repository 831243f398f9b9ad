"""Structured output from Python: SamplingParams(guided_decoding=...) and chat's
response_format, checked by jsonschema and re (not by Kite's grammar code)."""

import json
import re

import jsonschema
import pytest

from kite import GuidedDecodingParams, SamplingParams

SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string", "maxLength": 20},
                   "population": {"type": "integer", "minimum": 0, "maximum": 50000000}},
    "required": ["city", "population"],
    "additionalProperties": False,
}


def test_guided_decoding_kinds(llm):
    def one(guided, temperature=0.8, prompt="Answer:"):
        out = llm.generate([prompt], SamplingParams(temperature=temperature, seed=3,
                                                       max_tokens=150, guided_decoding=guided))[0]
        assert out.finish_reason == "stop", out
        return out.text

    jsonschema.validate(json.loads(one(GuidedDecodingParams(json=SCHEMA), 0)), SCHEMA)
    jsonschema.validate(json.loads(one(GuidedDecodingParams(json=json.dumps(SCHEMA)), 0)), SCHEMA)
    assert isinstance(json.loads(one(GuidedDecodingParams(json_object=True), 0,
                                     "A person as a JSON object with a name and an age:\n")),
                      dict)
    assert re.fullmatch(r"[0-9]{2}:[0-9]{2}", one(GuidedDecodingParams(regex="[0-9]{2}:[0-9]{2}")))
    assert one(GuidedDecodingParams(choice=["left", "right"])) in ("left", "right")
    assert re.fullmatch(r"(ab){1,3}", one(GuidedDecodingParams(grammar='root ::= ("ab"){1,3}')))


def test_batch_mixes_constrained_and_free(llm):
    params = [SamplingParams(temperature=0, max_tokens=12, ignore_eos=True),
              SamplingParams(temperature=0, max_tokens=150,
                             guided_decoding=GuidedDecodingParams(json=SCHEMA))]
    free, constrained = llm.generate(["The sky is", "A city:"], params)
    alone = llm.generate(["The sky is"], params[0])[0]
    assert free.token_ids == alone.token_ids
    jsonschema.validate(json.loads(constrained.text), SCHEMA)


def test_a_reply_cut_by_max_tokens_still_validates(llm):
    story = {"type": "object", "properties": {"title": {"type": "string"},
                                              "story": {"type": "string", "minLength": 40}},
             "required": ["title", "story"], "additionalProperties": False}
    out = llm.generate(["A very long story about the sea, as JSON:"],
                       SamplingParams(temperature=0, max_tokens=24,
                                      guided_decoding=GuidedDecodingParams(json=story)))[0]
    assert out.finish_reason == "length", out
    assert len(out.token_ids) <= 24
    jsonschema.validate(json.loads(out.text), story)


def test_chat_response_format(llm):
    messages = [{"role": "user", "content": "Name a big city as JSON."}]
    params = SamplingParams(temperature=0, max_tokens=60)
    out = llm.chat(messages, params, response_format={
        "type": "json_schema", "json_schema": {"name": "city", "schema": SCHEMA}})
    jsonschema.validate(json.loads(out.text), SCHEMA)
    assert isinstance(json.loads(llm.chat(messages, params,
                                          response_format={"type": "json_object"}).text), dict)


def test_bad_constraints_raise():
    with pytest.raises(ValueError, match="exactly one"):
        GuidedDecodingParams()
    with pytest.raises(ValueError, match="exactly one"):
        GuidedDecodingParams(regex="a", choice=["a"])
    with pytest.raises(TypeError):
        GuidedDecodingParams(choice="ab")
    with pytest.raises(TypeError):
        SamplingParams(guided_decoding={"json": {}})


def test_uncompilable_constraints_raise_value_error(llm):
    for guided in (GuidedDecodingParams(regex="(a"), GuidedDecodingParams(json="{oops"),
                   GuidedDecodingParams(grammar="root ::= nowhere"),
                   GuidedDecodingParams(json={"type": "string", "pattern": "(?=x)"})):
        with pytest.raises(ValueError):
            llm.generate(["x"], SamplingParams(max_tokens=4, guided_decoding=guided))
    with pytest.raises(ValueError, match="response_format"):
        llm.chat([{"role": "user", "content": "x"}], response_format={"type": "yaml"})
