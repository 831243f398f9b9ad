// The request's and the history's adjustments to raw logits: logit bias and the repetition,
// presence and frequency penalties. They run before any truncation, so a penalised or banned
// token competes with its adjusted logit in every later step.
#pragma once

#include <cstdint>
#include <span>

#include "sampling/sampling_params.h"

namespace kite {

// logits[id] += bias for every entry of params.logit_bias (ids already validated).
void apply_logit_bias(std::span<float> logits, const SamplingParams& params);

// The tokens the penalties look at: the last penalty_last_n tokens of history (-1 = all).
std::span<const int32_t> penalty_window(std::span<const int32_t> history, int32_t last_n);

// For every distinct token t of window, with c = its count there:
//   repetition (CTRL / llama.cpp): logit / r if logit > 0, else logit * r
//   then presence and frequency (OpenAI): logit -= presence * [c > 0] + frequency * c
// counts is scratch of one int32 per vocabulary entry; it must be all zero on entry and is
// all zero again on return, so the cost is O(window), not O(vocabulary). Window ids must be
// valid (the Sampler checks them).
void apply_penalties(std::span<float> logits, std::span<const int32_t> window,
                     const SamplingParams& params, std::span<int32_t> counts);

// True when the penalties would change nothing, so callers can skip the window scan.
bool penalties_off(const SamplingParams& params);

}  // namespace kite
