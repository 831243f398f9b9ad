#include "engine/dry_breakers.h"

namespace kite {

std::shared_ptr<const std::vector<uint8_t>> DryBreakers::flags(
    const std::vector<std::string>& breakers) {
    auto& table = tables_[breakers];
    if (table) return table;
    // Requests may each name other breakers: a few tables are kept, the rest rebuilt.
    constexpr size_t kMaxTables = 8;
    if (tables_.size() > kMaxTables) {
        tables_.clear();
        return flags(breakers);
    }
    auto out = std::make_shared<std::vector<uint8_t>>(tokenizer_.n_vocab(), 0);
    for (size_t t = 0; t < out->size(); ++t) {
        const auto id = static_cast<int32_t>(t);
        if (tokenizer_.is_special(id)) continue;
        const std::string text = tokenizer_.token_text(id);
        for (const std::string& b : breakers)
            if (text.find(b) != std::string::npos) (*out)[t] = 1;
    }
    table = out;
    return table;
}

}  // namespace kite
