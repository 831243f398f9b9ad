// Speculative decoding with a draft model: the default model verifies what its Q4_0 variant
// (scripts/make-variants.sh) drafts greedily. Greedy tokens equal plain decoding for K in
// {1, 4, 8}, alone and batched, and with guesses among the first token ids only; both KV
// caches give every block back when requests end, are cancelled or preempted; a draft model
// with another vocabulary is refused.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>

#include <fmt/format.h>

#include "core/error.h"
#include "engine/calibration_text.h"
#include "engine/draft_vocabulary.h"
#include "engine/engine.h"
#include "engine/model_drafter.h"
#include "greedy_params.h"
#include "run_command.h"
#include "test_paths.h"
#include "tiny_llama.h"

namespace kite {
namespace {

namespace fs = std::filesystem;

std::string draft_model_path() {
    return std::string(KITE_SOURCE_DIR) + "/models/variants/default-q4_0.gguf";
}

class SpecModelDrafterTest : public ::testing::Test {
  protected:
    static void SetUpTestSuite() {
        target_ = Model::load(test::default_model_path()).release();
        tokenizer_ = Tokenizer::from_gguf(target_->file()).release();
        if (fs::exists(draft_model_path())) draft_ = Model::load(draft_model_path()).release();
    }
    static void TearDownTestSuite() {
        delete draft_;
        delete tokenizer_;
        delete target_;
    }
    void SetUp() override {
        if (!draft_) GTEST_SKIP() << draft_model_path() << " is missing: scripts/make-variants.sh";
    }

    static EngineConfig config(int64_t max_seqs, int64_t draft_max) {
        EngineConfig c;
        c.threads = 2;
        c.context_length = 256;
        c.max_sequences = max_seqs;
        c.prefix_caching = false;
        if (draft_max > 0) {
            c.speculation.drafter = DrafterKind::Model;
            c.speculation.draft_max = draft_max;
            c.speculation.adaptive_length = false;  // K as given: the counts are exact
            c.speculation.draft_model = draft_;
        }
        return c;
    }

    static GenerationParams greedy(int64_t n) { return test::greedy_params(n); }

    // Runs the prompts together; the target's blocks are exactly what the verified tokens
    // need after every step, and neither cache holds a block once all are released.
    static std::vector<std::vector<int32_t>> generate(Engine& engine,
                                                      const std::vector<std::string>& prompts,
                                                      const GenerationParams& p) {
        std::map<int64_t, size_t> index;
        for (size_t i = 0; i < prompts.size(); ++i)
            index[engine.submit(tokenizer_->encode(prompts[i], true, true), p)] = i;
        std::vector<std::vector<int32_t>> out(prompts.size());
        while (engine.has_work()) {
            for (const TokenEvent& ev : engine.step()) out[index[ev.seq_id]].push_back(ev.token);
            for (const auto& [id, i] : index) {
                const Sequence& s = engine.sequence(id);
                if (s.finished() || s.n_computed == 0) continue;
                EXPECT_EQ(static_cast<int64_t>(s.block_table.size()), (s.n_computed + 15) / 16);
            }
        }
        for (const auto& [id, i] : index) engine.release(id);
        EXPECT_EQ(engine.block_pool().n_used(), 0);
        if (engine.drafter()) {
            EXPECT_EQ(engine.drafter()->blocks_used(), 0);
        }
        return out;
    }

    static std::vector<std::vector<int32_t>> generate(const EngineConfig& c,
                                                      const std::vector<std::string>& prompts,
                                                      const GenerationParams& p) {
        Engine engine(*target_, *tokenizer_, c);
        return generate(engine, prompts, p);
    }

