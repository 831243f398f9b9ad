// How many tokens a sequence drafts next (adaptive K): the length with the most tokens per
// second expected. When each guess is accepted with probability a once the ones before it
// were (a: this sequence's recent acceptance), a step drafting K tokens yields
// 1 + a + a^2 + ... + a^K tokens and costs what steps of its pass's size were measured to
// cost (engine/step_cost.h). So long drafts run where a verify pass is nearly as cheap as a
// decode pass (a CPU with compute to spare), short ones or none where it costs several.
//
// Sequences share a step's pass: a StepPlan carries what the sequences before this one put
// in it, and the length chosen is the one with the most expected tokens per second for the
// whole pass.
//
// At zero the sequence stops drafting, which also stops it from learning whether guesses
// would now be right; so after a pause it probes with one guess. Each rejected probe doubles
// the pause (up to kMaxPause steps): text the drafter cannot predict costs almost nothing,
// and text it starts to predict is found again.
#pragma once

#include <cstdint>

#include "engine/step_cost.h"

namespace kite {

// What a step's forward pass holds so far.
struct StepPlan {
    int64_t tokens = 0;  // one per decoding sequence, and the drafts chosen so far
    double yield = 0;    // tokens the pass is expected to give
};

// 1 + a + ... + a^k: the tokens a step drafting k guesses yields.
double expected_tokens(double acceptance, int64_t k);

class DraftLength {
  public:
    static constexpr int64_t kFirstPause = 8, kMaxPause = 64;
    // Within the chosen length's expected rate by this fraction, a shorter length is taken:
    // rows that are about as likely to pay as not are better left out, and a length never
    // measured is not tried for a gain the model barely sees.
    static constexpr double kPreferShorter = 0.02;

    // adaptive = false: always max (tests, and measuring a fixed length).
    explicit DraftLength(int64_t max = 1, bool adaptive = true) : max_(max), adaptive_(adaptive) {}

    // Tokens to ask the drafter for in this step (0: do not draft), at most `room`; adds
    // them and their expected yield to the plan.
    int64_t next(const StepCost& cost, StepPlan& plan, int64_t room);
    // After verification: `accepted` of the `drafted` tokens were kept.
    void update(int64_t drafted, int64_t accepted);

    // The estimate of a: recent accepted guesses over guesses verified, where the guesses
    // after the first rejected one were never tested.
    double acceptance() const { return accepted_ / tested_; }

  private:
    // How much a step's counts weigh against the earlier ones': about the last five drafts.
    static constexpr double kDecay = 0.8;
    int64_t best_length(const StepCost& cost, const StepPlan& plan, int64_t most) const;

    int64_t max_;
    bool adaptive_;
    double accepted_ = 1, tested_ = 2;  // before any draft: as likely right as wrong
    int64_t pause_ = kFirstPause;       // steps without drafting before the next probe
    int64_t paused_ = 0;
    bool probing_ = false;  // a probe was asked for and has not been verified yet
};

}  // namespace kite
