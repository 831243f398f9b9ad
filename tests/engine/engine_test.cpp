// The engine on the real default model: many sequences through one batched forward pass
// give each sequence exactly the tokens it gets alone; stops and bad input are handled.
#include <gtest/gtest.h>

#include <map>

#include "core/error.h"
#include "default_model_test.h"
#include "engine/engine.h"
#include "greedy_params.h"
#include "isa_cap.h"
#include "test_paths.h"

namespace kite {
namespace {

class EngineTest : public test::DefaultModelTest {
  protected:
    static EngineConfig config(int64_t max_seqs, int64_t batch_tokens = 512) {
        EngineConfig c;
        c.threads = 2;
        c.context_length = 512;
        c.max_sequences = max_seqs;
        c.max_batch_tokens = batch_tokens;
        return c;
    }

    static GenerationParams greedy(int64_t n) { return test::greedy_params(n); }

    std::vector<int32_t> encode(const std::string& text) {
        return tokenizer_->encode(text, true, true);
    }

    // Runs all prompts together; returns each one's generated tokens.
    std::vector<std::vector<int32_t>> generate(const std::vector<std::string>& prompts, int64_t n,
                                               int64_t batch_tokens = 512) {
        Engine engine(*model_, *tokenizer_,
                      config(static_cast<int64_t>(prompts.size()), batch_tokens));
        return generate_on(engine, prompts, n);
    }

    std::vector<std::vector<int32_t>> generate_on(Engine& engine,
                                                  const std::vector<std::string>& prompts,
                                                  int64_t n) {
        std::map<int64_t, size_t> index;
        for (size_t i = 0; i < prompts.size(); ++i)
            index[engine.submit(encode(prompts[i]), greedy(n))] = i;
        std::vector<std::vector<int32_t>> out(prompts.size());
        while (engine.has_work())
            for (const TokenEvent& ev : engine.step()) out[index[ev.seq_id]].push_back(ev.token);
        return out;
    }

