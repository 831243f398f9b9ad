#include "tokenizer/special_tokens.h"

#include <algorithm>

namespace kite {

SpecialTokenSplitter::SpecialTokenSplitter(const Vocab& vocab) : vocab_(vocab) {
    for (int32_t id = 0; id < int32_t(vocab.size()); ++id) {
        const TokenType t = vocab.type(id);
        const bool special =
            t == TokenType::Control || t == TokenType::UserDefined || t == TokenType::Unknown;
        if (special && !vocab.tokens[size_t(id)].empty()) candidates_.push_back(id);
    }
    // Longest first, so that a token is not cut apart by a shorter one inside it.
    std::stable_sort(candidates_.begin(), candidates_.end(), [&](int32_t a, int32_t b) {
        return vocab.tokens[size_t(a)].size() > vocab.tokens[size_t(b)].size();
    });
}

std::vector<Fragment> SpecialTokenSplitter::split(std::string_view text, bool parse_control) const {
    std::vector<Fragment> fragments;
    if (text.empty()) return fragments;
    fragments.push_back({kNoToken, text});
    for (int32_t id : candidates_) {
        if (!parse_control && vocab_.type(id) != TokenType::UserDefined) continue;
        // One search of the whole text skips the tokens it does not hold.
        if (text.find(vocab_.tokens[size_t(id)]) == std::string_view::npos) continue;
        split_on(id, fragments);
    }
    return fragments;
}

// Replaces every occurrence of token `id` in the text fragments by the token itself.
void SpecialTokenSplitter::split_on(int32_t id, std::vector<Fragment>& fragments) const {
    const std::string_view needle = vocab_.tokens[size_t(id)];
    std::vector<Fragment> out;
    out.reserve(fragments.size() + 2);
    for (const Fragment& f : fragments) {
        if (f.token != kNoToken) {
            out.push_back(f);
            continue;
        }
        std::string_view rest = f.text;
        for (size_t at; (at = rest.find(needle)) != std::string_view::npos;) {
            if (at > 0) out.push_back({kNoToken, rest.substr(0, at)});
            out.push_back({id, needle});
            rest.remove_prefix(at + needle.size());
        }
        if (!rest.empty()) out.push_back({kNoToken, rest});
    }
    fragments.swap(out);
}

}  // namespace kite
