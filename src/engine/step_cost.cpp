#include "engine/step_cost.h"

#include <algorithm>

namespace kite {

StepCost::StepCost(int64_t max_tokens)
    : seconds_(static_cast<size_t>(std::max<int64_t>(max_tokens, 1)) + 1, 0.0) {}

void StepCost::record(int64_t n_tokens, double seconds) {
    if (n_tokens < 1 || n_tokens >= static_cast<int64_t>(seconds_.size()) || !(seconds > 0)) return;
    double& s = seconds_[static_cast<size_t>(n_tokens)];
    s = s == 0 ? seconds : (1 - kNewWeight) * s + kNewWeight * seconds;
}

bool StepCost::measured(int64_t n_tokens) const {
    return n_tokens >= 1 && n_tokens < static_cast<int64_t>(seconds_.size()) &&
           seconds_[static_cast<size_t>(n_tokens)] > 0;
}

double StepCost::seconds(int64_t n_tokens) const {
    const auto top = static_cast<int64_t>(seconds_.size()) - 1;
    for (int64_t n = std::min(n_tokens, top); n >= 1; --n)
        if (measured(n)) return seconds_[static_cast<size_t>(n)];
    for (int64_t n = n_tokens + 1; n <= top; ++n)
        if (measured(n))
            return seconds_[static_cast<size_t>(n)] * static_cast<double>(n_tokens) /
                   static_cast<double>(n);
    return 1;
}

}  // namespace kite
