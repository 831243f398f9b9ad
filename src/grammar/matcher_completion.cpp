// How far the matcher's text is from a complete sentence, in bytes, and which tokens take
// the shortest way there: what closing an output within a token budget needs.
//
// An item "A ::= alpha . beta" that began in set o finishes the sentence in at least
// rest(beta) bytes plus after(o, A): the fewest bytes that finish the sentence once A has
// matched from set o on. after(o, A) is the least, over the items of set o waiting for A
// ("B ::= gamma . A delta", begun in set o'), of rest(delta) + after(o', B); after(0, root)
// is 0. Items a set predicted wait in the same set, so a set's values are a shortest-path
// problem of their own, solved by relaxing until nothing changes (lengths are never
// negative). Leo's shortcut leaves out only completed items, never waiting ones, so every
// set holds all it needs.
#include <algorithm>

#include "grammar/matcher.h"
#include "grammar/shortest_length.h"
#include "grammar/token_trie.h"

namespace kite::grammar {

uint32_t Matcher::set_end(uint32_t k) const {
    return k + 1 < set_start_.size() ? set_start_[k + 1] : static_cast<uint32_t>(items_.size());
}

uint64_t Matcher::after_rule(uint32_t set, uint32_t rule) const {
    if (set == 0 && rule == g_->root) return 0;
    const std::vector<AwaitedRule>& table = after_[set];
    auto it = std::lower_bound(table.begin(), table.end(), AwaitedRule{rule, 0});
    return it != table.end() && it->rule == rule ? it->length : kLongest;
}

// Works out `set`'s values and, first, those of every set its items began in (with a stack:
// a right-recursive list nests one level per item, too deep for recursion).
void Matcher::work_out_after(uint32_t set) {
    after_known_.resize(set_start_.size(), 0);
    after_.resize(std::max(after_.size(), set_start_.size()));
    after_stack_.assign(1, set);
    while (!after_stack_.empty()) {
        const uint32_t s = after_stack_.back();
        if (after_known_[s]) {
            after_stack_.pop_back();
            continue;
        }
        bool ready = true;
        for (uint32_t i = set_start_[s]; i < set_end(s); ++i)
            if (items_[i].origin < s && !after_known_[items_[i].origin]) {
                after_stack_.push_back(items_[i].origin);
                ready = false;
            }
        if (!ready) continue;
        fill_after(s);
        after_known_[s] = 1;
        after_stack_.pop_back();
    }
}

void Matcher::fill_after(uint32_t s) {
    const Grammar& g = *g_;
    std::vector<AwaitedRule>& table = after_[s];
    table.clear();
    const uint32_t begin = set_start_[s], end = set_end(s);
    for (uint32_t i = begin; i < end; ++i) {
        const Element& e = g.elements[items_[i].pos];
        if (e.kind == Element::Kind::Rule) table.push_back({e.id, kLongest});
    }
    std::sort(table.begin(), table.end());
    table.erase(
        std::unique(table.begin(), table.end(),
                    [](const AwaitedRule& a, const AwaitedRule& b) { return a.rule == b.rule; }),
        table.end());
    for (bool changed = true; changed;) {
        changed = false;
        for (uint32_t i = begin; i < end; ++i) {
            const Item item = items_[i];
            const Element& e = g.elements[item.pos];
            if (e.kind != Element::Kind::Rule) continue;
            const uint64_t length = add_lengths(g.rest_length[item.pos + 1],
                                                after_rule(item.origin, g.rule_of[item.pos]));
            auto it = std::lower_bound(table.begin(), table.end(), AwaitedRule{e.id, 0});
            if (length < it->length) {
                it->length = length;
                changed = true;
            }
        }
    }
}

uint64_t Matcher::completion_length() {
    const auto k = static_cast<uint32_t>(set_start_.size() - 1);
    work_out_after(k);
    uint64_t best = kLongest;
    for (uint32_t i = set_start_[k]; i < items_.size(); ++i) {
        const Item item = items_[i];
        best = std::min(best, add_lengths(g_->rest_length[item.pos],
                                          after_rule(item.origin, g_->rule_of[item.pos])));
    }
    return best;
}

// shortest_ = the tokens that start a shortest completion from here.
void Matcher::keep_shortest(const TokenTrie& trie, std::vector<uint64_t>& mask) {
    const uint64_t now = completion_length();
    shortest_.assign(trie.mask_words(), 0);
    if (now == 0) {
        for (int32_t t : trie.stop_tokens()) shortest_[t >> 6] |= 1ULL << (t & 63);
    } else if (now < kLongest) {
        const std::vector<TokenTrie::Node>& nodes = trie.nodes();
        for (uint32_t c = 0; c < nodes.size(); c = nodes[c].subtree_end)
            walk_shortest(trie, c, now - 1);
    }
    for (size_t w = 0; w < mask.size(); ++w) mask[w] &= shortest_[w];
}

int32_t Matcher::closing_token(const TokenTrie& trie) {
    const uint64_t now = completion_length();
    longest_depth_ = 0;
    longest_token_ = -1;
    if (now > 0 && now < kLongest) {
        const std::vector<TokenTrie::Node>& nodes = trie.nodes();
        for (uint32_t c = 0; c < nodes.size(); c = nodes[c].subtree_end)
            walk_longest(trie, c, now - 1);
    }
    return longest_token_;
}

uint64_t Matcher::closing_tokens(const TokenTrie& trie, const std::vector<std::string>& token_bytes,
                                 ClosingCache& cache, uint64_t limit) {
    closing_states_.clear();
    uint64_t total = kLongest;  // unknown until a state with a known count is reached
    while (closing_states_.size() < limit) {
        const uint64_t state = state_hash();
        if (const uint64_t* known = cache.find(state)) {
            total = *known;
            break;
        }
        if (completion_length() == 0) {
            total = 0;
            break;
        }
        const int32_t t = closing_token(trie);
        if (t < 0) break;                     // no token spells the way: closing cannot finish
        if (!advance(token_bytes[t])) break;  // cannot happen: the walk fed these bytes
        closing_states_.push_back(state);
    }
    // Back along the path: each state is one token further from the end than the next.
    for (size_t i = closing_states_.size(); i-- > 0;) {
        if (total < kLongest) cache.put(closing_states_[i], ++total);
        rollback(1);
    }
    return std::min(total, limit);
}

// A token is on a shortest completion only if each of its prefixes is (every byte brings the
// completion one byte closer), so a subtree is dropped at the first prefix that is not.
void Matcher::walk_shortest(const TokenTrie& trie, uint32_t node, uint64_t want) {
    const std::vector<TokenTrie::Node>& nodes = trie.nodes();
    if (!push_byte(nodes[node].byte)) return;
    if (completion_length() == want) {
        const std::vector<int32_t>& ids = trie.token_ids();
        for (uint32_t j = nodes[node].tokens_begin; j < nodes[node].tokens_end; ++j)
            shortest_[ids[j] >> 6] |= 1ULL << (ids[j] & 63);
        if (want > 0)
            for (uint32_t c = node + 1; c < nodes[node].subtree_end; c = nodes[c].subtree_end)
                walk_shortest(trie, c, want - 1);
    }
    pop_set();
}

// walk_shortest for closing_token alone: the same longest token, without the set of all the
// others, so a subtree whose tokens are all shorter than the longest found is not walked. On a
// long run of letters every letter token shortens the completion, and walking them all for
// each closing token made counting the tokens of closing a 2,000-letter run cost more than
// the model's step.
void Matcher::walk_longest(const TokenTrie& trie, uint32_t node, uint64_t want) {
    const std::vector<TokenTrie::Node>& nodes = trie.nodes();
    if (trie.deepest()[node] < longest_depth_ || !push_byte(nodes[node].byte)) return;
    if (completion_length() == want) {
        note_longest(trie, node);
        if (want > 0)
            for (uint32_t c = node + 1; c < nodes[node].subtree_end; c = nodes[c].subtree_end)
                walk_longest(trie, c, want - 1);
    }
    pop_set();
}

// The tokens ending at `node` against the longest so far (the lowest id among equals).
void Matcher::note_longest(const TokenTrie& trie, uint32_t node) {
    const TokenTrie::Node& n = trie.nodes()[node];
    const std::vector<int32_t>& ids = trie.token_ids();
    for (uint32_t j = n.tokens_begin; j < n.tokens_end; ++j)
        if (n.depth > longest_depth_ || (n.depth == longest_depth_ && ids[j] < longest_token_)) {
            longest_depth_ = n.depth;
            longest_token_ = ids[j];
        }
}

const uint64_t* ClosingCache::find(uint64_t state) const {
    auto it = tokens_.find(state);
    return it == tokens_.end() ? nullptr : &it->second;
}

void ClosingCache::put(uint64_t state, uint64_t tokens) {
    if (tokens_.size() >= kMaxEntries) tokens_.clear();
    tokens_[state] = tokens;
}

}  // namespace kite::grammar
