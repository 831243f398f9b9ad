#include "engine/drafter.h"

#include "core/error.h"
#include "engine/ngram_drafter.h"

namespace kite {

void SpeculationConfig::validate() const {
    if (draft_max < 1 || draft_max > kMaxDraft)
        fail("--draft-max must be between 1 and {}, got {}", kMaxDraft, draft_max);
}

DrafterKind parse_drafter_kind(const std::string& name) {
    if (name == "none") return DrafterKind::None;
    if (name == "ngram") return DrafterKind::Ngram;
    fail("unknown speculative drafter '{}' (expected none or ngram)", name);
}

std::unique_ptr<Drafter> make_drafter(const SpeculationConfig& config) {
    config.validate();
    switch (config.drafter) {
        case DrafterKind::None:
            return nullptr;
        case DrafterKind::Ngram:
            return std::make_unique<NgramDrafter>();
    }
    return nullptr;
}

}  // namespace kite
