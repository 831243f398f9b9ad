// Speculative decoding's proposer: a drafter guesses the tokens that follow a sequence, the
// engine runs them through the model in one pass with a logits row per position, and the
// sampler keeps the longest prefix it agrees with (sampling/speculative_acceptance.h), so
// the output is exactly what the model alone would produce. A guess costs one extra batch
// token; a right guess saves a whole forward pass.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace kite {

class Drafter {
  public:
    virtual ~Drafter() = default;
    // Replaces `out` with at most `max_tokens` proposed continuations of `tokens` (the
    // sequence's verified prompt and output); empty when it has no guess.
    virtual void propose(std::span<const int32_t> tokens, int64_t max_tokens,
                         std::vector<int32_t>& out) const = 0;
};

enum class DrafterKind {
    None,   // no speculation
    Ngram,  // prompt lookup (engine/ngram_drafter.h)
};

struct SpeculationConfig {
    DrafterKind drafter = DrafterKind::None;
    // Most tokens drafted per sequence and step. 4 gained on all of bench/spec-ab's
    // workloads in alternated runs, where 8 lost on the rewrite one (bench/RESULTS.md; a
    // heavily loaded machine, so to be measured again); the adaptive length
    // (engine/draft_length.h) stays at or below it.
    int64_t draft_max = 4;
    static constexpr int64_t kMaxDraft = 32;

    // Throws kite::Error when draft_max is outside 1..kMaxDraft.
    void validate() const;
};

// "none" or "ngram" -> the kind; throws kite::Error for anything else.
DrafterKind parse_drafter_kind(const std::string& name);

// The drafter a configuration asks for; null for DrafterKind::None.
std::unique_ptr<Drafter> make_drafter(const SpeculationConfig& config);

}  // namespace kite
