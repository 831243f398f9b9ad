// Speculative verification: whether the target model keeps a drafted token, and which
// token it produces instead when it does not.
//
// The general rule (Leviathan et al. 2023; Chen et al. 2023), for a draft token t drawn
// from the drafter's distribution q, with p the target's distribution at that position
// (here: after Kite's whole sampler chain, bias, penalties, truncation, temperature):
//   accept t with probability min(1, p(t) / q(t));
//   on rejection, draw from norm(max(0, p - q)).
// The kept token then follows p exactly. A deterministic drafter (prompt lookup) proposes
// a point mass, q = 1 at t and 0 elsewhere, so the rule becomes:
//   accept t with probability p(t);
//   on rejection, draw from max(0, p - q): p(x) for x != t and max(0, p(t) - 1) = 0 at t,
//   i.e. p with t removed, renormalised by 1 - p(t).
// Drawing x from p once and accepting iff x == t realises both parts with one draw:
// P(x == t) = p(t), and given x != t, x is distributed as p restricted to the other tokens.
// Greedy is the special case where p is a point mass at the argmax: accept iff t is the
// argmax, and the replacement is the argmax.
//
// Because verification draws exactly as plain sampling does (one draw per position from the
// same RNG), a seed gives the same tokens with and without speculation whenever the model's
// logits are the same.
#pragma once

#include <cstdint>
#include <span>

#include "sampling/sampler.h"

namespace kite {

struct DraftVerdict {
    int32_t token;  // the token the position keeps: the draft when accepted, else its replacement
    bool accepted;
};

// Verifies a point-mass draft token against this position's logits, as Sampler::sample
// would sample them (`logits` is used in place, history includes the tokens accepted so far
// in this step, so the penalties see them).
DraftVerdict verify_draft_token(Sampler& sampler, std::span<float> logits,
                                std::span<const int32_t> history, int32_t draft);

}  // namespace kite
