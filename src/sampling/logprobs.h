// Log-probabilities of a logit vector, for OpenAI-style `logprobs` / `top_logprobs`.
// Computed on demand from logits the caller keeps (Sampler::sample leaves the post-penalty
// logits in its input span), so sampling itself pays nothing for them.
#pragma once

#include <cstdint>
#include <span>

namespace kite {

struct TokenProb {
    int32_t id;
    float logprob;
};

// log(sum(exp(logits))), computed stably; -inf when no logit is finite. NaN counts as -inf.
// A token's log-probability is logits[id] - log_sum_exp(logits).
float log_sum_exp(std::span<const float> logits);

// Fills out with the out.size() most likely tokens of softmax(logits), most likely first
// (ties: lower id first), and returns the filled part: shorter than out when fewer tokens
// have a finite logit. Allocates nothing.
std::span<TokenProb> top_logprobs(std::span<const float> logits, std::span<TokenProb> out);

}  // namespace kite
