// What a decode step costs, measured: the seconds of the engine's steps that ran no prompt,
// by the number of tokens their forward pass verified (one per decoding sequence plus its
// draft tokens), drafting included. Speculation chooses its draft length from it
// (engine/draft_length.h): on a CPU where a pass of 9 tokens costs 1.8 decode passes a long
// draft pays, where it costs 4 only a short one does.
//
// A count never measured is guessed optimistically, so that choosing it once measures it:
// as cheap as the nearest measured count below (a pass never costs less with more tokens),
// or, below every measured count, in proportion to the smallest one.
#pragma once

#include <cstdint>
#include <vector>

namespace kite {

class StepCost {
  public:
    // Counts up to max_tokens are kept (the engine's batch token budget).
    explicit StepCost(int64_t max_tokens);

    // A step whose pass held n_tokens took `seconds`.
    void record(int64_t n_tokens, double seconds);
    // Measured or guessed seconds of a step whose pass holds n_tokens (>= 1); 1 for every
    // count while nothing is measured.
    double seconds(int64_t n_tokens) const;
    bool measured(int64_t n_tokens) const;

  private:
    // Weight of a new measurement against the running average: a few steps follow a change
    // (a longer context, another process taking a core) without one slow step ruling.
    static constexpr double kNewWeight = 0.25;
    void fill_guesses();

    std::vector<double> measured_;  // by token count; 0 = never measured
    std::vector<double> guessed_;   // by token count: measured, else the guess above
};

}  // namespace kite
