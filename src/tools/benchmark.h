// Throughput benchmark through the engine (what `kite bench` runs), in llama-bench's terms:
//   ppP           one prompt of P tokens, prefill only (passes of at most 512 tokens), tokens/s
//   tgN           N tokens generated at batch 1 after a short prompt, tokens/s
//   Bx(S+N)       B sequences, each with an S-token prompt, generating N tokens together
//                 (one pass decodes all B): aggregate generated tokens/s, as
//                 llama-batched-bench's S_TG
// Sampling is greedy and ignores end-of-text, so every run has exactly these lengths. Each
// test runs `reps` times after one untimed warm-up; prefill before generation is untimed.
// The generation tests can speculate (BenchOptions::speculation); how much they gain
// depends on the text, so tgN can then start from a given prompt (e.g. one whose answer
// repeats it) instead of synthetic tokens.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "engine/drafter.h"
#include "gguf/tensor_type.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"
#include "tools/model_cost.h"

namespace kite {

struct BenchOptions {
    int threads = 0;               // 0: one per physical core
    int64_t n_prompt = 512;        // ppP; 0 skips it
    int64_t n_gen = 128;           // tgN and the batched tests; 0 skips them
    std::vector<int64_t> batches;  // one batched test per entry
    int reps = 3;
    int64_t tg_prompt = 1;       // prompt tokens before tgN (llama-bench: none)
    int64_t batch_prompt = 128;  // prompt tokens per sequence before Bx(S+N)
    KvTypes kv_type;
    SpeculationConfig speculation;   // for the generation tests (off by default)
    std::vector<int32_t> tg_tokens;  // tgN's prompt; empty: tg_prompt synthetic tokens
};

struct BenchRow {
    std::string test;                // "pp512", "tg128", "32x(128+128)"
    int64_t n_prompt = 0;            // prompt tokens per sequence
    int64_t n_gen = 0;               // generated tokens per sequence (0 for pp)
    int64_t n_seqs = 1;              // sequences decoding together
    std::vector<double> samples_ts;  // tokens/s of each repetition
    double avg_ts = 0, stddev_ts = 0;
    PassCost per_token;  // the cost model's FLOPs and bytes per timed token
    // Speculative decoding, over all timed repetitions: draft tokens verified and kept.
    int64_t drafted = 0, accepted = 0;
};

// Checks the options, then runs the tests in order (pp, tg, batched); `progress` hears each
// test's name before it runs. Throws kite::Error for bad options.
std::vector<BenchRow> run_benchmark(const Model& model, const Tokenizer& tokenizer,
                                    const BenchOptions& options,
                                    const std::function<void(const std::string&)>& progress = {});

// Mean and sample standard deviation (0 for fewer than two values).
void mean_stddev(const std::vector<double>& v, double& mean, double& stddev);

}  // namespace kite
