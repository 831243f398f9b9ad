#include "engine/draft_length.h"

#include <algorithm>
#include <array>

#include "engine/drafter.h"

namespace kite {

double expected_tokens(double acceptance, int64_t k) {
    double sum = 1, term = 1;
    for (int64_t i = 0; i < k; ++i) sum += term *= acceptance;
    return sum;
}

int64_t DraftLength::best_length(const StepCost& cost, const StepPlan& plan, int64_t most) const {
    const double a = acceptance();
    std::array<double, SpeculationConfig::kMaxDraft + 1> rates{};
    most = std::min<int64_t>(most, SpeculationConfig::kMaxDraft);
    double best = 0, extra = 0, term = 1;  // extra: a + ... + a^k
    for (int64_t k = 0; k <= most; ++k) {
        if (k > 0) extra += term *= a;
        rates[static_cast<size_t>(k)] = (plan.yield + extra) / cost.seconds(plan.tokens + k);
        best = std::max(best, rates[static_cast<size_t>(k)]);
    }
    int64_t k = 0;
    while (rates[static_cast<size_t>(k)] < (1 - kPreferShorter) * best) ++k;
    return k;
}

int64_t DraftLength::next(const StepCost& cost, StepPlan& plan, int64_t room) {
    const int64_t most = std::min(max_, room);
    if (most <= 0) return 0;
    int64_t k = most;
    if (adaptive_) {
        k = probing_ ? 1 : best_length(cost, plan, most);
        if (k > 0 && !probing_) {
            pause_ = kFirstPause, paused_ = 0;
        } else if (k == 0 && ++paused_ >= pause_) {
            k = 1, paused_ = 0, probing_ = true;
        }
    }
    plan.tokens += k;
    plan.yield += expected_tokens(acceptance(), k) - 1;
    return k;
}

void DraftLength::update(int64_t drafted, int64_t accepted) {
    if (drafted <= 0) return;  // nothing to learn; a probe stays asked for
    accepted_ = kDecay * accepted_ + static_cast<double>(accepted);
    tested_ = kDecay * tested_ + static_cast<double>(accepted + (accepted < drafted ? 1 : 0));
    if (probing_) {
        probing_ = false;
        pause_ = accepted > 0 ? kFirstPause : std::min(2 * pause_, kMaxPause);
    }
}

}  // namespace kite
