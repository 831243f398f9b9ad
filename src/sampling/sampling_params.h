// What a request asks of the sampler: temperature, truncation, penalties, bias and seed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace kite {

// Every field's neutral value switches its step off, so a default-constructed SamplingParams
// draws from the model's plain softmax. The names and meanings follow the OpenAI API and
// llama.cpp so that requests written for either behave the same here.
struct SamplingParams {
    float temperature = 1.0f;  // 0 = greedy (argmax)
    int32_t top_k = 0;         // keep the k most likely tokens; 0 = off
    float top_p = 1.0f;        // keep the smallest set whose probability reaches p; 1 = off
    float min_p = 0.0f;        // keep tokens with p >= min_p * p_max; 0 = off

    // Penalties look at the last penalty_last_n tokens of the history (-1 = all of it).
    float repetition_penalty = 1.0f;  // CTRL style: positive logits / r, negative * r; 1 = off
    float presence_penalty = 0.0f;    // OpenAI style: logit -= presence * [count > 0]
    float frequency_penalty = 0.0f;   // OpenAI style: logit -= frequency * count
    int32_t penalty_last_n = 64;

    // DRY (sampling/dry.h), with llama.cpp's names and defaults: multiplier 0 = off; it looks
    // at the last dry_penalty_last_n tokens of the history (-1 = all, 0 = off).
    float dry_multiplier = 0.0f;
    float dry_base = 1.75f;
    int32_t dry_allowed_length = 2;
    int32_t dry_penalty_last_n = -1;
    std::vector<std::string> dry_sequence_breakers = {"\n", ":", "\"", "*"};
    // Each breaker is matched against the whole vocabulary when a request starts: bounded.
    static constexpr size_t kMaxDryBreakers = 32, kMaxDryBreakerBytes = 64;
    bool dry_on() const { return dry_multiplier != 0.0f && dry_penalty_last_n != 0; }

    // Added to a token's logit before anything else; -infinity bans the token.
    std::map<int32_t, float> logit_bias;

    uint64_t seed = 0;  // the sampler's RNG seed: the same seed gives the same tokens

    // Throws kite::Error naming the first invalid field (vocab_size bounds logit_bias ids).
    void validate(int32_t vocab_size) const;
};

}  // namespace kite
