// The token sampler of one sequence: turns a row of logits into the next token id.
//
// The chain, in this fixed order (llama.cpp's default order, so that a request tuned there
// behaves the same here):
//
//   1. logit bias            request's additive bias; -inf bans a token
//   2. penalties             repetition, presence, frequency over the last penalty_last_n
//                            tokens of the history; then DRY (sampling/dry.h)
//   3. temperature == 0  ->  argmax (ties: lowest id), done
//   4. top-k                 keep the k largest logits (ties: lower id)
//   5. top-p                 softmax, keep the smallest most-likely-first set whose
//                            probability reaches p (at least one token)
//   6. min-p                 keep tokens with p >= min_p * p_max
//   7. temperature           divide the survivors' logits by t, softmax over them
//   8. draw                  one token from that distribution with the sampler's RNG
//
// Why this order: bias and penalties change what the model "said", so every later rule
// must see them. Truncation (4-6) is decided on the temperature-1 distribution, so that
// temperature only reshapes the probabilities among plausible tokens and cannot pull
// junk from the tail into the nucleus (high t) or shrink it to one token (low t); this is
// what makes min-p usable at high temperature. top-k first also keeps the later steps
// small: top-p then works on k candidates instead of the vocabulary.
//
// A Sampler owns its RNG (seeded from params.seed) and scratch sized to the vocabulary at
// construction, so sample() allocates nothing. It is not thread-safe; use one per sequence.
#pragma once

#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <span>
#include <vector>

#include "sampling/dry.h"
#include "sampling/sampling_params.h"

namespace kite {

class Sampler {
  public:
    // Validates params (throws kite::Error) and preallocates the scratch. dry_breakers flags
    // the tokens holding one of params.dry_sequence_breakers (one byte per vocabulary entry;
    // null: none does).
    Sampler(SamplingParams params, int32_t vocab_size,
            std::shared_ptr<const std::vector<uint8_t>> dry_breakers = nullptr);

    // Returns the next token. logits has vocab_size entries and is used in place: on return
    // it holds the logits after bias and penalties (steps 1-2), the distribution that
    // log_sum_exp / top_logprobs (sampling/logprobs.h) report for OpenAI-style logprobs.
    // history is the sequence so far (prompt and generated tokens), read by the penalties.
    // Throws kite::Error for a wrong logits size, a history id outside the vocabulary, or
    // when every token is banned (all logits -inf or NaN).
    int32_t sample(std::span<float> logits, std::span<const int32_t> history);

    // Probability of the last sampled token in the final distribution it was drawn from
    // (after truncation and temperature); 1 for greedy.
    float last_probability() const { return last_probability_; }

    const SamplingParams& params() const { return params_; }
    int32_t vocab_size() const { return vocab_size_; }

  private:
    struct Candidate {
        int32_t id;
        float logit;
        float weight;  // unnormalised probability, exp(logit - max)
    };

    void check_input(std::span<const float> logits, std::span<const int32_t> window) const;
    int32_t argmax(std::span<const float> logits);
    void gather_candidates(std::span<const float> logits);
    void keep_top_k();
    void keep_top_p();
    static size_t nucleus_size(std::span<Candidate> c, double target);
    void keep_min_p();
    int32_t draw();
    std::span<Candidate> live() { return {candidates_.data(), live_}; }

    SamplingParams params_;
    int32_t vocab_size_;
    std::mt19937_64 rng_;
    std::vector<Candidate> candidates_;  // vocab_size entries; the first live_ are in play
    size_t live_ = 0;
    // The largest live logit. Every truncation keeps the most likely token, so it is found
    // once, while gathering, and holds for the whole chain.
    float max_logit_ = -INFINITY;
    std::vector<int32_t> counts_;  // per-token counts for the penalties, kept all zero
    std::shared_ptr<const std::vector<uint8_t>> dry_breakers_;
    DryPenalty dry_;
    float last_probability_ = 0;
};

}  // namespace kite
