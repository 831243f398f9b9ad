#include "engine/draft_length.h"

#include <algorithm>

namespace kite {

int64_t DraftLength::next() {
    if (current_ == 0 && ++paused_ >= kPauseSteps) current_ = 1, paused_ = 0;
    asked_ = current_;
    return current_;
}

void DraftLength::update(int64_t drafted, int64_t accepted) {
    if (drafted <= 0) return;
    const bool ended_early = drafted < asked_;  // the drafter stopped before the length
    if (accepted == drafted)
        current_ = std::min(max_, std::max<int64_t>(1, 2 * current_));
    else if (ended_early && accepted > 0 && accepted == drafted - 1)
        return;  // only the doubted last guess was wrong: the length was not the problem
    else if (accepted > 0)
        current_ = accepted + 1;
    else
        current_ /= 2;
}

}  // namespace kite
