// One sequence's side of structured output: where it stands in its constraint's grammar, and
// the logits masked to the tokens allowed next. A JSON constraint's mask also leaves out the
// tokens that would repeat a property name in the object being written (JsonKeyGuard).
//
// The matcher advances only on tokens the sequence emits. A draft token is verified on a row
// masked for the state after the drafts before it, and a rejected draft never reaches the
// matcher, so speculation needs no rollback here and stays lossless: a token outside the
// mask has probability zero and is never accepted.
//
// A token budget (max_tokens, the context) is kept by closing the output in time: a token
// after which closing would not fit in the tokens left is not taken; the output then takes
// the shortest way to its end, so it still parses (reported as cut short).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "grammar/constraint.h"
#include "grammar/json_key_guard.h"
#include "grammar/matcher.h"

namespace kite {

class TokenConstraint {
  public:
    explicit TokenConstraint(std::shared_ptr<const grammar::Constraint> constraint);

    // Sets every logit the constraint does not allow next to -inf (tokens past the
    // tokenizer's vocabulary too). False when nothing is left to sample: no token is
    // allowed, or the logit bias bans (-inf) every allowed one.
    bool mask_logits(std::span<float> logits, const std::map<int32_t, float>& logit_bias);
    // Moves past an emitted token (one mask_logits allowed).
    void accept(int32_t token);
    // Moves past `token` if after it the output can still be closed in budget - 1 more
    // tokens (closing's tokens counted, or its bytes when those are few enough); false, and
    // nothing moves, when it cannot.
    bool accept_within(int32_t token, int64_t budget);
    // From here on the output takes the shortest way to its end, one token a step (the
    // longest that starts a shortest completion): masks `logits` (a row mask_logits masked)
    // to that token, as every later mask_logits does. False, and nothing changes, when the
    // bias bans every such token.
    bool close(std::span<float> logits, const std::map<int32_t, float>& logit_bias);
    // Whether close() has cut the output short.
    bool closing() const { return closing_; }

  private:
    bool allowed(int32_t token) const {
        return (mask_[static_cast<size_t>(token) >> 6] >> (token & 63)) & 1;
    }
    std::string_view bytes_of(int32_t token) const;
    size_t n_allowed(size_t n_logits, const std::map<int32_t, float>& logit_bias) const;
    bool closes_within(int64_t n);
    bool keep_closing_token(size_t n_logits, const std::map<int32_t, float>& logit_bias);
    void apply_mask(std::span<float> logits) const;

    std::shared_ptr<const grammar::Constraint> constraint_;
    grammar::Matcher matcher_;
    std::optional<grammar::JsonKeyGuard> names_;  // JSON constraints only
    std::vector<uint64_t> mask_, shortest_;
    bool closing_ = false;
};

}  // namespace kite
