"""Generation from Python against the kite command on the same model: greedy output
token-exact, batches equal to one prompt at a time, streams equal to whole generations."""

import asyncio
import subprocess

from conftest import KITE_BIN, MODEL, THREADS

from kite import SamplingParams

GREEDY = SamplingParams(temperature=0, max_tokens=32)


def kite_run(prompt: str, n: int, *flags: str) -> str:
    """What `kite run` prints on stdout (the prompt, then the generated text)."""
    cmd = [str(KITE_BIN), "run", "-m", str(MODEL), "-t", str(THREADS), "-p", prompt,
           "-n", str(n), "--temp", "0", *flags]
    return subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=60).stdout


def test_greedy_matches_kite_run(llm):
    prompt = "The history of the printing press"
    out = llm.generate(prompt, GREEDY)[0]
    assert kite_run(prompt, 32) == prompt + out.text
    assert len(out.token_ids) == 32 and out.finish_reason == "length"
    # The ids are the text's: decoding them gives it back.
    assert llm.detokenize(out.token_ids) == out.text


def test_dry_matches_kite_run_and_leaves_the_loop(llm):
    prompt = "1 2 3 4 1 2 3 4 1 2 3 4 1 2 3 4 1 2 3 4"
    dry = SamplingParams(temperature=0, max_tokens=24, dry_multiplier=0.8)
    out = llm.generate(prompt, dry)[0]
    assert kite_run(prompt, 24, "--dry-multiplier", "0.8") == prompt + out.text
    # Without DRY greedy decoding goes on counting the loop; with it, it leaves.
    plain = llm.generate(prompt, SamplingParams(temperature=0, max_tokens=24))[0]
    assert plain.text.startswith(" 1 2 3 4 1 2 3 4")
    assert not out.text.startswith(" 1 2 3 4 1 2 3 4"), out.text


def test_chat_matches_kite_run_chat(llm):
    question = "What is the capital of France?"
    out = llm.chat([{"role": "user", "content": question}], GREEDY)
    assert out.text
    assert kite_run(question, 32, "--chat") == out.text


def test_batch_of_16_equals_one_by_one(llm):
    prompts = [f"Story number {i}: once upon a time, a {w}" for i, w in
               enumerate(["cat", "dog", "king", "robot", "tree", "ship", "bird", "child",
                          "wizard", "farmer", "river", "star", "baker", "knight", "fox", "owl"])]
    params = SamplingParams(temperature=0, max_tokens=16)
    batch = llm.generate(prompts, params)
    single = [llm.generate(p, params)[0] for p in prompts]
    assert [o.token_ids for o in batch] == [o.token_ids for o in single]
    assert [o.text for o in batch] == [o.text for o in single]


def test_seeded_sampling_repeats(llm):
    params = SamplingParams(temperature=0.8, top_k=40, seed=1234, max_tokens=16)
    a = llm.generate("A recipe for bread:", params)[0]
    b = llm.generate("A recipe for bread:", params)[0]
    assert a.token_ids == b.token_ids


def test_stop_string_and_logprobs(llm):
    full = llm.generate("Count: 1, 2, 3,", SamplingParams(temperature=0, max_tokens=12))[0]
    stop = full.text[4:7]
    out = llm.generate("Count: 1, 2, 3,", SamplingParams(temperature=0, max_tokens=12, stop=stop))[0]
    assert out.finish_reason == "stop" and stop not in out.text
    assert full.text.startswith(out.text)
    lp = llm.generate("Count: 1, 2, 3,",
                      SamplingParams(temperature=0, max_tokens=4, logprobs=3))[0].logprobs
    assert lp is not None and len(lp) == 4
    for entry in lp:
        # Greedy: the sampled token is the most likely one.
        assert len(entry.top) == 3 and entry.top[0][0] == entry.token_id
        assert abs(entry.top[0][1] - entry.logprob) < 1e-6 and entry.logprob <= 0


def test_stream_joins_to_generate(llm):
    prompt = "Ten facts about the moon:"
    whole = llm.generate(prompt, GREEDY)[0]
    stream = llm.stream(prompt, GREEDY)
    pieces = list(stream)
    assert len(pieces) > 1
    assert "".join(pieces) == whole.text
    assert stream.finish_reason == "length"


def test_astream_joins_to_generate(llm):
    prompt = "The rules of chess"
    whole = llm.generate(prompt, GREEDY)[0]

    async def collect():
        return [piece async for piece in llm.astream(prompt, GREEDY)]

    assert "".join(asyncio.run(collect())) == whole.text


def test_tokenize_roundtrip(llm):
    ids = llm.tokenize("Hello world")
    assert ids and llm.detokenize(ids) == "Hello world"
    plain = llm.tokenize("Hello world", add_special=False)
    assert ids[len(ids) - len(plain):] == plain


def test_draft_model_keeps_the_output(llm):
    # Speculative decoding with a draft model: the target's output, token for token.
    import kite

    prompt = "The three primary colors are"
    with kite.LLM(str(MODEL), threads=THREADS, max_seqs=2, draft_model=str(MODEL)) as spec:
        assert spec.generate(prompt, GREEDY)[0].token_ids == llm.generate(prompt, GREEDY)[0].token_ids


def test_chat_with_tools_parses_calls(llm):
    import kite

    content, calls = kite._kite.parse_tool_calls(
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>')
    assert content == "" and len(calls) == 1
    assert calls[0][1] == "get_weather" and '"Paris"' in calls[0][2]
    tools = [{"type": "function", "function": {
        "name": "get_weather", "description": "Weather of a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]
    out = llm.chat([{"role": "user", "content": "Weather in Paris?"}],
                   kite.SamplingParams(temperature=0, max_tokens=24), tools=tools)
    assert out.text or out.tool_calls