    // Each prompt's tokens when it runs alone (computed once for all tests).
    const std::vector<std::vector<int32_t>>& solo_runs(const std::vector<std::string>& prompts,
                                                       int64_t n) {
        static std::map<std::pair<std::vector<std::string>, int64_t>,
                        std::vector<std::vector<int32_t>>>
            cache;
        auto& out = cache[{prompts, n}];
        if (out.empty())
            for (const std::string& p : prompts) out.push_back(generate({p}, n)[0]);
        return out;
    }
};
const std::vector<std::string> kPrompts = {
    "The capital of France is",
    "def fibonacci(n):\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n",
    "<|im_start|>user\nWrite a haiku about autumn leaves.<|im_end|>\n<|im_start|>assistant\n",
    "1, 2, 3, 4,",
    "Once upon a time, in a village at the edge of a great forest, there lived an old "
    "woodcutter and his three daughters. Every morning he",
    "Les couleurs primaires sont",
    "Q: What is 12 times 12?\nA:",
    "A list of fruits:\n-",
};

// Slow: dozens of generations (left out of the sanitizer run).
TEST_F(EngineTest, BatchedSequencesMatchSoloRunsSlow) {
    const int64_t n = 24;
    const std::vector<std::vector<int32_t>>& solo = solo_runs(kPrompts, n);
    for (size_t count : {size_t{1}, size_t{3}, size_t{8}}) {
        std::vector<std::string> prompts(kPrompts.begin(), kPrompts.begin() + count);
        auto together = generate(prompts, n);
        for (size_t i = 0; i < count; ++i)
            EXPECT_EQ(together[i], solo[i]) << "N=" << count << " prompt " << i;
    }
    // Chunked prefill (8 tokens per step, so long prompts span several steps) changes nothing.
    auto chunked = generate(kPrompts, n, 8);
    for (size_t i = 0; i < kPrompts.size(); ++i)
        EXPECT_EQ(chunked[i], solo[i]) << "chunked prompt " << i;
}

// The same on every instruction set the CPU has: each level's kernels (packed tiles sized by
// the token count, chunked prefill) give a sequence the tokens it gets alone.
TEST(EngineIsa, BatchedSequencesMatchSoloRunsOnEveryInstructionSetSlow) {
    const std::vector<std::string> prompts(kPrompts.begin(), kPrompts.begin() + 4);
    const int64_t n = 12;
    for (Isa isa : test::supported_isas()) {
        test::ScopedIsaCap cap(isa);
        const auto model = Model::load(test::default_model_path());
        const auto tokenizer = Tokenizer::from_gguf(model->file());
        auto generate = [&](const std::vector<std::string>& batch, int64_t batch_tokens) {
            EngineConfig c;
            c.threads = 2;
            c.context_length = 256;
            c.max_sequences = static_cast<int64_t>(batch.size());
            c.max_batch_tokens = batch_tokens;
            Engine engine(*model, *tokenizer, c);
            GenerationParams g;
            g.sampling.temperature = 0;
            g.max_tokens = n;
            g.ignore_eos = true;
            std::map<int64_t, size_t> index;
            for (size_t i = 0; i < batch.size(); ++i)
                index[engine.submit(tokenizer->encode(batch[i], true, true), g)] = i;
            std::vector<std::vector<int32_t>> out(batch.size());
            while (engine.has_work())
                for (const TokenEvent& ev : engine.step())
                    out[index[ev.seq_id]].push_back(ev.token);
            return out;
        };
        const auto together = generate(prompts, 512), chunked = generate(prompts, 8);
        for (size_t i = 0; i < prompts.size(); ++i) {
            const auto solo = generate({prompts[i]}, 512)[0];
            EXPECT_EQ(together[i], solo) << isa_name(isa) << " prompt " << i;
            EXPECT_EQ(chunked[i], solo) << isa_name(isa) << " chunked prompt " << i;
        }
    }
}

// Prompts sharing a long prefix (several KV blocks) and differing at the end.
std::vector<std::string> shared_prefix_prompts() {
    const std::string system =
        "<|im_start|>system\nYou are a helpful assistant who answers questions about "
        "geography, history and science briefly and accurately, in one sentence, without "
        "making anything up.<|im_end|>\n<|im_start|>user\n";
    std::vector<std::string> out;
    for (const char* q : {"What is the capital of Italy?", "Name a planet.", "Who wrote Hamlet?",
                          "How many legs does a spider have?"})
        out.push_back(system + q + "<|im_end|>\n<|im_start|>assistant\n");
    return out;
}

// Prefix-cache hits change no token: later requests reuse the first one's prompt blocks
// (and each other's), and get exactly what they get alone.
TEST_F(EngineTest, PrefixCacheHitsMatchSoloRunsSlow) {
    const int64_t n = 16;
    const std::vector<std::string> prompts = shared_prefix_prompts();
    const auto& solo = solo_runs(prompts, n);
    Engine engine(*model_, *tokenizer_, config(4));
    EXPECT_EQ(generate_on(engine, {prompts[0]}, n)[0], solo[0]);
    const std::vector<std::string> rest(prompts.begin() + 1, prompts.end());
    auto together = generate_on(engine, rest, n);
    for (size_t i = 0; i < rest.size(); ++i) EXPECT_EQ(together[i], solo[i + 1]) << i;
    // Again, the whole prompt now cached (but the last token).
    EXPECT_EQ(generate_on(engine, {prompts[2]}, n)[0], solo[2]);
    const Scheduler::Stats& st = engine.scheduler().stats();
    EXPECT_GT(st.prefix_hits, 0);
    EXPECT_GT(double(st.prefix_hits) / double(st.prefix_queries), 0.5);
    // Block accounting: nothing is held once every request is done; cached blocks remain.
    EXPECT_EQ(engine.block_pool().n_used(), 0);
    EXPECT_GT(engine.block_pool().n_cached_free(), 0);
}

// A KV cache too small for all sequences at once: the newest are preempted and recomputed
// later; every sequence still gets its solo tokens, and no block is left held.
TEST_F(EngineTest, PreemptionRecomputesAndMatchesSoloRunsSlow) {
    const int64_t n = 24;
    const auto& solo = solo_runs(kPrompts, n);
    for (bool caching : {true, false}) {
        EngineConfig c = config(8);
        c.prefix_caching = caching;
        // 12 blocks of 16 tokens, while the 8 sequences need about 30 blocks together.
        c.kv_bytes = 12 * KvCache::block_bytes(model_->kv_shape(), c.kv_type, 16);
        Engine engine(*model_, *tokenizer_, c);
        ASSERT_EQ(engine.block_pool().n_blocks(), 12);
        auto together = generate_on(engine, kPrompts, n);
        for (size_t i = 0; i < kPrompts.size(); ++i)
            EXPECT_EQ(together[i], solo[i]) << "caching " << caching << " prompt " << i;
        EXPECT_GT(engine.scheduler().stats().preemptions, 0);
        EXPECT_EQ(engine.block_pool().n_used(), 0);
    }
}

// max_sequences bounds how many run at once; the rest wait their turn.
TEST_F(EngineTest, SequencesBeyondMaxSeqsWait) {
    Engine engine(*model_, *tokenizer_, config(2));
    for (int i = 0; i < 3; ++i) engine.submit(encode("Hello"), greedy(2));
    engine.step();
    EXPECT_EQ(engine.scheduler().n_running(), 2);
    EXPECT_EQ(engine.scheduler().n_waiting(), 1);
    while (engine.has_work()) engine.step();
    EXPECT_EQ(engine.block_pool().n_used(), 0);
}

// A request that could never fit in the KV cache is refused at submit, not left waiting.
TEST_F(EngineTest, RefusesRequestsLargerThanTheKvCache) {
    EngineConfig c = config(1);
    c.context_length = 4096;
    c.kv_bytes = 8 * KvCache::block_bytes(model_->kv_shape(), c.kv_type, 16);
    Engine engine(*model_, *tokenizer_, c);
    EXPECT_EQ(engine.kv_capacity_tokens(), 128);
    EXPECT_THROW(engine.submit(std::vector<int32_t>(100, 1), greedy(100)), Error);
    EXPECT_NO_THROW(engine.validate(std::vector<int32_t>(100, 1), greedy(28)));
    EXPECT_FALSE(engine.has_work());
}

// Cancelling (release) a running sequence frees its blocks at once.
TEST_F(EngineTest, ReleasingARunningSequenceFreesItsBlocks) {
    Engine engine(*model_, *tokenizer_, config(2));
    const int64_t id = engine.submit(encode("The capital of France is"), greedy(50));
    engine.step();
    EXPECT_GT(engine.block_pool().n_used(), 0);
    engine.release(id);
    EXPECT_FALSE(engine.has_work());
    EXPECT_EQ(engine.block_pool().n_used(), 0);
}

// Logprobs: the sampled token's log-probability, and the most likely tokens (greedy: the
// sampled token is the most likely one).
TEST_F(EngineTest, ReportsLogprobs) {
    Engine engine(*model_, *tokenizer_, config(1));
    GenerationParams p = greedy(3);
    p.logprobs = 4;
    engine.submit(encode("The capital of France is"), p);
    int events = 0;
    while (engine.has_work())
        for (const TokenEvent& ev : engine.step()) {
            ++events;
            ASSERT_EQ(ev.top_logprobs.size(), 4u);
            EXPECT_EQ(ev.top_logprobs[0].id, ev.token);
            EXPECT_FLOAT_EQ(ev.top_logprobs[0].logprob, ev.logprob);
            EXPECT_LE(ev.logprob, 0.0f);
            EXPECT_GE(ev.top_logprobs[0].logprob, ev.top_logprobs[3].logprob);
        }
    EXPECT_EQ(events, 3);
}

TEST_F(EngineTest, GreedyAnswersAFactualQuestion) {
    auto out = generate(
        {"<|im_start|>user\nWhat is the capital of France?<|im_end|>\n<|im_start|>assistant\n"}, 8);
    EXPECT_NE(tokenizer_->decode(out[0]).find("Paris"), std::string::npos)
        << tokenizer_->decode(out[0]);
}

TEST_F(EngineTest, StopsAtEosStopStringMaxTokensAndContext) {
    Engine engine(*model_, *tokenizer_, config(1));
    GenerationParams p = greedy(64);
    p.ignore_eos = false;
    int64_t id = engine.submit(
        encode(
            "<|im_start|>user\nWhat is the capital of France?<|im_end|>\n<|im_start|>assistant\n"),
        p);
    FinishReason finish = FinishReason::None;
    while (engine.has_work())
        for (const TokenEvent& ev : engine.step()) finish = ev.finish;
    EXPECT_EQ(finish, FinishReason::EndOfText);
    EXPECT_TRUE(tokenizer_->is_end_of_generation(engine.sequence(id).tokens.back()));

    // The stop string ends generation and never appears in the text.
    GenerationParams s = greedy(64);
    s.stop = {" 7"};
    id = engine.submit(encode("1, 2, 3, 4,"), s);
    std::string text;
    while (engine.has_work())
        for (const TokenEvent& ev : engine.step()) text += ev.text, finish = ev.finish;
    EXPECT_EQ(finish, FinishReason::StopString);
    EXPECT_EQ(text, " 5, 6,");

    id = engine.submit(encode("Hello"), greedy(5));
    while (engine.has_work())
        for (const TokenEvent& ev : engine.step()) finish = ev.finish;
    EXPECT_EQ(finish, FinishReason::MaxTokens);
    EXPECT_EQ(engine.sequence(id).n_generated, 5);

    EngineConfig small = config(1);
    small.context_length = 20;
    Engine tight(*model_, *tokenizer_, small);
    id = tight.submit(encode("The capital of France is"), greedy(100));
    while (tight.has_work())
        for (const TokenEvent& ev : tight.step()) finish = ev.finish;
    EXPECT_EQ(finish, FinishReason::ContextFull);
    EXPECT_EQ(tight.sequence(id).tokens.size(), 20u);
}

TEST_F(EngineTest, RejectsBadRequests) {
    Engine engine(*model_, *tokenizer_, config(1));
    EXPECT_THROW(engine.submit({}, greedy(4)), Error);
    EXPECT_THROW(engine.submit(std::vector<int32_t>(600, 1), greedy(4)), Error);
    EXPECT_THROW(engine.submit({1, 2, 99999999}, greedy(4)), Error);
    EXPECT_THROW(engine.submit({1, 2}, greedy(0)), Error);
    GenerationParams p = greedy(4);
    p.sampling.temperature = -1;
    EXPECT_THROW(engine.submit({1, 2}, p), Error);
    p = greedy(4);
    p.sampling.top_p = 1.5f;
    EXPECT_THROW(engine.submit({1, 2}, p), Error);
    EXPECT_FALSE(engine.has_work());
}

// Memory accounting: the pool holds exactly M_kv = 2 * b * B * L * H_kv * s * d_h bytes, b in
// 32nds of a byte: 64 (f16), 128 (f32), 34 (q8_0: 32 bytes and an f16 scale per 32 values),
// 18 (q4_0); keys and values of different types take (b_k + b_v) / 2.
TEST_F(EngineTest, KvCacheSizeMatchesTheFormula) {
    const ModelConfig& c = model_->config();
    struct Case {
        KvTypes types;
        int64_t b32;
    };
    for (Case k :
         {Case{TensorType::F16, 64}, Case{TensorType::F32, 128}, Case{TensorType::Q8_0, 34},
          Case{TensorType::Q4_0, 18}, Case{{TensorType::Q8_0, TensorType::Q4_0}, 26}}) {
        EngineConfig cfg = config(4);
        cfg.kv_type = k.types;
        Engine engine(*model_, *tokenizer_, cfg);
        const int64_t B = 4, s = 512;
        EXPECT_EQ(engine.kv_cache().bytes(),
                  size_t(2 * k.b32 * B * c.n_layers * c.n_kv_heads * s * c.head_dim / 32))
            << kv_types_name(k.types);
        EXPECT_EQ(kv_bytes_per_element(k.types) * 32, static_cast<double>(k.b32));
    }
}

// Every quantized KV type through the engine: batched sequences, chunked prefill, prefix-cache
// hits and preemption give each sequence the tokens it gets alone with the same KV type (each
// token's keys and values are quantized once, the same way whatever else runs), and the
// greedy answers stay sensible.
TEST_F(EngineTest, QuantizedKvCacheMatchesSoloRunsSlow) {
    const int64_t n = 12;
    const std::vector<std::string> prompts(kPrompts.begin(), kPrompts.begin() + 6);
    for (KvTypes types : {KvTypes{TensorType::Q8_0}, KvTypes{TensorType::Q4_0},
                          KvTypes{TensorType::Q8_0, TensorType::Q4_0}}) {
        const std::string name = kv_types_name(types);
        auto run = [&](const std::vector<std::string>& batch, int64_t blocks, bool caching,
                       int64_t batch_tokens) {
            EngineConfig c = config(static_cast<int64_t>(batch.size()), batch_tokens);
            c.kv_type = types;
            c.prefix_caching = caching;
            if (blocks > 0)
                c.kv_bytes = blocks * KvCache::block_bytes(model_->kv_shape(), types, 16);
            Engine engine(*model_, *tokenizer_, c);
            auto out = generate_on(engine, batch, n);
            EXPECT_EQ(engine.block_pool().n_used(), 0) << name;
            if (blocks > 0) {
                EXPECT_GT(engine.scheduler().stats().preemptions, 0) << name;
            }
            return out;
        };
        std::vector<std::vector<int32_t>> solo;
        for (const std::string& p : prompts) solo.push_back(run({p}, 0, true, 512)[0]);
        const auto together = run(prompts, 0, true, 512), chunked = run(prompts, 0, true, 8),
                   preempted = run(prompts, 8, false, 512);
        for (size_t i = 0; i < prompts.size(); ++i) {
            EXPECT_EQ(together[i], solo[i]) << name << " prompt " << i;
            EXPECT_EQ(chunked[i], solo[i]) << name << " chunked prompt " << i;
            EXPECT_EQ(preempted[i], solo[i]) << name << " preempted prompt " << i;
        }
        // Prefix-cache hits: the shared system prompt's blocks come from the cache.
        const std::vector<std::string> shared = shared_prefix_prompts();
        EngineConfig c = config(4);
        c.kv_type = types;
        Engine engine(*model_, *tokenizer_, c);
        const auto first = generate_on(engine, {shared[0]}, n)[0];
        const auto again = generate_on(engine, {shared[0]}, n)[0];
        EXPECT_EQ(again, first) << name;
        EXPECT_GT(engine.scheduler().stats().prefix_hits, 0) << name;
    }
}

}  // namespace
}  // namespace kite
