// The memory plan: its KV and run-state bytes equal what the engine and RunState really
// allocate, windowed sequences hold the blocks it counts for them and no more, and a
// configuration that does not fit (or exceeds the model's context) is refused before anything
// is allocated, naming the bytes needed and available.
#include <gtest/gtest.h>

#include <algorithm>

#include "core/error.h"
#include "engine/engine.h"
#include "engine/memory_plan.h"
#include "engine/model_drafter.h"
#include "greedy_params.h"
#include "model/model.h"
#include "test_paths.h"
#include "tokenizer/tokenizer.h"

namespace kite {
namespace {

size_t allocated_bytes(const RunState& s) {
    size_t floats = s.x.size() + s.xb.size() + s.q.size() + s.k.size() + s.v.size() + s.att.size() +
                    s.delta.size() + s.gate.size() + s.up.size() + s.logits.size();
    return floats * sizeof(float) + s.block_tables.size() * sizeof(void*) + s.scratch.size();
}

TEST(MemoryPlan, MatchesWhatTheEngineAllocates) {
    auto model = Model::load(test::default_model_path());
    auto tokenizer = Tokenizer::from_gguf(model->file());
    for (auto [ctx, seqs, batch, kv_mem, types] :
         {std::tuple<int64_t, int64_t, int64_t, size_t, KvTypes>{512, 1, 64, 0, TensorType::F16},
          {1000, 3, 512, 0, TensorType::F16},
          {256, 8, 17, 5u << 20, TensorType::F16},
          {1000, 3, 512, 0, TensorType::Q8_0},
          {700, 2, 64, 0, TensorType::Q4_0},
          {256, 8, 17, 5u << 20, TensorType::Q4_0},
          {300, 2, 32, 0, KvTypes{TensorType::Q8_0, TensorType::F16}}}) {
        EngineConfig c;
        c.kv_type = types;
        c.threads = 1;
        c.context_length = ctx;
        c.max_sequences = seqs;
        c.max_batch_tokens = batch;
        c.kv_bytes = kv_mem;
        const MemoryPlan p = plan_memory(model->config(), model->weight_bytes(), c);
        Engine engine(*model, *tokenizer, c);
        EXPECT_EQ(p.kv_bytes, engine.kv_cache().bytes()) << ctx << " " << seqs;
        EXPECT_EQ(p.run_state_bytes, allocated_bytes(RunState(model->config(), batch, batch)));
        EXPECT_EQ(p.weight_bytes, model->weight_bytes());
        EXPECT_EQ(p.total_bytes(), p.weight_bytes + p.kv_bytes + p.run_state_bytes);
    }
}

// With a draft model, the plan adds its cache and run state as ModelDrafter allocates them
// (the default model drafts for itself: the same vocabulary).
TEST(MemoryPlan, CountsTheDraftModel) {
    auto model = Model::load(test::default_model_path());
    auto tokenizer = Tokenizer::from_gguf(model->file());
    for (auto [ctx, seqs, batch, kv_mem, draft_max] :
         {std::tuple<int64_t, int64_t, int64_t, size_t, int64_t>{512, 1, 64, 0, 4},
          {1000, 3, 2, 0, 20},
          {256, 8, 17, 5u << 20, 8}}) {
        EngineConfig c;
        c.threads = 1;
        c.context_length = ctx;
        c.max_sequences = seqs;
        c.max_batch_tokens = batch;
        c.kv_bytes = kv_mem;
        c.speculation.drafter = DrafterKind::Model;
        c.speculation.draft_model = model.get();
        c.speculation.draft_max = draft_max;
        const MemoryPlan p = plan_memory(model->config(), model->weight_bytes(), c);
        Engine engine(*model, *tokenizer, c);
        const auto* drafter = dynamic_cast<const ModelDrafter*>(engine.drafter());
        ASSERT_NE(drafter, nullptr);
        EXPECT_EQ(p.draft_kv_bytes, drafter->kv_cache().bytes()) << ctx << " " << seqs;
        EXPECT_EQ(p.draft_kv_blocks, drafter->kv_cache().n_blocks());
        EXPECT_EQ(p.draft_run_state_bytes, allocated_bytes(drafter->run_state()));
        EXPECT_EQ(p.draft_weight_bytes, model->weight_bytes());
        EXPECT_EQ(p.total_bytes(), 2 * p.weight_bytes + p.kv_bytes + p.run_state_bytes +
                                       p.draft_kv_bytes + p.draft_run_state_bytes);
    }
}

// The sequences that fit in a budget: the most whose plan fits beside the weights and the run
// state; one byte less than that plan holds one sequence fewer.
TEST(MemoryPlan, CountsTheSequencesThatFit) {
    auto model = Model::load(test::default_model_path());
    const ModelConfig& mc = model->config();
    const size_t weights = model->weight_bytes();
    for (KvTypes types : {KvTypes{TensorType::F16}, KvTypes{TensorType::Q8_0},
                          KvTypes{TensorType::Q4_0}, KvTypes{TensorType::F32, TensorType::Q4_0}}) {
        EngineConfig c;
        c.context_length = 1000;
        c.kv_type = types;
        for (int64_t seqs : {1, 5, 37}) {
            c.max_sequences = seqs;
            const size_t total = plan_memory(mc, weights, c).total_bytes();
            EXPECT_EQ(sequences_that_fit(mc, weights, c, total), seqs) << kv_types_name(types);
            EXPECT_EQ(sequences_that_fit(mc, weights, c, total - 1), seqs - 1);
        }
        EXPECT_EQ(sequences_that_fit(mc, weights, c, weights), 0);
    }
}

// With a KV window and a draft model too, whose cache and run state grow with B.
TEST(MemoryPlan, CountsTheSequencesThatFitWithAWindowAndADraft) {
    auto model = Model::load(test::default_model_path());
    const ModelConfig& mc = model->config();
    const size_t weights = model->weight_bytes();
    const PlannedDraft draft{&mc, weights};  // the default model drafts for itself
    const KvWindow w{256, 4};
    EngineConfig c;
    c.context_length = 8192;
    c.speculation.draft_max = 20;
    for (int64_t seqs : {1, 5, 37}) {
        c.max_sequences = seqs;
        c.kv_bytes = static_cast<size_t>(seqs) * sequence_kv_bytes(mc, c, w);
        const size_t total = plan_memory(mc, weights, c, draft).total_bytes();
        EXPECT_EQ(sequences_that_fit(mc, weights, c, total, w, draft), seqs);
        EXPECT_EQ(sequences_that_fit(mc, weights, c, total - 1, w, draft), seqs - 1);
    }
}

// A windowed sequence holds at most sequence_kv_blocks, however far it runs: three of them,
// in lockstep far past their window and context, run at once in three times that without a
// preemption, and use every block of it at their peak; one block fewer preempts.
TEST(MemoryPlan, WindowedSequencesRunInTheBlocksThePlanCounts) {
    auto model = Model::load(test::default_model_path());
    auto tokenizer = Tokenizer::from_gguf(model->file());
    const KvWindow w{32, 4};
    EngineConfig c;
    c.threads = 2;
    c.context_length = 64;
    c.max_sequences = 3;
    c.prefix_caching = false;  // no blocks shared between them
    const int64_t per_seq = sequence_kv_blocks(model->config(), c, w);
    EXPECT_EQ(per_seq, w.peak_blocks(c.block_size));
    GenerationParams params = test::greedy_params(80);
    params.kv_window = w;
    const std::vector<int32_t> prompt = tokenizer->encode("Once upon a time", true, true);
    const size_t block = KvCache::block_bytes(model->kv_shape(), c.kv_type, c.block_size);
    for (const size_t less : {size_t{0}, block}) {
        c.kv_bytes = 3 * sequence_kv_bytes(model->config(), c, w) - less;
        Engine engine(*model, *tokenizer, c);
        for (int i = 0; i < 3; ++i) engine.submit(prompt, params);
        int64_t most = 0;
        while (engine.has_work()) {
            engine.step();
            most = std::max(most, engine.block_pool().n_used());
        }
        if (less == 0) {
            EXPECT_EQ(engine.scheduler().stats().preemptions, 0);
            EXPECT_EQ(most, 3 * per_seq);
        } else {
            EXPECT_GT(engine.scheduler().stats().preemptions, 0);
        }
    }
}

TEST(MemoryPlan, RefusesWhatDoesNotFit) {
    auto model = Model::load(test::default_model_path());
    const ModelConfig& mc = model->config();
    EngineConfig c;
    c.context_length = mc.n_ctx_train;
    c.max_sequences = 4;
    const MemoryPlan p = plan_memory(mc, model->weight_bytes(), c);
    const size_t needed = p.kv_bytes + p.run_state_bytes;
    EXPECT_NO_THROW(check_memory_plan(p, mc, needed));
    try {
        check_memory_plan(p, mc, needed - 1);
        FAIL() << "accepted";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("not enough memory"), std::string::npos);
    }
    c.context_length = mc.n_ctx_train + 1;
    try {
        check_memory_plan(plan_memory(mc, 0, c), mc, SIZE_MAX);
        FAIL() << "accepted";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("exceeds the model's"), std::string::npos);
    }
    EXPECT_GT(available_memory_bytes(), size_t{1} << 20);
}

}  // namespace
}  // namespace kite
