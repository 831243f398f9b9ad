#include "engine/step_cost.h"

#include <algorithm>

namespace kite {

StepCost::StepCost(int64_t max_tokens)
    : measured_(static_cast<size_t>(std::max<int64_t>(max_tokens, 1)) + 1, 0.0),
      guessed_(measured_.size(), 1.0) {}

void StepCost::record(int64_t n_tokens, double seconds) {
    if (n_tokens < 1 || n_tokens >= static_cast<int64_t>(measured_.size()) || !(seconds > 0))
        return;
    double& s = measured_[static_cast<size_t>(n_tokens)];
    s = s == 0 ? seconds : (1 - kNewWeight) * s + kNewWeight * seconds;
    fill_guesses();
}

bool StepCost::measured(int64_t n_tokens) const {
    return n_tokens >= 1 && n_tokens < static_cast<int64_t>(measured_.size()) &&
           measured_[static_cast<size_t>(n_tokens)] > 0;
}

double StepCost::seconds(int64_t n_tokens) const {
    const auto top = static_cast<int64_t>(guessed_.size()) - 1;
    return guessed_[static_cast<size_t>(std::clamp<int64_t>(n_tokens, 1, top))];
}

// Every count's guess at once, so that the per-sequence lookups of each step are O(1).
void StepCost::fill_guesses() {
    const size_t size = measured_.size();
    size_t smallest = 1;
    while (smallest < size && measured_[smallest] == 0) ++smallest;
    for (size_t n = 1; n < smallest; ++n)
        guessed_[n] = measured_[smallest] * static_cast<double>(n) / static_cast<double>(smallest);
    for (size_t n = smallest; n < size; ++n)
        guessed_[n] = measured_[n] > 0 ? measured_[n] : guessed_[n - 1];
}

}  // namespace kite
