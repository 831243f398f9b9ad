"""LLM.embed against llama.cpp's llama-embedding on the same files (tests/fixtures/embeddings,
made by tools/make-embedding-fixtures.sh): nomic-embed-text-v1.5 and all-MiniLM-L6-v2
(encoders, their files' pooling), SmolLM2-135M pooled by mean (a generative model)."""

import json

import numpy as np
import pytest

import kite
from conftest import ROOT, THREADS

FIXTURES = ROOT / "tests" / "fixtures" / "embeddings"


def fixture(name):
    data = json.loads((FIXTURES / f"{name}.json").read_text())
    path = ROOT / "models" / f"{data['model']}.gguf"
    if not path.exists():
        pytest.skip(f"{path.name} is not installed (scripts/install-model.sh {data['model']})")
    return path, data["cases"]


def cosines(rows, cases):
    want = np.array([c["embedding"] for c in cases], dtype=np.float64)
    want /= np.linalg.norm(want, axis=1, keepdims=True)
    return np.sum(rows.astype(np.float64) * want, axis=1)


@pytest.mark.parametrize("name", ["nomic", "minilm"])
def test_encoders_match_llama_embedding(name):
    path, cases = fixture(name)
    with kite.LLM(str(path), threads=THREADS) as llm:
        rows = llm.embed([c["text"] for c in cases])
        assert rows.dtype == np.float32 and rows.shape == (len(cases), len(cases[0]["embedding"]))
        assert np.allclose(np.linalg.norm(rows, axis=1), 1, atol=1e-5)
        assert cosines(rows, cases).min() >= 0.9999
        # Token ids in, the same vectors out; one input alone, the same vector as in the batch.
        with_ids = [c for c in cases if "ids" in c]
        if with_ids:
            by_ids = llm.embed([c["ids"] for c in with_ids])
            assert cosines(by_ids, with_ids).min() >= 0.9999
        one = llm.embed(cases[3]["text"])
        assert one.shape == (1, rows.shape[1])
        assert float(one[0] @ rows[3]) > 0.99999


def test_matryoshka_dimensions_renormalise():
    path, cases = fixture("nomic")
    with kite.LLM(str(path), threads=THREADS) as llm:
        full = llm.embed(cases[0]["text"])[0]
        short = llm.embed(cases[0]["text"], dimensions=64)[0]
        assert short.shape == (64,)
        assert np.allclose(short, full[:64] / np.linalg.norm(full[:64]), atol=1e-6)


def test_a_generative_model_embeds_with_a_pooling():
    path, cases = fixture("smollm2-mean")
    with kite.LLM(str(path), threads=THREADS, pooling="mean") as llm:
        rows = llm.embed([c["text"] for c in cases[:8]])
        # Quantized activations round differently from llama.cpp's (bench/RESULTS.md).
        assert cosines(rows, cases[:8]).min() >= 0.999


def test_bad_embedding_input_raises(llm):
    with pytest.raises(ValueError, match="generative model"):
        llm.embed("hello")
    path, _ = fixture("minilm")
    with kite.LLM(str(path), threads=THREADS) as enc:
        for bad, message in [([], "nothing to embed"), ([""], "empty"),
                             ([[10**9]], "out of"), (["a " * 5000], "context")]:
            with pytest.raises(ValueError, match=message):
                enc.embed(bad)
        for dims in (0, 385):
            with pytest.raises(ValueError, match="dimensions"):
                enc.embed("x", dimensions=dims)
        with pytest.raises(TypeError):
            enc.embed(42)
        with pytest.raises(TypeError):
            enc.embed([1.5])
        assert enc.embed("still serving").shape == (1, 384)
    with pytest.raises(ValueError, match="pooling"):
        kite.LLM(str(path), pooling="max")
