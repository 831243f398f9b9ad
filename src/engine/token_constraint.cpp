#include "engine/token_constraint.h"

#include <algorithm>
#include <bit>
#include <cmath>

#include "core/error.h"

namespace kite {

TokenConstraint::TokenConstraint(std::shared_ptr<const grammar::Constraint> constraint)
    : constraint_(std::move(constraint)), matcher_(constraint_->grammar) {
    if (constraint_->json) names_.emplace(*constraint_->vocab, constraint_->json_after);
}

std::string_view TokenConstraint::bytes_of(int32_t token) const {
    const std::vector<std::string>& bytes = constraint_->vocab->bytes;
    return static_cast<size_t>(token) < bytes.size() ? std::string_view(bytes[token]) : "";
}

bool TokenConstraint::mask_logits(std::span<float> logits,
                                  const std::map<int32_t, float>& logit_bias) {
    const grammar::TokenTrie& trie = constraint_->vocab->trie;
    matcher_.allowed_tokens(trie, mask_, &constraint_->masks);
    if (names_) names_->filter(mask_);
    // The name guard or the bias may have taken every closing token (a repeated name's
    // closing quote): then the name grows first and a later mask closes.
    if (closing_) keep_closing_token(logits.size(), logit_bias);
    if (n_allowed(logits.size(), logit_bias) == 0) return false;
    apply_mask(logits);
    return true;
}

// The tokens below n_logits that mask_ allows and the bias does not ban (-inf).
size_t TokenConstraint::n_allowed(size_t n_logits,
                                  const std::map<int32_t, float>& logit_bias) const {
    const size_t n_masked = std::min(n_logits, constraint_->vocab->trie.n_vocab());
    size_t n = 0;
    for (size_t w = 0; w * 64 < n_masked; ++w) {
        const size_t end = std::min(n_masked, w * 64 + 64);
        const uint64_t in_range = end - w * 64 == 64 ? ~0ULL : (1ULL << (end - w * 64)) - 1;
        n += static_cast<size_t>(std::popcount(mask_[w] & in_range));
    }
    for (const auto& [token, bias] : logit_bias)
        if (bias == -INFINITY && static_cast<size_t>(token) < n_masked && allowed(token)) --n;
    return n;
}

// Sets the logits outside mask_ to -inf.
void TokenConstraint::apply_mask(std::span<float> logits) const {
    const size_t n_masked = std::min(logits.size(), constraint_->vocab->trie.n_vocab());
    for (size_t w = 0; w * 64 < n_masked; ++w) {
        const size_t end = std::min(n_masked, w * 64 + 64);
        const uint64_t in_range = end - w * 64 == 64 ? ~0ULL : (1ULL << (end - w * 64)) - 1;
        const uint64_t bits = mask_[w] & in_range;
        if (bits == in_range) continue;
        for (size_t t = w * 64; t < end; ++t)
            if (!((bits >> (t & 63)) & 1)) logits[t] = -INFINITY;
    }
    for (size_t t = n_masked; t < logits.size(); ++t) logits[t] = -INFINITY;
}

void TokenConstraint::accept(int32_t token) {
    const std::string_view text = bytes_of(token);
    // Sampling saw only allowed tokens, so a refusal here is a bug, not bad input.
    if (!matcher_.advance(text)) fail("internal error: the constraint refused token {}", token);
    if (names_) names_->feed(text);
}

bool TokenConstraint::accept_within(int32_t token, int64_t budget) {
    const std::string_view text = bytes_of(token);
    if (!matcher_.advance(text)) fail("internal error: the constraint refused token {}", token);
    // Closing already takes the shortest way; a control token (a stop) adds no bytes.
    if (!closing_ && !text.empty() && !closes_within(budget - 1)) {
        matcher_.rollback(1);
        return false;
    }
    if (names_) names_->feed(text);
    return true;
}

// Whether closing from here takes at most n tokens: surely when it takes at most n bytes,
// else when the tokens closing would emit number at most n.
bool TokenConstraint::closes_within(int64_t n) {
    if (n < 0) return false;
    const auto limit = static_cast<uint64_t>(n);
    if (matcher_.completion_length() <= limit) return true;
    const grammar::TokenizerVocab& vocab = *constraint_->vocab;
    return matcher_.closing_tokens(vocab.trie, vocab.bytes, constraint_->closing, limit + 1) <=
           limit;
}

// Cuts mask_ to the one token closing takes here: of the tokens mask_ allows, the bias does
// not ban and that start a shortest completion, the longest (the lowest id among equals).
// False, and mask_ unchanged, when there is none.
bool TokenConstraint::keep_closing_token(size_t n_logits,
                                         const std::map<int32_t, float>& logit_bias) {
    shortest_ = mask_;
    matcher_.keep_shortest(constraint_->vocab->trie, shortest_);
    const size_t n = std::min(n_logits, constraint_->vocab->trie.n_vocab());
    int32_t best = -1;
    for (size_t w = 0; w * 64 < n; ++w)
        for (uint64_t bits = shortest_[w]; bits != 0; bits &= bits - 1) {
            const auto t =
                static_cast<int32_t>(w * 64 + static_cast<size_t>(std::countr_zero(bits)));
            if (static_cast<size_t>(t) >= n) break;
            auto bias = logit_bias.find(t);
            if (bias != logit_bias.end() && bias->second == -INFINITY) continue;
            if (best < 0 || bytes_of(t).size() > bytes_of(best).size()) best = t;
        }
    if (best < 0) return false;
    std::fill(mask_.begin(), mask_.end(), 0);
    mask_[static_cast<size_t>(best) >> 6] |= 1ULL << (best & 63);
    return true;
}

bool TokenConstraint::close(std::span<float> logits, const std::map<int32_t, float>& logit_bias) {
    if (!keep_closing_token(logits.size(), logit_bias)) return false;
    apply_mask(logits);
    closing_ = true;
    return true;
}

}  // namespace kite
