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

// Prompt lookup: 4 gained on every lookup workload where 8 lost on the rewrite one. A draft
// model: 6 over 4 on all three code prompts (1.55-1.91x against 1.46-1.75x over no
// speculation); 8 lost, its 9-token verify pass past the 8 tokens the prefetching tiles take.
constexpr DrafterName kDrafterNames[] = {
    {"none", DrafterKind::None, 4},
    {"ngram", DrafterKind::Ngram, 4},
    {"draft", DrafterKind::Model, 6},
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
