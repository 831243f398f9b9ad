#include "engine/token_constraint.h"

#include <bit>
#include <cmath>
#include <string_view>

#include "core/error.h"

namespace kite {

TokenConstraint::TokenConstraint(std::shared_ptr<const grammar::Constraint> constraint)
    : constraint_(std::move(constraint)), matcher_(constraint_->grammar) {
    if (constraint_->json) names_.emplace(*constraint_->vocab, constraint_->json_after);
}

bool TokenConstraint::mask_logits(std::span<float> logits,
                                  const std::map<int32_t, float>& logit_bias) {
    const grammar::TokenTrie& trie = constraint_->vocab->trie;
    matcher_.allowed_tokens(trie, mask_, &constraint_->masks);
    if (names_) names_->filter(mask_);
    const size_t n_masked = std::min(logits.size(), trie.n_vocab());
    size_t n_allowed = 0;
    for (size_t w = 0; w * 64 < n_masked; ++w) {
        const size_t end = std::min(n_masked, w * 64 + 64);
        const uint64_t in_range = end - w * 64 == 64 ? ~0ULL : (1ULL << (end - w * 64)) - 1;
        const uint64_t bits = mask_[w] & in_range;
        n_allowed += static_cast<size_t>(std::popcount(bits));
        if (bits == in_range) continue;
        for (size_t t = w * 64; t < end; ++t)
            if (!((bits >> (t & 63)) & 1)) logits[t] = -INFINITY;
    }
    for (size_t t = n_masked; t < logits.size(); ++t) logits[t] = -INFINITY;
    for (const auto& [token, bias] : logit_bias)
        if (bias == -INFINITY && static_cast<size_t>(token) < n_masked && allowed(token))
            --n_allowed;
    return n_allowed > 0;
}

void TokenConstraint::accept(int32_t token) {
    const std::vector<std::string>& bytes = constraint_->vocab->bytes;
    const std::string_view text =
        static_cast<size_t>(token) < bytes.size() ? std::string_view(bytes[token]) : "";
    // Sampling saw only allowed tokens, so a refusal here is a bug, not bad input.
    if (!matcher_.advance(text)) fail("internal error: the constraint refused token {}", token);
    if (names_) names_->feed(text);
}

}  // namespace kite
