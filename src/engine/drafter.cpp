#include "engine/drafter.h"

#include "core/error.h"
#include "engine/model_drafter.h"
#include "engine/ngram_drafter.h"

namespace kite {

void SpeculationConfig::validate() const {
    if (draft_max < 1 || draft_max > kMaxDraft)
        fail("--draft-max must be between 1 and {}, got {}", kMaxDraft, draft_max);
    if (!(draft_p_min >= 0 && draft_p_min <= 1))
        fail("--draft-p-min must be between 0 and 1, got {}", draft_p_min);
    if (draft_vocab < 0) fail("--draft-vocab must be 0 or more, got {}", draft_vocab);
    if (drafter == DrafterKind::Model && draft_model == nullptr)
        fail("the draft-model drafter needs a draft model (--draft-model)");
}

namespace {

struct DrafterName {
    const char* name;
    DrafterKind kind;
    int64_t default_draft_max;  // measured: bench/RESULTS.md
};

// Measured with Qwen2.5-Coder-1.5B on a Zen 5 (AVX-512), where calls of up to 64 tokens run
// the prefetching tiles, so a 9-token verify pass costs 1.8 decode passes, not 3.3. Prompt
// lookup: 8 over 4 on the rewrite prompt (2.47x against 1.93x over no speculation) and the
// repeat one (4.97x against 3.76x), random tokens 1.46x against 1.52x. A draft model: 8 over 6
// on all three code prompts (1.68-2.03x against 1.62-1.96x), 10 no better.
constexpr DrafterName kDrafterNames[] = {
    {"none", DrafterKind::None, 4},
    {"ngram", DrafterKind::Ngram, 8},
    {"draft", DrafterKind::Model, 8},
};

}  // namespace

int64_t default_draft_max(DrafterKind kind) {
    for (const DrafterName& d : kDrafterNames)
        if (d.kind == kind) return d.default_draft_max;
    return SpeculationConfig{}.draft_max;
}

DrafterKind parse_drafter_kind(const std::string& name) {
    for (const DrafterName& d : kDrafterNames)
        if (name == d.name) return d.kind;
    fail("unknown speculative drafter '{}' (expected none, ngram or draft)", name);
}

std::unique_ptr<Drafter> make_drafter(const SpeculationConfig& config,
                                      const DrafterContext& context) {
    config.validate();
    if (config.drafter == DrafterKind::Ngram) return std::make_unique<NgramDrafter>();
    if (config.drafter == DrafterKind::Model)
        return std::make_unique<ModelDrafter>(*config.draft_model, context, config);
    return nullptr;
}

}  // namespace kite
