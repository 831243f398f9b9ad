#include "sampling/penalties.h"

#include <algorithm>

namespace kite {

void apply_logit_bias(std::span<float> logits, const SamplingParams& params) {
    for (const auto& [id, bias] : params.logit_bias) logits[id] += bias;
}

std::span<const int32_t> penalty_window(std::span<const int32_t> history, int32_t last_n) {
    if (last_n < 0) return history;
    size_t n = std::min(history.size(), static_cast<size_t>(last_n));
    return history.last(n);
}

bool penalties_off(const SamplingParams& params) {
    return params.repetition_penalty == 1.0f && params.presence_penalty == 0.0f &&
           params.frequency_penalty == 0.0f;
}

namespace {

float penalised(float logit, int32_t count, const SamplingParams& params) {
    const float r = params.repetition_penalty;
    logit = logit > 0 ? logit / r : logit * r;
    return logit - params.presence_penalty - params.frequency_penalty * static_cast<float>(count);
}

}  // namespace

void apply_penalties(std::span<float> logits, std::span<const int32_t> window,
                     const SamplingParams& params, std::span<int32_t> counts) {
    for (int32_t t : window) ++counts[t];
    // Second pass: the first visit of a token applies its penalty and clears its count, so
    // each distinct token is penalised once and the scratch is zero again afterwards.
    for (int32_t t : window) {
        if (counts[t] == 0) continue;
        logits[t] = penalised(logits[t], counts[t], params);
        counts[t] = 0;
    }
}

}  // namespace kite
