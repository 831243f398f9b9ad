#include "sampling/speculative_acceptance.h"

namespace kite {

DraftVerdict verify_draft_token(Sampler& sampler, std::span<float> logits,
                                std::span<const int32_t> history, int32_t draft) {
    const int32_t token = sampler.sample(logits, history);
    return {token, token == draft};
}

}  // namespace kite
