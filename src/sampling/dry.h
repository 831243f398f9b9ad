// DRY ("Don't Repeat Yourself", from koboldcpp; llama.cpp's dry_* fields): a penalty on the
// tokens that would continue a repeat of the end of the history. Where the last L tokens of
// the history also stand earlier, followed by token t, t would make the repeat L + 1 long;
// when L >= allowed_length, t's logit loses multiplier * base^(L - allowed_length). So a
// loop is pushed out harder the longer it runs, while short repeats (names, phrases of one or
// two tokens) pass freely.
//
// Sequence breakers end a repeat: a match never reaches back across a token whose text holds
// one (by default a newline, ':', '"' and '*', so the structure of JSON, lists and dialogue,
// which repeats by nature, is not penalised), and a breaker token is never penalised. Kite
// marks each vocabulary token whose text holds a breaker string; llama.cpp also joins a
// breaker split over several tokens. Otherwise the numbers are llama.cpp's.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "sampling/sampling_params.h"

namespace kite {

class DryPenalty {
  public:
    // breakers: one flag per vocabulary token (non-zero: its text holds a sequence breaker).
    void apply(std::span<float> logits, std::span<const int32_t> window,
               const SamplingParams& params, std::span<const uint8_t> breakers,
               std::span<int32_t> scratch);

  private:
    std::vector<int32_t> reversed_, z_;  // grow to the longest window, then stay
};

// The length, for each start j of the history reversed (r[0] the newest token), of the longest
// common prefix of r and r[j..]: the Z-array, z[0] = |r|, in O(|r|).
void z_array(std::span<const int32_t> r, std::vector<int32_t>& z);

}  // namespace kite
