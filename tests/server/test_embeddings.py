"""POST /v1/embeddings with nomic-embed-v1.5 (skipped when it is not installed), through the
official openai client: retrieval ranks the paragraph that answers a question first, the
response has OpenAI's shape, and bad input gets a 400 naming the field while the server keeps
serving. Also: a generative model answers /v1/embeddings with a clear 400, or, served with
--pooling, with its pooled final hidden state (llama-embedding's vectors, from
tests/fixtures/embeddings); an embedding model answers the completion routes with a 400.
all-MiniLM-L6-v2 (bert) gives llama-embedding's vectors and sentence-transformers' published
similarities."""

import base64
import json
import math
import struct

import openai
import pytest

from test_server import ROOT, Server

EMBED_MODEL = ROOT / "models" / "nomic-embed-v1.5.gguf"
MINILM_MODEL = ROOT / "models" / "all-minilm-l6-v2.gguf"

PARAGRAPHS = [
    "The Eiffel Tower was completed in 1889 for the World's Fair in Paris.",
    "Photosynthesis turns sunlight, water and carbon dioxide into glucose and oxygen.",
    "The Pacific is the largest and deepest of the Earth's oceans.",
    "Mount Everest, at 8,849 metres, is the highest mountain above sea level.",
    "Honey bees communicate the direction of flowers with a waggle dance.",
    "The Great Wall of China stretches for thousands of kilometres across the north.",
    "Penicillin was discovered by Alexander Fleming in 1928.",
    "A marathon is 42.195 kilometres long.",
    "The human heart has four chambers: two atria and two ventricles.",
    "Jupiter is the largest planet of the solar system.",
    "Mozart composed more than six hundred works before he died at thirty-five.",
    "The Amazon rainforest produces a large share of the world's oxygen and rain.",
    "Chess is played on a board of sixty-four squares.",
    "Water boils at 100 degrees Celsius at sea level.",
    "The Rosetta Stone helped scholars decipher Egyptian hieroglyphs.",
    "Kangaroos carry their young in a pouch.",
    "The speed of light in vacuum is about 299,792 kilometres per second.",
    "Shakespeare wrote Hamlet around the year 1600.",
    "Coffee beans are the roasted seeds of the coffea plant's cherries.",
    "The Sahara is the largest hot desert in the world.",
    "DNA is a double helix of two strands of nucleotides.",
    "The first powered flight was made by the Wright brothers in 1903.",
    "Tokyo is the capital of Japan and one of the largest cities in the world.",
    "Volcanoes erupt when magma rises through the Earth's crust.",
    "The piano has eighty-eight keys.",
    "Antarctica is the coldest continent on Earth.",
    "Bread rises because yeast produces carbon dioxide gas in the dough.",
    "Saturn's rings are made mostly of ice and rock.",
    "The Nile is among the longest rivers in the world.",
    "Vaccines train the immune system to recognise a pathogen.",
]


@pytest.fixture(scope="module")
def embed_server():
    if not EMBED_MODEL.exists():
        pytest.skip("nomic-embed-v1.5 is not installed (bash scripts/install-model.sh "
                    "nomic-embed-v1.5)")
    s = Server(model=str(EMBED_MODEL))
    yield s
    s.stop()
    assert s.proc.returncode == 0, "kite serve did not exit cleanly"


def cosine(a, b):
    return sum(x * y for x, y in zip(a, b)) / math.sqrt(sum(x * x for x in a) *
                                                        sum(y * y for y in b))


def test_the_answering_paragraph_ranks_first(embed_server):
    c = embed_server.client()
    docs = c.embeddings.create(model="nomic-embed-v1.5",
                               input=["search_document: " + p for p in PARAGRAPHS])
    assert [d.index for d in docs.data] == list(range(len(PARAGRAPHS)))
    assert all(len(d.embedding) == 768 for d in docs.data)
    assert docs.usage.prompt_tokens == docs.usage.total_tokens > len(PARAGRAPHS) * 5
    questions = {
        "search_query: When did the Wright brothers first fly?": 21,
        "search_query: How many keys does a piano have?": 24,
        "search_query: Who discovered penicillin?": 6,
    }
    for question, answer in questions.items():
        q = c.embeddings.create(model="nomic-embed-v1.5", input=question).data[0].embedding
        scores = [cosine(q, d.embedding) for d in docs.data]
        assert max(range(len(scores)), key=scores.__getitem__) == answer, question


