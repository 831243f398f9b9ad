// Per-token work allocates nothing: Sampler::sample, and a whole engine decode step (the
// forward pass on every pool thread, sampling, text). This file replaces the global operator
// new of the test binary with one that counts while a test has switched counting on (on any
// thread, so the pool's workers count too); every other test sees plain malloc/free.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>
#include <random>
#include <vector>

#include "engine/engine.h"
#include "isa_cap.h"
#include "model/model.h"
#include "sampling/sampler.h"
#include "test_paths.h"
#include "tokenizer/tokenizer.h"

namespace {

std::atomic<bool> g_counting{false};
std::atomic<long> g_allocations{0};

void* counted_malloc(std::size_t size) noexcept {
    if (g_counting.load(std::memory_order_relaxed)) g_allocations++;
    return std::malloc(size == 0 ? 1 : size);
}

// Not inlined: GCC would pair an inlined free() with the operator new of the caller and
// report a mismatch (-Wmismatched-new-delete), which replacing both operators makes moot.
[[gnu::noinline]] void counted_free(void* p) noexcept {
    std::free(p);
}

}  // namespace

// The array and aligned forms are left alone: libstdc++'s operator new[] calls this one,
// and nothing here allocates over-aligned memory.
void* operator new(std::size_t size) {
    if (void* p = counted_malloc(size)) return p;
    throw std::bad_alloc();
}
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
    return counted_malloc(size);
}
void operator delete(void* p) noexcept {
    counted_free(p);
}
void operator delete(void* p, std::size_t) noexcept {
    counted_free(p);
}
void operator delete(void* p, const std::nothrow_t&) noexcept {
    counted_free(p);
}

namespace kite {
namespace {

// Counts the heap allocations made while fn runs.
template <typename Fn>
long allocations_in(Fn&& fn) {
    g_allocations = 0;
    g_counting = true;
    fn();
    g_counting = false;
    return g_allocations;
}

void* volatile g_sink;

TEST(SamplerAlloc, CounterSeesAllocations) {
    // Direct operator calls, which the compiler may not elide as it may a new-expression.
    EXPECT_EQ(allocations_in([] { g_sink = ::operator new(16); }), 1);
    ::operator delete(g_sink);
    EXPECT_EQ(allocations_in([] {
                  std::vector<float> v(100);
                  g_sink = v.data();
              }),
              1);
}

TEST(SamplerAlloc, SampleAllocatesNothing) {
    const int32_t vocab = 50000;
    std::mt19937 rng(5);
    std::normal_distribution<float> normal(0.0f, 2.0f);
    std::vector<float> logits(vocab), row(vocab);
    for (float& l : logits) l = normal(rng);
    std::vector<int32_t> history(300);
    for (int32_t& t : history) t = static_cast<int32_t>(rng() % vocab);

    std::vector<SamplingParams> configs(7);
    configs[0].temperature = 0;
    configs[1].top_k = 40;
    configs[2].top_p = 0.95f;
    configs[3].min_p = 0.05f;
    configs[4] = configs[1];
    configs[4].top_p = 0.9f;
    configs[4].min_p = 0.02f;
    configs[4].temperature = 0.7f;
    configs[5].repetition_penalty = 1.1f;
    configs[5].presence_penalty = 0.2f;
    configs[5].frequency_penalty = 0.1f;
    configs[5].penalty_last_n = -1;
    configs[5].logit_bias = {{7, -INFINITY}, {8, 2.0f}};
    configs[6].dry_multiplier = 0.8f;
    for (int32_t& t : std::span(history).last(40)) t = history[t % 20];  // repeats for DRY
    for (size_t i = 0; i < configs.size(); ++i) {
        Sampler sampler(configs[i], vocab);
        // DRY's scratch grows with the history (as a vector does): its first call may allocate.
        if (configs[i].dry_on()) {
            std::copy(logits.begin(), logits.end(), row.begin());
            sampler.sample(row, history);
        }
        const long n = allocations_in([&] {
            for (int step = 0; step < 5; ++step) {
                std::copy(logits.begin(), logits.end(), row.begin());
                sampler.sample(row, history);
            }
        });
        EXPECT_EQ(n, 0) << "config " << i;
    }
}

// On every instruction set the CPU has: each level's kernels keep their buffers.
TEST(DecodeAlloc, EngineDecodeStepsAllocateNothingSlow) {
    for (Isa isa : test::supported_isas()) {
        test::ScopedIsaCap cap(isa);
        auto model = Model::load(test::default_model_path());
        auto tokenizer = Tokenizer::from_gguf(model->file());
        EngineConfig config;
        config.threads = 2;
        config.context_length = 512;
        config.max_sequences = 2;
        Engine engine(*model, *tokenizer, config);
        GenerationParams params;
        params.sampling.top_k = 40;
        params.sampling.temperature = 0.8f;
        params.sampling.seed = 3;
        params.max_tokens = 200;
        params.ignore_eos = true;
        for (int i = 0; i < 2; ++i)
            engine.submit(tokenizer->encode("Once upon a time, in a small village,", true, false),
                          params);
        for (int i = 0; i < 8; ++i) engine.step();  // prompts, first tokens
        long tokens = 0;
        const long n = allocations_in([&] {
            for (int i = 0; i < 64; ++i) tokens += static_cast<long>(engine.step().size());
        });
        EXPECT_EQ(tokens, 128) << isa_name(isa);
        EXPECT_EQ(n, 0) << "allocations in 64 decode steps of 2 sequences, " << isa_name(isa);
    }
}

}  // namespace
}  // namespace kite
