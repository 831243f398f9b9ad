// Speculative decoding in the engine on the default model: greedy tokens (and sampled tokens
// for a seed) identical to plain decoding for K in {1, 4, 8}, alone and batched with other
// sequences, prefills and preemption; rejected drafts leave no block held and never reach
// the prefix cache.
#include <gtest/gtest.h>

#include <map>

#include "default_model_test.h"
#include "engine/engine.h"
#include "greedy_params.h"
#include "test_paths.h"

namespace kite {
namespace {

// Proposes `k` copies of a fixed token: nearly always wrong, so most drafts are rejected,
// crossing block boundaries when k is large.
class WrongDrafter : public Drafter {
  public:
    explicit WrongDrafter(int32_t token) : token_(token) {}
    void propose(std::span<const DraftRequest> requests) override {
        for (const DraftRequest& r : requests)
            r.out->assign(static_cast<size_t>(r.max_tokens), token_);
    }

  private:
    int32_t token_;
};

class SpecEngineTest : public test::DefaultModelTest {
  protected:
    static EngineConfig config(int64_t max_seqs, int64_t draft_max) {
        EngineConfig c;
        c.threads = 2;
        c.context_length = 512;
        c.max_sequences = max_seqs;
        c.prefix_caching = false;  // so each step's held blocks are exactly the sequences'
        if (draft_max > 0) {
            c.speculation.drafter = DrafterKind::Ngram;
            c.speculation.draft_max = draft_max;
            c.speculation.adaptive_length = false;  // K as given: the counts are exact
        }
        return c;
    }

    static GenerationParams greedy(int64_t n) { return test::greedy_params(n); }

    struct Run {
        std::vector<std::vector<int32_t>> tokens;
        std::vector<std::vector<float>> logprobs;
    };

    // Runs the prompts together (each with its own params); checks block accounting after
    // every step: each running sequence holds exactly the blocks its verified tokens need.
    Run generate(Engine& engine, const std::vector<std::string>& prompts,
                 const std::vector<GenerationParams>& params) {
        std::map<int64_t, size_t> index;
        for (size_t i = 0; i < prompts.size(); ++i)
            index[engine.submit(tokenizer_->encode(prompts[i], true, true), params[i])] = i;
        Run run;
        run.tokens.resize(prompts.size());
        run.logprobs.resize(prompts.size());
        while (engine.has_work()) {
            for (const TokenEvent& ev : engine.step()) {
                run.tokens[index[ev.seq_id]].push_back(ev.token);
                run.logprobs[index[ev.seq_id]].push_back(ev.logprob);
            }
            int64_t held = 0;
            for (const auto& [id, i] : index) {
                const Sequence& s = engine.sequence(id);
                if (s.finished() || s.n_computed == 0) continue;
                EXPECT_TRUE(s.draft.empty());
                const int64_t bs = 16;
                EXPECT_EQ(static_cast<int64_t>(s.block_table.size()), (s.n_computed + bs - 1) / bs);
                held += static_cast<int64_t>(s.block_table.size());
            }
            if (!engine.block_pool().prefix_caching()) {
                EXPECT_EQ(engine.block_pool().n_used(), held);
            }
        }
        for (const auto& [id, i] : index) engine.release(id);
        EXPECT_EQ(engine.block_pool().n_used(), 0);
        return run;
    }