def test_dimensions_base64_and_token_ids(embed_server):
    c = embed_server.client()
    full = c.embeddings.create(model="nomic-embed-v1.5", input="hello world").data[0].embedding
    short = c.embeddings.create(model="nomic-embed-v1.5", input="hello world",
                                dimensions=64).data[0].embedding
    assert len(short) == 64
    assert abs(sum(x * x for x in short) - 1) < 1e-4
    assert cosine(short, full[:64]) > 0.9999
    raw = embed_server.http.post("/v1/embeddings", json={
        "input": "hello world", "encoding_format": "base64"}).json()
    data = base64.b64decode(raw["data"][0]["embedding"])
    floats = struct.unpack(f"<{len(data) // 4}f", data)
    assert len(floats) == 768 and cosine(floats, full) > 0.999999
    # [CLS] hello world [SEP], as ids, one input and a list of inputs
    ids = [101, 7592, 2088, 102]
    one = embed_server.http.post("/v1/embeddings", json={"input": ids}).json()
    assert cosine(one["data"][0]["embedding"], full) > 0.999999
    two = embed_server.http.post("/v1/embeddings", json={"input": [ids, ids[:2] + [102]]}).json()
    assert len(two["data"]) == 2 and two["usage"]["prompt_tokens"] == 7


@pytest.mark.parametrize("body,field", [
    ({"input": []}, "input"),
    ({"input": ""}, "input"),
    ({"input": ["fine", ""]}, "input"),
    ({}, "input"),
    ({"input": [101, 999999]}, "input"),
    ({"input": [[101, -1]]}, "input"),
    ({"input": ["x"] * 2049}, "input"),
    ({"input": "word " * 3000}, "input"),
    ({"input": "x", "dimensions": 0}, "dimensions"),
    ({"input": "x", "dimensions": 769}, "dimensions"),
    ({"input": "x", "encoding_format": "int8"}, "encoding_format"),
])
def test_bad_input_is_a_400_naming_the_field(embed_server, body, field):
    r = embed_server.http.post("/v1/embeddings", json=body)
    assert r.status_code == 400, r.text
    assert r.json()["error"]["param"] == field
    assert embed_server.http.get("/health").status_code == 200


def test_an_embedding_model_does_not_complete(embed_server):
    with pytest.raises(openai.BadRequestError, match="embedding model"):
        embed_server.client().completions.create(model="nomic-embed-v1.5", prompt="hi",
                                                 max_tokens=4)


def test_a_generative_model_cannot_embed():
    s = Server()
    try:
        with pytest.raises(openai.BadRequestError, match="cannot embed"):
            s.client().embeddings.create(model="default", input="hello")
    finally:
        s.stop()


def test_a_generative_model_embeds_with_a_pooling():
    fixture = json.loads((ROOT / "tests" / "fixtures" / "embeddings" / "smollm2-last.json")
                         .read_text(encoding="utf-8"))
    cases = fixture["cases"][:6]
    s = Server("--pooling", "last")
    try:
        r = s.client().embeddings.create(model="default", input=[c["text"] for c in cases])
        for c, item in zip(cases, r.data):
            # 0.999 as in tests/model/decoder_embed_test.cpp (quantized activations differ).
            assert cosine(item.embedding, c["embedding"]) >= 0.999, c["text"]
        assert r.usage.prompt_tokens == sum(c["tokens"] for c in cases)
    finally:
        s.stop()


def test_bert_matches_llama_embedding_and_sentence_transformers():
    if not MINILM_MODEL.exists():
        pytest.skip("all-minilm-l6-v2 is not installed (bash scripts/install-model.sh "
                    "all-minilm-l6-v2)")
    fixture = json.loads((ROOT / "tests" / "fixtures" / "embeddings" / "minilm.json")
                         .read_text(encoding="utf-8"))
    cases = fixture["cases"][:8]
    s = Server(model=str(MINILM_MODEL))
    try:
        c = s.client()
        r = c.embeddings.create(model="all-minilm-l6-v2", input=[x["text"] for x in cases])
        for case, item in zip(cases, r.data):
            assert len(item.embedding) == 384
            assert cosine(item.embedding, case["embedding"]) >= 0.9999, case["text"]
        assert r.usage.prompt_tokens == sum(x["tokens"] for x in cases)
        # The sentence-transformers quickstart, whose similarities for this model the library
        # publishes: 0.6660, 0.1046 and 0.1411.
        quick = ["The weather is lovely today.", "It's so sunny outside!",
                 "He drove to the stadium."]
        v = [d.embedding for d in c.embeddings.create(model="all-minilm-l6-v2", input=quick).data]
        for (i, j), expected in {(0, 1): 0.6660, (0, 2): 0.1046, (1, 2): 0.1411}.items():
            assert abs(cosine(v[i], v[j]) - expected) < 0.001, (i, j)
    finally:
        s.stop()


def test_concurrent_requests_get_their_own_vectors(embed_server):
    """Requests that wait together go through the encoder as one batch; each gets its own."""
    import concurrent.futures
    c = embed_server.client()
    groups = [PARAGRAPHS[i:i + 5] for i in range(0, 20, 5)]
    alone = [[d.embedding for d in c.embeddings.create(model="nomic-embed-v1.5", input=g).data] for g in groups]
    with concurrent.futures.ThreadPoolExecutor(len(groups)) as pool:
        together = list(pool.map(
            lambda g: [d.embedding for d in c.embeddings.create(model="nomic-embed-v1.5", input=g).data],
            groups))
    for a, t in zip(alone, together):
        assert len(a) == len(t) == 5
        for x, y in zip(a, t):
            assert cosine(x, y) > 0.99999
