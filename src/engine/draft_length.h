// How many tokens a sequence drafts next (adaptive K). A rejected draft token costs a batch
// row for nothing, so the length follows recent acceptance: it doubles (up to the maximum)
// after a fully accepted draft, shrinks to one past the accepted part after a partly
// accepted one, and halves after a wholly rejected one. At zero the sequence stops drafting
// for a few steps, then probes again with one token, so text the drafter cannot predict
// (random-looking output) costs almost nothing.
//
// One exception: a drafter may end a draft early on a guess it is unsure of (the draft
// model's p_min cut). When that last guess alone is rejected after accepted ones, the
// rejection came where the drafter itself expected it, not at the length's limit, so the
// length stays.
#pragma once

#include <cstdint>

namespace kite {

class DraftLength {
  public:
    static constexpr int64_t kPauseSteps = 8;

    explicit DraftLength(int64_t max = 1) : max_(max), current_(max) {}

    // Tokens to ask the drafter for in this step (0: do not draft). Counts paused steps.
    int64_t next();
    // After verification: `accepted` of the `drafted` tokens were kept.
    void update(int64_t drafted, int64_t accepted);

    int64_t current() const { return current_; }

  private:
    int64_t max_;
    int64_t current_;
    int64_t paused_ = 0;  // steps without drafting while current_ is 0
    int64_t asked_ = 0;   // what next() returned last
};

}  // namespace kite
