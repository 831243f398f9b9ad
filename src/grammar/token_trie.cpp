#include "grammar/token_trie.h"

#include <algorithm>
#include <numeric>

#include "grammar/byte_runs.h"

namespace kite::grammar {

// Sorting the tokens by their bytes gives the trie's depth-first order directly: a node is a
// distinct prefix, and its subtree is the run of sorted tokens sharing that prefix.
TokenTrie::TokenTrie(const std::vector<std::string>& token_bytes, std::vector<int32_t> stop_tokens)
    : stop_tokens_(std::move(stop_tokens)), n_vocab_(token_bytes.size()) {
    std::vector<int32_t> order(token_bytes.size());
    std::iota(order.begin(), order.end(), 0);
    std::erase_if(order, [&](int32_t t) { return token_bytes[t].empty(); });
    std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
        return token_bytes[a] < token_bytes[b] || (token_bytes[a] == token_bytes[b] && a < b);
    });
    std::vector<uint32_t> open;  // node index of each depth on the current path
    std::string path;
    for (int32_t t : order) {
        const std::string& s = token_bytes[t];
        size_t common = 0;
        while (common < path.size() && common < s.size() && path[common] == s[common]) ++common;
        for (size_t d = path.size(); d > common; --d)
            nodes_[open[d - 1]].subtree_end = static_cast<uint32_t>(nodes_.size());
        open.resize(common);
        path.resize(common);
        for (size_t d = common; d < s.size(); ++d) {
            open.push_back(static_cast<uint32_t>(nodes_.size()));
            const auto n = static_cast<uint32_t>(token_ids_.size());
            nodes_.push_back({static_cast<uint8_t>(s[d]), static_cast<uint16_t>(d + 1), 0, n, n});
            path.push_back(s[d]);
        }
        token_ids_.push_back(t);
        nodes_[open.back()].tokens_end = static_cast<uint32_t>(token_ids_.size());
    }
    for (uint32_t i : open) nodes_[i].subtree_end = static_cast<uint32_t>(nodes_.size());
    for (size_t i = 0; i < nodes_.size(); i = nodes_[i].subtree_end)
        nodes_under_[nodes_[i].byte] = static_cast<uint32_t>(nodes_[i].subtree_end - i);
    // Children come after their parent, so one backward pass sees them first.
    deepest_.assign(nodes_.size(), 0);
    for (size_t i = nodes_.size(); i-- > 0;) {
        const Node& n = nodes_[i];
        if (n.tokens_end > n.tokens_begin) deepest_[i] = n.depth;
        for (uint32_t c = static_cast<uint32_t>(i) + 1; c < n.subtree_end;
             c = nodes_[c].subtree_end)
            deepest_[i] = std::max(deepest_[i], deepest_[c]);
    }
    byte_runs_ = std::make_shared<ByteRunsCache>();
}

}  // namespace kite::grammar