    static Model* target_;
    static Model* draft_;
    static Tokenizer* tokenizer_;
};
Model* SpecModelDrafterTest::target_ = nullptr;
Model* SpecModelDrafterTest::draft_ = nullptr;
Tokenizer* SpecModelDrafterTest::tokenizer_ = nullptr;

const std::vector<std::string> kPrompts = {
    "The capital of France is",
    "def fibonacci(n):\n    if n < 2:\n        return n\n    return",
    "<|im_start|>user\nWrite a haiku about autumn leaves.<|im_end|>\n<|im_start|>assistant\n",
    "Once upon a time, in a small village by the sea,",
};

// A short run of every path (catch-up prefill, rollback after rejections, batching) that
// stays within a few seconds.
TEST_F(SpecModelDrafterTest, GreedyTokensMatchPlainDecoding) {
    const GenerationParams p = greedy(12);
    const std::vector<std::string> prompts(kPrompts.begin(), kPrompts.begin() + 2);
    const auto plain = generate(config(2, 0), prompts, p);
    Engine engine(*target_, *tokenizer_, config(2, 4));
    EXPECT_EQ(generate(engine, prompts, p), plain);
    EXPECT_GT(engine.stats().drafted_tokens, 8);
    EXPECT_GT(engine.stats().accepted_tokens, 4);
    EXPECT_EQ(engine.stats().generated_tokens, 24);
}

// A batch that asks for the logits of the first N token ids gets exactly the first N of the
// whole vocabulary's (the output matrix's first rows), for N on and off its row groups.
TEST_F(SpecModelDrafterTest, LogitsOfTheFirstIdsAreTheFirstOfAllLogits) {
    const std::vector<int32_t> tokens = tokenizer_->encode(kPrompts[1], true, true);
    const int64_t n = static_cast<int64_t>(tokens.size()), block = 16;
    const int64_t n_vocab = target_->config().n_vocab;
    std::vector<int32_t> table((n + block - 1) / block);
    for (size_t i = 0; i < table.size(); ++i) table[i] = static_cast<int32_t>(i);
    ThreadPool pool(2);
    std::vector<float> all;
    for (int64_t vocab : {int64_t{0}, int64_t{1000}, int64_t{8192}, n_vocab}) {
        KvCache kv(target_->kv_shape(), TensorType::F16, static_cast<int64_t>(table.size()), block);
        RunState state(target_->config(), n, 2);
        Batch b;
        for (int64_t i = 0; i < n; ++i)
            b.tokens.push_back(tokens[i]), b.positions.push_back(i), b.slots.push_back(i);
        b.sequences.push_back({0, n, n, table.data(), 0, 0});
        b.logits_rows = {n - 2, n - 1};
        b.logits_vocab = vocab;
        const float* logits = target_->forward(b, kv, state, pool);
        if (vocab == 0) {
            all.assign(logits, logits + 2 * n_vocab);
            continue;
        }
        for (int64_t r = 0; r < 2; ++r)
            for (int64_t i = 0; i < vocab; ++i)
                ASSERT_EQ(logits[r * vocab + i], all[r * n_vocab + i])
                    << "first " << vocab << " ids, row " << r << ", id " << i;
    }
}

// The draft model guessing among the first 1000 ids only (the tokenizer's most frequent)
// still gives the plain tokens, and a draft limited to ids no text here uses (the first 16)
// has nearly all its guesses rejected.
TEST_F(SpecModelDrafterTest, DraftsFromTheFirstIdsKeepThePlainTokens) {
    const GenerationParams p = greedy(12);
    const std::vector<std::string> prompts(kPrompts.begin(), kPrompts.begin() + 2);
    const auto plain = generate(config(2, 0), prompts, p);
    int64_t accepted[2] = {};
    const int64_t vocabs[2] = {1000, 16};
    for (int i = 0; i < 2; ++i) {
        EngineConfig c = config(2, 4);
        c.speculation.draft_vocab = vocabs[i];
        Engine engine(*target_, *tokenizer_, c);
        EXPECT_EQ(generate(engine, prompts, p), plain) << "first " << vocabs[i] << " ids";
        accepted[i] = engine.stats().accepted_tokens;
    }
    EXPECT_GT(accepted[0], 4);
    EXPECT_LE(accepted[1], 2);
}

// A guess below draft_p_min is the draft's last: at 1 nothing is ever sure enough, so each
// draft is one guess; at 0 every draft runs to its length; the tokens stay the plain ones.
TEST_F(SpecModelDrafterTest, UnsureGuessesEndTheDraft) {
    const GenerationParams p = greedy(10);
    const std::vector<std::string> prompts{kPrompts[3]};
    const auto plain = generate(config(1, 0), prompts, p);
    int64_t drafted[3] = {};
    const float p_mins[3] = {0.0f, SpeculationConfig::kDefaultDraftPMin, 1.0f};
    for (int i = 0; i < 3; ++i) {
        EngineConfig c = config(1, 4);
        c.speculation.draft_p_min = p_mins[i];
        Engine engine(*target_, *tokenizer_, c);
        EXPECT_EQ(generate(engine, prompts, p), plain) << "p_min " << p_mins[i];
        drafted[i] = engine.stats().drafted_tokens;
    }
    EXPECT_GT(drafted[0], drafted[1]);
    EXPECT_GE(drafted[1], drafted[2]);
    EXPECT_GT(drafted[2], 0);
    EXPECT_LE(drafted[2], 10);  // one guess per step, at most one step per generated token
}

TEST_F(SpecModelDrafterTest, GreedyTokensMatchPlainDecodingAloneAndBatchedSlow) {
    const GenerationParams p = greedy(24);
    std::vector<std::vector<int32_t>> plain;
    for (const std::string& prompt : kPrompts)
        plain.push_back(generate(config(1, 0), {prompt}, p)[0]);
    for (int64_t k : {1, 4, 8}) {
        for (size_t i = 0; i < kPrompts.size(); ++i)
            EXPECT_EQ(generate(config(1, k), {kPrompts[i]}, p)[0], plain[i])
                << "alone, K=" << k << " prompt " << i;
        Engine engine(*target_, *tokenizer_, config(static_cast<int64_t>(kPrompts.size()), k));
        EXPECT_EQ(generate(engine, kPrompts, p), plain) << "batched, K=" << k;
        EXPECT_GT(engine.stats().accepted_tokens, engine.stats().drafted_tokens / 3) << "K=" << k;
    }
}

// A chat-like second turn: the draft cache keeps the first turn and rolls back only past
// what the sequence shares with it; plain and speculative turns agree.
TEST_F(SpecModelDrafterTest, KeptSequencesContinueWithTheirDraftCache) {
    GenerationParams p = greedy(8);
    p.keep_cache = true;
    const auto prompt = tokenizer_->encode(kPrompts[0], true, true);
    const auto more = tokenizer_->encode(" Paris. And the capital of Italy is", false, false);
    std::vector<std::vector<int32_t>> turns[2];
    for (int64_t k : {0, 4}) {
        Engine engine(*target_, *tokenizer_, config(1, k));
        const int64_t id = engine.submit(prompt, p);
        auto& out = turns[k > 0];
        out.resize(2);
        for (int turn = 0; turn < 2; ++turn) {
            if (turn == 1) engine.extend(id, more, p);
            while (engine.has_work())
                for (const TokenEvent& ev : engine.step()) out[turn].push_back(ev.token);
        }
        if (k > 0) {
            EXPECT_GT(engine.drafter()->blocks_used(), 0);  // kept with the sequence
        }
        engine.release(id);
        EXPECT_EQ(engine.block_pool().n_used(), 0);
        if (k > 0) {
            EXPECT_EQ(engine.drafter()->blocks_used(), 0);
        }
    }
    EXPECT_EQ(turns[1], turns[0]);
}

// The draft model catches up on a sequence's prompt at its first proposal, and on the text of
// steps it was not asked in; after a step that verified at most its guesses and one token
// more it does not (the engine learns step costs from those steps only).
TEST_F(SpecModelDrafterTest, CatchingUpOnAPromptOrAPauseIsReported) {
    ThreadPool pool(2);
    const CalibrationTokens calibration = calibration_tokens(*tokenizer_);
    SpeculationConfig speculation;
    speculation.drafter = DrafterKind::Model;
    speculation.draft_model = draft_;
    ModelDrafter drafter(*draft_, {target_, &pool, 64, 16, 512, 1, KvTypes{}, &calibration},
                         speculation);
    std::vector<int32_t> tokens = tokenizer_->encode(kPrompts[0], true, true), guesses;
    const auto text = tokenizer_->encode(" Paris, and the capital of Italy is Rome.", false, false);
    ASSERT_GE(text.size(), 10u);
    auto next = text.begin();
    auto verify = [&](int64_t n) { tokens.insert(tokens.end(), next, next + n), next += n; };
    auto propose = [&](int64_t max_tokens) {
        const DraftRequest r{7, tokens, max_tokens, &guesses};
        drafter.propose({&r, 1});
        return drafter.caught_up();
    };
    EXPECT_TRUE(propose(4));  // the prompt
    verify(5);                // all four guesses and one more: the most a step verifies
    EXPECT_FALSE(propose(1));
    verify(1);
    EXPECT_FALSE(propose(2));
    verify(4);  // more than two guesses and one: a step without a proposal came between
    EXPECT_TRUE(propose(2));
    drafter.release(7);  // a preempted sequence starts again from its prompt
    EXPECT_TRUE(propose(2));
    drafter.propose({});
    EXPECT_FALSE(drafter.caught_up());
    drafter.release(7);
}

// Too few KV blocks for all sequences: preempted sequences lose their draft cache too, a
// cancelled one gives its draft blocks back, and the others still get their plain tokens.
TEST_F(SpecModelDrafterTest, PreemptionAndCancellationFreeTheDraftCache) {
    const GenerationParams p = greedy(20);
    const auto plain = generate(config(1, 0), {kPrompts[1], kPrompts[2], kPrompts[3]}, p);
    EngineConfig c = config(4, 4);
    c.kv_bytes = KvCache::block_bytes(target_->kv_shape(), c.kv_type, 16) * 5;
    Engine engine(*target_, *tokenizer_, c);
    ASSERT_EQ(engine.block_pool().n_blocks(), 5);
    std::vector<int64_t> ids;
    for (const std::string& prompt : kPrompts)
        ids.push_back(engine.submit(tokenizer_->encode(prompt, true, true), p));
    std::map<int64_t, std::vector<int32_t>> out;
    for (int step = 0; engine.has_work(); ++step) {
        if (step == 4) engine.release(ids[0]);
        for (const TokenEvent& ev : engine.step()) out[ev.seq_id].push_back(ev.token);
        // Only sequences holding target blocks hold draft blocks: for their verified
        // tokens and at most K - 1 guesses.
        int64_t bound = 0;
        for (size_t i = step < 4 ? 0 : 1; i < ids.size(); ++i) {
            const Sequence& s = engine.sequence(ids[i]);
            if (!s.block_table.empty())
                bound += (static_cast<int64_t>(s.tokens.size()) + 3 + 15) / 16;
        }
        EXPECT_LE(engine.drafter()->blocks_used(), bound) << "step " << step;
    }
    for (size_t i = 1; i < ids.size(); ++i) {
        EXPECT_EQ(out[ids[i]], plain[i - 1]) << "prompt " << i;
        engine.release(ids[i]);
    }
    EXPECT_GT(engine.scheduler().stats().preemptions, 0);
    EXPECT_EQ(engine.block_pool().n_used(), 0);
    EXPECT_EQ(engine.drafter()->blocks_used(), 0);
}

// Qwen2.5-Coder's vocabulary is not SmolLM2's (installed by name; skipped without it).
TEST_F(SpecModelDrafterTest, AnotherModelsVocabularyIsRefused) {
    const std::string qwen = test::find_real_model("qwen2.5-coder-0.5b");
    if (qwen.empty()) GTEST_SKIP() << "qwen2.5-coder-0.5b is not installed";
    const auto other = Model::load(qwen);
    EngineConfig c = config(1, 4);
    c.speculation.draft_model = other.get();
    try {
        Engine engine(*target_, *tokenizer_, c);
        FAIL() << "a draft model with another vocabulary was accepted";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("cannot draft for"), std::string::npos) << e.what();
    }
}

// Token lists in small GGUF files, compared without a model.
class DraftVocabularyTest : public ::testing::Test {
  protected:
    std::unique_ptr<GgufFile> write(const std::vector<std::string>& tokens) {
        GgufWriter w;
        w.add_string("general.architecture", "llama");
        if (!tokens.empty()) w.add_string_array("tokenizer.ggml.tokens", tokens);
        const std::vector<uint8_t> bytes = w.to_bytes();
        const std::string path =
            (fs::temp_directory_path() / ("kite_vocab_" + std::to_string(::getpid()) + "_" +
                                          std::to_string(paths_.size()) + ".gguf"))
                .string();
        std::ofstream(path, std::ios::binary)
            .write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
        paths_.push_back(path);
        return GgufFile::open(path);
    }
    void TearDown() override {
        for (const std::string& p : paths_) fs::remove(p);
    }
    std::vector<std::string> paths_;
};

TEST_F(DraftVocabularyTest, SameTokensPassAnyDifferenceIsRefused) {
    const std::vector<std::string> tokens{"<s>", "a", "b", "ab"};
    const auto target = write(tokens);
    EXPECT_NO_THROW(check_same_vocabulary(*target, 4, *write(tokens), 4));
    // One string differs: named with its id.
    try {
        check_same_vocabulary(*target, 4, *write({"<s>", "a", "c", "ab"}), 4);
        FAIL() << "a different token string was accepted";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("token 2 is 'c' in the draft's vocabulary and 'b'"),
                  std::string::npos)
            << e.what();
    }
    EXPECT_THROW(check_same_vocabulary(*target, 4, *write({"<s>", "a", "b"}), 3), Error);
    // Equal token lists, but the draft's logits are wider (a padded output matrix).
    EXPECT_THROW(check_same_vocabulary(*target, 4, *write(tokens), 8), Error);
    EXPECT_THROW(check_same_vocabulary(*target, 4, *write({}), 4), Error);
}

