"""Bad input raises a Python exception with one clear message, never crashes; Ctrl-C stops a
generation and leaves the LLM usable."""

import os
import signal
import threading

import pytest
from conftest import MODEL

import kite
from kite import KiteError, SamplingParams

SHORT = SamplingParams(temperature=0, max_tokens=8)


def test_unknown_model_name():
    with pytest.raises(KiteError, match="neither a model file nor an installed model"):
        kite.LLM("no-such-model")
    with pytest.raises(KiteError):
        kite.LLM("/nonexistent/model.gguf")
    assert issubclass(KiteError, RuntimeError)


@pytest.mark.parametrize("kwargs, error", [
    ({"threads": "2"}, TypeError),
    ({"threads": 0}, ValueError),
    ({"max_seqs": 0}, ValueError),
    ({"kv_type": "q3"}, ValueError),
    ({"kv_type": 8}, TypeError),
    ({"ctx": 2.5}, TypeError),
])
def test_bad_llm_arguments(kwargs, error):
    with pytest.raises(error):
        kite.LLM(str(MODEL), **kwargs)


@pytest.mark.parametrize("kwargs, error", [
    ({"temperature": "hot"}, TypeError),
    ({"max_tokens": 0}, ValueError),
    ({"max_tokens": 2.0}, TypeError),
    ({"temperature": float("nan")}, ValueError),
    ({"seed": -1}, ValueError),
    ({"logprobs": 100}, ValueError),
    ({"stop": [1]}, TypeError),
    ({"ignore_eos": 1}, TypeError),
    ({"dry_multiplier": "x"}, TypeError),
    ({"dry_sequence_breakers": "\n"}, TypeError),
])
def test_bad_sampling_params(kwargs, error):
    with pytest.raises(error):
        SamplingParams(**kwargs)


@pytest.mark.parametrize("kwargs, field", [
    ({"temperature": -1.0}, "temperature"),
    ({"top_p": 2.0}, "top_p"),
    ({"top_k": -3}, "top_k"),
    ({"logit_bias": {10**9: 1.0}}, "logit_bias"),
    ({"dry_base": 0.5, "dry_multiplier": 1.0}, "dry_base"),
    ({"dry_sequence_breakers": [""]}, "dry_sequence_breakers"),
])
def test_out_of_range_sampling_raises_value_error(llm, kwargs, field):
    with pytest.raises(ValueError, match=field):
        llm.generate("Hello", SamplingParams(**kwargs))
    # Nothing was submitted: the engine is idle and still works.
    assert not llm._engine.has_work()
    assert llm.generate("Hello", SHORT)[0].token_ids


def test_bad_generate_arguments(llm):
    with pytest.raises(TypeError):
        llm.generate(123)
    with pytest.raises(TypeError):
        llm.generate("Hello", {"temperature": 0})
    with pytest.raises(ValueError):
        llm.generate(["a", "b"], [SHORT])
    with pytest.raises(ValueError):
        llm.generate([1] * (llm.context_length + 1), SHORT)
    with pytest.raises(KiteError):
        llm.detokenize([10**9])
    with pytest.raises(TypeError):
        llm.tokenize(b"bytes")
    with pytest.raises(ValueError, match="response_format"):
        llm.chat([{"role": "user", "content": "hi"}], response_format={"type": "xml"})
    with pytest.raises(TypeError, match="response_format"):
        llm.chat([{"role": "user", "content": "hi"}], response_format=["json"])


def test_closed_llm_raises():
    llm = kite.LLM(str(MODEL), threads=2, max_seqs=1)
    llm.close()
    with pytest.raises(KiteError, match="closed"):
        llm.generate("Hello", SHORT)
    with pytest.raises(KiteError, match="closed"):
        llm.tokenize("Hello")
    llm.close()  # twice is fine


def test_keyboard_interrupt_from_stream_consumer(llm):
    long = SamplingParams(temperature=0, max_tokens=200, ignore_eos=True)
    seen = 0
    with pytest.raises(KeyboardInterrupt):
        for _ in llm.stream("Write a long story:", long):
            seen += 1
            if seen == 3:
                raise KeyboardInterrupt
    # Leaving the loop dropped the stream, which cancelled its request.
    assert not llm._engine.has_work()
    assert llm.generate("Hello", SHORT)[0].finish_reason == "length"


def test_sigint_cancels_generate(llm):
    long = SamplingParams(temperature=0, max_tokens=2000, ignore_eos=True)
    timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            llm.generate(["Write a long story:"] * 4, long)
    finally:
        timer.cancel()
    assert not llm._engine.has_work()
    assert llm.generate("Hello", SHORT)[0].token_ids
