#include "sampling/sampling_params.h"

#include <cmath>

#include "core/error.h"

namespace kite {

namespace {

void require_finite(const char* name, float value) {
    if (!std::isfinite(value)) fail("sampling: {} must be a finite number, got {}", name, value);
}

void validate_bias(const std::map<int32_t, float>& logit_bias, int32_t vocab_size) {
    for (const auto& [id, bias] : logit_bias) {
        if (id < 0 || id >= vocab_size) {
            fail("sampling: logit_bias token id {} is outside the vocabulary [0, {})", id,
                 vocab_size);
        }
        // -infinity is how a caller bans a token; +infinity or NaN would poison the softmax.
        if (std::isnan(bias) || bias == INFINITY) {
            fail("sampling: logit_bias for token {} must be finite or -inf, got {}", id, bias);
        }
    }
}

void validate_dry(const SamplingParams& p) {
    require_finite("dry_multiplier", p.dry_multiplier);
    require_finite("dry_base", p.dry_base);
    if (p.dry_multiplier < 0)
        fail("sampling: dry_multiplier must be >= 0 (0 = off), got {}", p.dry_multiplier);
    if (p.dry_base < 1) fail("sampling: dry_base must be >= 1, got {}", p.dry_base);
    if (p.dry_allowed_length < 0)
        fail("sampling: dry_allowed_length must be >= 0, got {}", p.dry_allowed_length);
    if (p.dry_penalty_last_n < -1)
        fail("sampling: dry_penalty_last_n must be >= -1 (-1 = whole context, 0 = off), got {}",
             p.dry_penalty_last_n);
    if (p.dry_sequence_breakers.size() > SamplingParams::kMaxDryBreakers)
        fail("sampling: at most {} dry_sequence_breakers, got {}", SamplingParams::kMaxDryBreakers,
             p.dry_sequence_breakers.size());
    for (const std::string& b : p.dry_sequence_breakers)
        if (b.empty() || b.size() > SamplingParams::kMaxDryBreakerBytes)
            fail("sampling: each of dry_sequence_breakers must be 1 to {} bytes long",
                 SamplingParams::kMaxDryBreakerBytes);
}

}  // namespace

void SamplingParams::validate(int32_t vocab_size) const {
    if (vocab_size <= 0) fail("sampling: vocabulary size must be positive, got {}", vocab_size);
    require_finite("temperature", temperature);
    require_finite("top_p", top_p);
    require_finite("min_p", min_p);
    require_finite("repetition_penalty", repetition_penalty);
    require_finite("presence_penalty", presence_penalty);
    require_finite("frequency_penalty", frequency_penalty);
    if (temperature < 0) fail("sampling: temperature must be >= 0, got {}", temperature);
    if (top_k < 0) fail("sampling: top_k must be >= 0 (0 = off), got {}", top_k);
    if (!(top_p > 0 && top_p <= 1)) fail("sampling: top_p must be in (0, 1], got {}", top_p);
    if (min_p < 0 || min_p > 1) fail("sampling: min_p must be in [0, 1], got {}", min_p);
    if (repetition_penalty <= 0) {
        fail("sampling: repetition_penalty must be > 0 (1 = off), got {}", repetition_penalty);
    }
    if (penalty_last_n < -1) {
        fail("sampling: penalty_last_n must be >= -1 (-1 = whole context), got {}", penalty_last_n);
    }
    validate_bias(logit_bias, vocab_size);
    validate_dry(*this);
}

}  // namespace kite