// The command line refuses a draft model it cannot use with one line and exit code 1, before
// generating anything: another vocabulary (a tiny model written here), or no file at all.
TEST(SpecDraftModelCli, UnusableDraftModelsAreRefused) {
    test::TinyLlama tiny;
    for (int64_t i = 0; i < test::TinyLlama::kVocab; ++i)
        tiny.tokens.push_back(fmt::format("t{}", i));
    const std::string path =
        (fs::temp_directory_path() / ("kite_tiny_draft_" + std::to_string(::getpid()) + ".gguf"))
            .string();
    const std::vector<uint8_t> bytes = tiny.to_bytes();
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
    const std::string model = "-m " + test::default_model_path();
    for (const auto& [args, why] : std::vector<std::pair<std::string, std::string>>{
             {"run " + model + " -p hi -n 4 --draft-model " + path, "cannot draft for"},
             {"bench " + model + " -p 0 -n 4 -r 1 --draft-model " + path, "cannot draft for"},
             {"run " + model + " -p hi -n 4 --draft-model " + path + ".missing",
              "cannot load the draft model"},
             {"run " + model + " -p hi -n 4 --spec draft", "needs a draft model"},
             {"run " + model + " -p hi -n 4 --spec ngram --draft-model " + path,
              "cannot be combined"},
         }) {
        const auto r = test::run_kite(args);
        EXPECT_EQ(r.exit_code, 1) << args << "\n" << r.err;
        EXPECT_EQ(test::count_lines(r.err), 1) << args << "\n" << r.err;
        EXPECT_NE(r.err.find(why), std::string::npos) << args << "\n" << r.err;
        EXPECT_EQ(r.out, "") << args;
    }
    fs::remove(path);
}

}  // namespace
}  // namespace kite