    Run generate(const EngineConfig& c, const std::vector<std::string>& prompts,
                 const GenerationParams& p) {
        Engine engine(*model_, *tokenizer_, c);
        return generate(engine, prompts, std::vector<GenerationParams>(prompts.size(), p));
    }
};
// Repetitive prompts (prompt lookup finds matches) and plain ones.
const std::vector<std::string> kPrompts = {
    "1, 2, 3, 4, 5, 1, 2, 3, 4, 5, 1, 2, 3,",
    "def add(a, b):\n    return a + b\n\n\ndef add(a, b):\n    return",
    "Repeat after me: the quick brown fox jumps over the lazy dog. The quick brown fox",
    "The capital of France is",
    "<|im_start|>user\nWrite a haiku about autumn leaves.<|im_end|>\n<|im_start|>assistant\n",
    "A list of fruits:\n- apple\n- banana\n- cherry\n- apple\n-",
};

TEST_F(SpecEngineTest, GreedyTokensMatchPlainDecodingAloneAndBatchedSlow) {
    const int64_t n = 16;
    const GenerationParams p = greedy(n);
    std::vector<std::vector<int32_t>> plain;
    for (const std::string& prompt : kPrompts)
        plain.push_back(generate(config(1, 0), {prompt}, p).tokens[0]);
    for (int64_t k : {1, 4, 8}) {
        for (size_t i = 0; i < 3; ++i)  // the repetitive prompts
            EXPECT_EQ(generate(config(1, k), {kPrompts[i]}, p).tokens[0], plain[i])
                << "alone, K=" << k << " prompt " << i;
        Engine engine(*model_, *tokenizer_, config(static_cast<int64_t>(kPrompts.size()), k));
        const Run together =
            generate(engine, kPrompts, std::vector<GenerationParams>(kPrompts.size(), p));
        for (size_t i = 0; i < kPrompts.size(); ++i)
            EXPECT_EQ(together.tokens[i], plain[i]) << "batched, K=" << k << " prompt " << i;
        // The drafts were real: many proposed, many kept (the repetitive prompts).
        EXPECT_GT(engine.stats().drafted_tokens, 16) << "K=" << k;
        EXPECT_GT(engine.stats().accepted_tokens, 10) << "K=" << k;
        EXPECT_EQ(engine.stats().generated_tokens, n * static_cast<int64_t>(kPrompts.size()));
    }
}

// The adaptive length (engine/draft_length.h) changes only how many guesses ride in each
// pass, never the tokens: alone and batched with sequences whose drafts it shortens.
TEST_F(SpecEngineTest, AdaptiveLengthKeepsThePlainTokens) {
    const GenerationParams p = greedy(16);
    const auto n = static_cast<int64_t>(kPrompts.size());
    const Run plain = generate(config(n, 0), kPrompts, p);
    EngineConfig c = config(n, 8);
    c.speculation.adaptive_length = true;
    Engine engine(*model_, *tokenizer_, c);
    EXPECT_EQ(generate(engine, {kPrompts[0]}, {p}).tokens[0], plain.tokens[0]);
    EXPECT_GT(engine.stats().drafted_tokens, 0);  // nothing measured yet: the first step drafts
    EXPECT_EQ(generate(engine, kPrompts, std::vector<GenerationParams>(n, p)).tokens, plain.tokens);
}

// Sampling (temperature, top-p, penalties): verification draws as plain sampling does, so a
// seed gives the same tokens with and without speculation.
TEST_F(SpecEngineTest, SampledTokensForASeedMatchPlainDecodingSlow) {
    GenerationParams p = greedy(16);
    p.sampling.temperature = 0.9f;
    p.sampling.top_p = 0.9f;
    p.sampling.repetition_penalty = 1.1f;
    p.sampling.presence_penalty = 0.3f;
    for (uint64_t seed = 1; seed <= 3; ++seed) {
        p.sampling.seed = seed;
        const std::vector<std::string> prompts(kPrompts.begin(), kPrompts.begin() + 3);
        const Run plain = generate(config(3, 0), prompts, p);
        const Run spec = generate(config(3, 4), prompts, p);
        for (size_t i = 0; i < prompts.size(); ++i)
            EXPECT_EQ(spec.tokens[i], plain.tokens[i]) << "seed " << seed << " prompt " << i;
    }
}

// Mostly rejected drafts spanning block boundaries: tokens and their log-probabilities equal
// plain decoding (the cache after a rejection is that of a sequence that never drafted),
// blocks past the verified tokens go back at once (checked every step in generate), and the
// prefix cache holds only blocks of verified tokens.
TEST_F(SpecEngineTest, RejectedDraftsLeaveTheCacheAndTheBlockPool) {
    const int64_t n = 24;
    GenerationParams p = greedy(n);
    p.logprobs = 0;
    const std::string prompt = kPrompts[4];
    const Run plain = generate(config(1, 0), {prompt}, p);

    EngineConfig c = config(1, 0);
    c.prefix_caching = true;
    c.speculation.draft_max = 20;
    c.speculation.adaptive_length = false;
    Engine engine(*model_, *tokenizer_, c);
    engine.set_drafter(
        std::make_unique<WrongDrafter>(tokenizer_->encode(" zebra", false, false)[0]));
    const Run spec = generate(engine, {prompt}, {p});
    EXPECT_EQ(spec.tokens[0], plain.tokens[0]);
    EXPECT_EQ(spec.logprobs[0], plain.logprobs[0]);
    EXPECT_GT(engine.stats().drafted_tokens, 30);
    EXPECT_LT(engine.stats().accepted_tokens, engine.stats().drafted_tokens / 4);
    // Cached: exactly the full blocks of the verified tokens (the last sampled token never
    // ran through the model), each findable under the hash of its verified tokens.
    const int64_t n_tokens =
        static_cast<int64_t>(tokenizer_->encode(prompt, true, true).size()) + n - 1;
    EXPECT_EQ(engine.block_pool().n_cached_free(), n_tokens / 16);
    const Run again = generate(engine, {prompt}, {p});
    EXPECT_EQ(again.tokens[0], plain.tokens[0]);
    EXPECT_GT(engine.scheduler().stats().prefix_hits, 0);
}

// A KV cache too small for all sequences: speculating sequences are preempted (drafts
// dropped) and recomputed, one is cancelled mid-generation, and everything else still gets
// its plain tokens; no block stays held.
TEST_F(SpecEngineTest, PreemptionAndCancellationMidSpeculationSlow) {
    const int64_t n = 20;
    const GenerationParams p = greedy(n);
    std::vector<std::vector<int32_t>> plain;
    for (const std::string& prompt : kPrompts)
        plain.push_back(generate(config(1, 0), {prompt}, p).tokens[0]);
    EngineConfig c = config(static_cast<int64_t>(kPrompts.size()), 4);
    c.kv_bytes = 10 * KvCache::block_bytes(model_->kv_shape(), c.kv_type, 16);
    Engine engine(*model_, *tokenizer_, c);
    ASSERT_EQ(engine.block_pool().n_blocks(), 10);
    std::map<int64_t, size_t> index;
    for (size_t i = 0; i < kPrompts.size(); ++i)
        index[engine.submit(tokenizer_->encode(kPrompts[i], true, true), p)] = i;
    const int64_t cancelled = index.begin()->first;
    std::vector<std::vector<int32_t>> out(kPrompts.size());
    for (int step = 0; engine.has_work(); ++step) {
        if (step == 6) {
            engine.release(cancelled);
            index.erase(cancelled);
        }
        for (const TokenEvent& ev : engine.step()) out[index.at(ev.seq_id)].push_back(ev.token);
    }
    for (const auto& [id, i] : index) {
        EXPECT_EQ(out[i], plain[i]) << "prompt " << i;
        engine.release(id);
    }
    EXPECT_GT(engine.scheduler().stats().preemptions, 0);
    EXPECT_GT(engine.stats().accepted_tokens, 0);
    EXPECT_EQ(engine.block_pool().n_used(), 0);
}

// Per-request opt-out: a request that does not speculate drafts nothing beside one that does.
TEST_F(SpecEngineTest, RequestsCanOptOut) {
    GenerationParams off = greedy(6), on = greedy(6);
    off.speculative = false;
    Engine engine(*model_, *tokenizer_, config(1, 4));
    generate(engine, {kPrompts[0]}, {off});
    EXPECT_EQ(engine.stats().drafted_tokens, 0);
    generate(engine, {kPrompts[0]}, {on});
    EXPECT_GT(engine.stats().drafted_tokens, 0);
}

}  // namespace
}  // namespace kite
