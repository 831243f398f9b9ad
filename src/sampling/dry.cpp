#include "sampling/dry.h"

#include <algorithm>
#include <cmath>

namespace kite {

void z_array(std::span<const int32_t> r, std::vector<int32_t>& z) {
    const auto n = static_cast<int32_t>(r.size());
    z.assign(r.size(), 0);
    if (n == 0) return;
    z[0] = n;
    // [left, right): the rightmost segment found so far that matches a prefix of r.
    int32_t left = 0, right = 0;
    for (int32_t j = 1; j < n; ++j) {
        int32_t k = j < right ? std::min(right - j, z[j - left]) : 0;
        while (j + k < n && r[k] == r[j + k]) ++k;
        z[j] = k;
        if (j + k > right) left = j, right = j + k;
    }
}

void DryPenalty::apply(std::span<float> logits, std::span<const int32_t> window,
                       const SamplingParams& params, std::span<const uint8_t> breakers,
                       std::span<int32_t> scratch) {
    const size_t n = window.size();
    const auto allowed = static_cast<size_t>(params.dry_allowed_length);
    if (n <= allowed) return;
    // A repeat must not reach back across a breaker: the newest one bounds every match.
    size_t unbroken = 0;
    while (unbroken < n && !breakers[static_cast<size_t>(window[n - 1 - unbroken])]) ++unbroken;
    if (unbroken < allowed) return;
    reversed_.assign(window.rbegin(), window.rend());
    z_array(reversed_, z_);
    // The token at window[p] followed a copy of the history's last z_[n - p] tokens. The
    // longest match per token is kept in scratch, as match + 1 (zero: none; scratch is one
    // int per vocabulary entry, zero on entry and on return).
    for (size_t p = 1; p < n; ++p) {
        const size_t match = std::min(static_cast<size_t>(z_[n - p]), unbroken);
        if (match < allowed) continue;
        int32_t& best = scratch[static_cast<size_t>(window[p])];
        best = std::max(best, static_cast<int32_t>(match) + 1);
    }
    // As llama.cpp: the exponent stops where the penalty would overflow a float.
    const int32_t max_exponent = params.dry_base > 1.000001f
                                     ? static_cast<int32_t>(88.7228391f / std::log(params.dry_base))
                                     : 0;
    for (size_t p = 1; p < n; ++p) {
        const auto token = static_cast<size_t>(window[p]);
        if (scratch[token] == 0) continue;
        // A breaker itself is never penalised: it is how a repeat should end.
        if (!breakers[token]) {
            int32_t exponent = scratch[token] - 1 - static_cast<int32_t>(allowed);
            if (max_exponent > 0) exponent = std::min(exponent, max_exponent);
            logits[token] -=
                params.dry_multiplier * std::pow(params.dry_base, static_cast<float>(exponent));
        }
        scratch[token] = 0;
    }
}

}  // namespace kite
