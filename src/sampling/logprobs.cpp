#include "sampling/logprobs.h"

#include <algorithm>
#include <cmath>

namespace kite {

float log_sum_exp(std::span<const float> logits) {
    float max = -INFINITY;
    for (float v : logits) max = v > max ? v : max;  // NaN compares false: skipped
    if (max == -INFINITY) return -INFINITY;
    double sum = 0;
    for (float v : logits) {
        if (v > -INFINITY) sum += std::exp(static_cast<double>(v) - max);
    }
    return static_cast<float>(max + std::log(sum));
}

namespace {

bool more_likely(const TokenProb& a, const TokenProb& b) {
    return a.logprob > b.logprob || (a.logprob == b.logprob && a.id < b.id);
}

}  // namespace

std::span<TokenProb> top_logprobs(std::span<const float> logits, std::span<TokenProb> out) {
    // Keep the best out.size() so far in a heap whose front is the worst of them, so each
    // further token costs one comparison unless it displaces that worst one.
    size_t size = 0;
    for (size_t i = 0; i < logits.size(); ++i) {
        TokenProb t{static_cast<int32_t>(i), logits[i]};
        if (!(t.logprob > -INFINITY)) continue;
        if (size < out.size()) {
            out[size++] = t;
            std::push_heap(out.begin(), out.begin() + size, more_likely);
        } else if (size > 0 && more_likely(t, out[0])) {
            std::pop_heap(out.begin(), out.begin() + size, more_likely);
            out[size - 1] = t;
            std::push_heap(out.begin(), out.begin() + size, more_likely);
        }
    }
    std::sort_heap(out.begin(), out.begin() + size, more_likely);
    const float lse = log_sum_exp(logits);
    for (size_t i = 0; i < size; ++i) out[i].logprob -= lse;
    return out.first(size);
}

}  // namespace kite
