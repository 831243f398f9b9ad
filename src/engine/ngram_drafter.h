// Prompt lookup: a drafter that needs no model. Generated text often repeats its context
// (code being edited, a quoted passage, a list continuing a pattern), so the tokens that
// followed the last occurrence of the sequence's final n tokens are a good guess for what
// comes next. Longer n-grams are tried first (more context, fewer false matches), then
// shorter ones; among matches of one length the most recent wins.
#pragma once

#include "engine/drafter.h"

namespace kite {

class NgramDrafter : public Drafter {
  public:
    explicit NgramDrafter(int64_t max_ngram = 3, int64_t min_ngram = 1);

    void propose(std::span<const DraftRequest> requests) override;
    // One sequence's guess: replaces `out` with at most `max_tokens` tokens (none when the
    // tail occurs nowhere earlier).
    void lookup(std::span<const int32_t> tokens, int64_t max_tokens,
                std::vector<int32_t>& out) const;

  private:
    int64_t max_ngram_, min_ngram_;
};

}  // namespace kite
