#include "engine/draft_vocabulary.h"

#include <algorithm>

#include "core/error.h"

namespace kite {

namespace {

std::vector<std::string_view> token_strings(const GgufFile& f) {
    auto tokens = f.get_string_array("tokenizer.ggml.tokens");
    if (!tokens) fail("'{}' has no token list (tokenizer.ggml.tokens)", f.name());
    return std::move(*tokens);
}

}  // namespace

void check_same_vocabulary(const GgufFile& target, int64_t target_n_vocab, const GgufFile& draft,
                           int64_t draft_n_vocab) {
    const auto t = token_strings(target), d = token_strings(draft);
    const std::string why =
        fmt::format("the draft model '{}' cannot draft for '{}'", draft.name(), target.name());
    if (t.size() != d.size() || target_n_vocab != draft_n_vocab)
        fail("{}: its vocabulary has {} tokens ({} logits), the target's {} ({})", why, d.size(),
             draft_n_vocab, t.size(), target_n_vocab);
    const auto [ti, di] = std::mismatch(t.begin(), t.end(), d.begin());
    if (ti != t.end())
        fail("{}: token {} is '{}' in the draft's vocabulary and '{}' in the target's", why,
             ti - t.begin(), *di, *ti);
}

}  // namespace kite
