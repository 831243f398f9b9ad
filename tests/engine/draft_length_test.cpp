// The adaptive draft length and the step costs it reads, without a model: the lengths chosen
// for acceptance rates and pass costs worked out by hand, and the pause and probes of a
// sequence whose guesses are not worth verifying.
#include <gtest/gtest.h>

#include <initializer_list>
#include <utility>

#include "engine/draft_length.h"
#include "engine/step_cost.h"

namespace kite {
namespace {

StepCost costs(std::initializer_list<std::pair<int64_t, double>> measured) {
    StepCost c(64);
    for (auto [n, s] : measured) c.record(n, s);
    return c;
}

// Relative step costs by pass size, measured with Qwen2.5-Coder 1.5B and two threads
// (`kite bench -p N -n 0`): an AVX2-only Zen 1, where a 9-token pass costs 4 decode passes,
// and a Zen 5, where it costs 1.8 (bench/RESULTS.md; linear between 1 and 9 here).
StepCost zen1() {
    return costs({{1, 1.0},
                  {2, 1.1},
                  {3, 1.4},
                  {4, 1.9},
                  {5, 2.36},
                  {6, 2.8},
                  {7, 3.2},
                  {8, 3.6},
                  {9, 4.0}});
}
StepCost zen5() {
    StepCost c(64);
    for (int64_t n = 1; n <= 9; ++n) c.record(n, 1.0 + 0.1 * static_cast<double>(n - 1));
    return c;
}

// A length whose drafts have long kept `accepted` guesses and then had one rejected, so
// its acceptance is accepted / (accepted + 1).
DraftLength settled(int64_t max, int64_t accepted) {
    DraftLength k(max);
    for (int i = 0; i < 60; ++i) k.update(accepted + 1, accepted);
    return k;
}

StepCost linear() {  // every token costs a pass
    StepCost c(64);
    for (int64_t n = 1; n <= 9; ++n) c.record(n, static_cast<double>(n));
    return c;
}

int64_t choose(DraftLength& k, const StepCost& cost, int64_t room = 64) {
    StepPlan alone{1, 1.0};
    return k.next(cost, alone, room);
}

TEST(DraftLength, ExpectedTokensOfADraft) {
    EXPECT_DOUBLE_EQ(expected_tokens(0.5, 3), 1.875);  // 1 + 1/2 + 1/4 + 1/8
    EXPECT_DOUBLE_EQ(expected_tokens(0.0, 8), 1.0);
    EXPECT_DOUBLE_EQ(expected_tokens(1.0, 8), 9.0);
    EXPECT_DOUBLE_EQ(expected_tokens(0.9, 0), 1.0);
}

TEST(DraftLength, AcceptanceFollowsTheRecentDrafts) {
    DraftLength k(8);
    EXPECT_DOUBLE_EQ(k.acceptance(), 0.5);  // before any draft
    for (int i = 0; i < 60; ++i) k.update(8, 8);
    EXPECT_GT(k.acceptance(), 0.999);
    // Three accepted, then a rejection: four guesses tested; the four after it never were.
    for (int i = 0; i < 60; ++i) k.update(8, 3);
    EXPECT_NEAR(k.acceptance(), 0.75, 1e-3);
    k.update(0, 0);  // nothing drafted: nothing learned
    EXPECT_NEAR(k.acceptance(), 0.75, 1e-3);
}

TEST(StepCost, GuessesUnmeasuredCountsOptimistically) {
    StepCost c(16);
    EXPECT_EQ(c.seconds(1), 1.0);  // nothing measured: all alike
    EXPECT_EQ(c.seconds(9), 1.0);
    c.record(4, 4.0);
    EXPECT_EQ(c.seconds(2), 2.0);  // below every measurement: in proportion
    EXPECT_EQ(c.seconds(9), 4.0);  // above: as the nearest below
    c.record(1, 1.5);
    EXPECT_EQ(c.seconds(1), 1.5);
    EXPECT_EQ(c.seconds(3), 1.5);
    EXPECT_EQ(c.seconds(40), 4.0);  // past what is kept
    EXPECT_TRUE(c.measured(4));
    EXPECT_FALSE(c.measured(3));
}

TEST(StepCost, AveragesNewMeasurementsAndIgnoresNonsense) {
    StepCost c(16);
    c.record(9, 6.0);
    c.record(9, 10.0);
    EXPECT_DOUBLE_EQ(c.seconds(9), 7.0);  // a quarter of the new measurement
    c.record(0, 1.0);
    c.record(17, 1.0);
    c.record(-3, 1.0);
    c.record(2, 0.0);
    c.record(3, -1.0);
    EXPECT_FALSE(c.measured(0) || c.measured(2) || c.measured(3) || c.measured(17));
    EXPECT_EQ(c.seconds(2), 7.0 * 2 / 9);
}

TEST(DraftLength, ShortDraftsWhereAVerifyPassIsDear) {
    // 95% accepted: 2.85 tokens per step for 1.4 passes beats 4.5 for 2.36 and 7.4 for 4.
    DraftLength k = settled(8, 19);
    EXPECT_EQ(choose(k, zen1()), 2);
    // Where the pass stays cheap, the longest draft pays.
    EXPECT_EQ(choose(k, zen5()), 8);
    // And never past the maximum or the room left.
    DraftLength k4 = settled(4, 19);
    EXPECT_EQ(choose(k4, zen5()), 4);
    EXPECT_EQ(choose(k, zen5(), 3), 3);
}

TEST(DraftLength, NoDraftWhenEveryRowCostsAPass) {
    DraftLength k = settled(8, 19);
    EXPECT_EQ(choose(k, linear()), 0);
}

TEST(DraftLength, LowAcceptanceDraftsLess) {
    // Half accepted on the Zen 1: one guess (1.5 tokens for 1.1 passes).
    DraftLength half = settled(8, 1);
    EXPECT_EQ(choose(half, zen1()), 1);
    // None accepted: not worth the tenth of a pass.
    DraftLength none = settled(8, 0);
    EXPECT_EQ(choose(none, zen1()), 0);
}

TEST(DraftLength, ThePlanAddsTheDraftAndItsYield) {
    DraftLength k = settled(8, 9);
    StepPlan plan{1, 1.0};
    const int64_t n = k.next(zen5(), plan, 64);
    EXPECT_EQ(plan.tokens, 1 + n);
    EXPECT_DOUBLE_EQ(plan.yield, expected_tokens(k.acceptance(), n));
}

TEST(DraftLength, SharedPassesDraftLessWhenFull) {
    // A pass costs the same up to 8 tokens, then grows with every token.
    StepCost c(64);
    for (int64_t n = 1; n <= 24; ++n) c.record(n, n <= 8 ? 1.0 : static_cast<double>(n) / 8);
    DraftLength k = settled(8, 9);
    EXPECT_EQ(choose(k, c), 7);  // alone: fill the free rows
    StepPlan busy{8, 8.0};       // eight sequences decoding already fill them
    EXPECT_EQ(k.next(c, busy, 64), 0);
    EXPECT_EQ(busy.tokens, 8);
}

TEST(DraftLength, FirstDraftRunsWithNothingMeasured) {
    DraftLength k(8);
    EXPECT_GT(choose(k, StepCost(64)), 0);
}

TEST(DraftLength, PausesThenProbesBackingOffWhileProbesFail) {
    DraftLength k = settled(8, 0);
    const StepCost c = linear();  // so that one accepted probe does not end the pause
    auto steps_until_probe = [&] {
        int64_t steps = 1;
        while (choose(k, c) == 0) ++steps;
        return steps;
    };
    EXPECT_EQ(steps_until_probe(), DraftLength::kFirstPause);
    k.update(1, 0);  // rejected: the pause doubles
    EXPECT_EQ(steps_until_probe(), 2 * DraftLength::kFirstPause);
    k.update(0, 0);  // the drafter had nothing: the probe is asked for again
    EXPECT_EQ(choose(k, c), 1);
    k.update(1, 0);
    EXPECT_EQ(steps_until_probe(), 4 * DraftLength::kFirstPause);
    for (int i = 0; i < 3; ++i) {
        k.update(1, 0);
        steps_until_probe();
    }
    k.update(1, 0);
    EXPECT_EQ(steps_until_probe(), DraftLength::kMaxPause);
    k.update(1, 1);  // accepted: back to the first pause
    EXPECT_EQ(steps_until_probe(), DraftLength::kFirstPause);
}

TEST(DraftLength, FixedLengthIgnoresCostAndAcceptance) {
    DraftLength k(4, false);
    for (int i = 0; i < 20; ++i) k.update(4, 0);
    EXPECT_EQ(choose(k, linear()), 4);
    EXPECT_EQ(choose(k, linear(), 2), 2);
    EXPECT_EQ(choose(k, linear(), 0), 0);
}

}  // namespace
}  // namespace kite
