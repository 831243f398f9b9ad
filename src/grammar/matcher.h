// An incremental Earley recognizer over bytes for one Grammar: one item set per byte fed, so
// any context-free grammar works (recursion, left recursion, nullable rules), and undoing
// bytes or whole tokens is dropping the newest sets. Token boundaries are remembered so that
// rejected speculative drafts can be rolled back.
#pragma once

#include <algorithm>
#include <array>
#include <bitset>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "grammar/grammar.h"

namespace kite::grammar {

class TokenTrie;

// Masks already computed for a grammar, by parse state: shared by the matchers of one grammar
// and vocabulary (one cache per compiled constraint). Within a JSON string, or at the same
// place of the same schema in another instance, the state repeats and the trie walk is
// skipped.
class MaskCache {
  public:
    const std::vector<uint64_t>* find(uint64_t state) const;
    void put(uint64_t state, const std::vector<uint64_t>& mask);

  private:
    static constexpr size_t kMaxEntries = 2048;  // about 12 MB for a 49k vocabulary
    std::unordered_map<uint64_t, std::vector<uint64_t>> masks_;
};

// Closing lengths in tokens already worked out, by parse state (Matcher::closing_tokens):
// shared like MaskCache by the matchers of one constraint.
class ClosingCache {
  public:
    const uint64_t* find(uint64_t state) const;
    void put(uint64_t state, uint64_t tokens);

  private:
    static constexpr size_t kMaxEntries = 1 << 16;
    std::unordered_map<uint64_t, uint64_t> tokens_;
};

class Matcher {
  public:
    explicit Matcher(std::shared_ptr<const Grammar> grammar);

    // Whether `bytes` could come next (the state is left as it was).
    bool accepts(std::string_view bytes);
    // Feeds one token's bytes; false (and nothing changes) when the grammar rejects them.
    bool advance(std::string_view token_bytes);
    // Whether the bytes fed so far form a complete sentence of the grammar.
    bool can_stop() const;
    // Undoes the last n accepted tokens (n at most tokens()).
    void rollback(size_t n);
    size_t tokens() const { return token_sets_.size(); }

    // The fewest bytes that, fed next, let the sentence stop (0: it may stop now). Worked out
    // on demand from the open items (matcher_completion.cpp), so a matcher that never asks
    // pays nothing.
    uint64_t completion_length();
    // Clears from `mask` every token that does not start a shortest completion (after it,
    // completion_length() is less by the token's length), and the stop tokens unless the
    // sentence may stop now: what is left closes the output in the fewest bytes.
    void keep_shortest(const TokenTrie& trie, std::vector<uint64_t>& mask);
    // The longest token that starts a shortest completion (the lowest id among equals), as
    // keep_shortest would keep it; -1 when no token does (or the sentence may stop now).
    int32_t closing_token(const TokenTrie& trie);
    // How many tokens closing takes from here, each the closing_token() of its state: at most
    // `limit` (limit when more). Memoised by parse state in `cache`, which belongs to one
    // grammar and vocabulary.
    uint64_t closing_tokens(const TokenTrie& trie, const std::vector<std::string>& token_bytes,
                            ClosingCache& cache, uint64_t limit);

    // Sets bit t of `mask` (n_vocab bits, 64 per word) for every token t whose bytes could
    // come next, and the stop tokens when the sentence may end here. Walks the vocabulary's
    // trie, dropping a whole subtree as soon as its prefix is rejected.
    // With a cache, a state seen before gets its mask without the walk.
    // Inside a byte run (a JSON string, a character class loop) the tokens made of the run's
    // bytes are allowed at once and only the rest of the other tokens is walked. Elsewhere
    // the walk feeds each group of bytes scanned alike once for all the children in it, and
    // not at all where it leads back to the same parse state (see walk_below).
    void allowed_tokens(const TokenTrie& trie, std::vector<uint64_t>& mask,
                        MaskCache* cache = nullptr);

    // Off: every mask is the plain walk of the whole trie, one Earley step per node (the
    // reference the fast paths are tested against). min_nodes: the trie nodes a run must
    // cover for the run fast path to be taken, and (at most 8) a subtree for its set's byte
    // groups to be worked out (below that feeding each byte is as cheap; tests lower it to
    // exercise the paths everywhere).
    void set_fast_paths(bool on, uint32_t min_nodes = 4096) {
        fast_paths_ = on;
        min_run_nodes_ = min_nodes;
        min_loop_nodes_ = std::min<uint32_t>(min_nodes, 8);
    }

  private:
    struct Item {
        uint32_t pos;     // index into grammar elements: the element after the dot
        uint32_t origin;  // the set where the item's production started
    };

    static constexpr uint32_t kNoItem = UINT32_MAX;
    struct LeoEntry {
        uint32_t rule;
        Item top;  // pos kNoItem: no deterministic chain
    };

    bool push_byte(uint8_t b);
    Item leo_top(uint32_t set, uint32_t rule);
    const Item* leo_find(uint32_t set, uint32_t rule) const;
    void pop_set();
    void close_set(uint32_t k);
    void add(Item item);
    void reset_dedup(size_t expected);
    uint64_t state_hash();
    void walk_trie(const TokenTrie& trie, std::vector<uint64_t>& mask);
    void walk_nodes(const TokenTrie& trie, std::vector<uint64_t>& mask,
                    const std::bitset<256>& first, bool feed_first);
    struct StateInfo {
        std::array<uint16_t, 256> group{};  // bytes scanned by the same items: equal ids (0: none)
        std::bitset<256> loop, tested;      // groups fed once: those leading back to this state
    };
    struct Walk {
        const TokenTrie& trie;
        std::vector<uint64_t>& mask;
    };
    StateInfo* state_info();
    StateInfo* child_info(size_t subtree);
    void walk_plain(const Walk& walk, uint32_t node);
    void walk_below_plain(const Walk& walk, uint32_t node);
    void allow(const Walk& walk, size_t begin, size_t end);
    void walk_children(const Walk& walk, size_t begin, size_t end, StateInfo* info);
    void walk_groups(const Walk& walk, size_t mark, StateInfo* info);
    bool walk_run(const TokenTrie& trie, std::vector<uint64_t>& mask);
    uint32_t largest_group(const std::vector<uint32_t>& weight, std::bitset<256>& group) const;
    enum class RunScan : uint8_t { None, Alike, Mixed };
    RunScan scan_of(const std::bitset<256>& run) const;

    std::shared_ptr<const Grammar> g_;
    std::vector<Item> items_;
    std::vector<uint32_t> set_start_;   // items of set k: [set_start_[k], set_start_[k+1])
    std::vector<uint32_t> token_sets_;  // the number of sets before each accepted token
    // Per set: a hash of its items with origins replaced by their sets' hashes, so equal
    // hashes mean equal parse states wherever they sit in the input (0: not computed yet).
    std::vector<uint64_t> set_hash_;
    // Per set: Leo's topmost items by completed rule (see leo_top), dropped with the set.
    std::vector<std::vector<LeoEntry>> leo_;
    std::vector<std::pair<uint32_t, uint32_t>> leo_chain_;
    // Open-addressing set of the current set's items, cleared by bumping a generation.
    std::vector<uint64_t> dedup_keys_;
    std::vector<uint32_t> dedup_gen_;
    uint32_t gen_ = 0;
    size_t dedup_count_ = 0;
    bool fast_paths_ = true;
    uint32_t min_run_nodes_ = 4096;
    uint32_t min_loop_nodes_ = 8;  // the subtree a set must head for state_info to pay
    std::vector<std::pair<uint16_t, uint32_t>> children_;  // the walk's (group, node) levels
    // state_info by state hash (per matcher: a parse state's info depends only on the grammar).
    static constexpr size_t kMaxStateInfos = 1024;         // about 600 bytes each
    std::unordered_map<uint64_t, StateInfo> state_infos_;  // elements never move
    std::vector<std::bitset<256>> parts_;  // state_info's partition of the scanned bytes
    std::vector<uint32_t> seen_sets_;

    // Per set: for each rule one of its items waits for, the fewest bytes that finish the
    // sentence once that rule has matched from this set on; worked out on demand (after_known_)
    // and forgotten when the set is dropped.
    struct AwaitedRule {
        uint32_t rule;
        uint64_t length;
        bool operator<(const AwaitedRule& o) const { return rule < o.rule; }
    };
    uint32_t set_end(uint32_t k) const;
    uint64_t after_rule(uint32_t set, uint32_t rule) const;
    void work_out_after(uint32_t set);
    void fill_after(uint32_t set);
    void walk_shortest(const TokenTrie& trie, uint32_t node, uint64_t want);
    void walk_longest(const TokenTrie& trie, uint32_t node, uint64_t want);
    void note_longest(const TokenTrie& trie, uint32_t node);
    std::vector<std::vector<AwaitedRule>> after_;
    std::vector<uint8_t> after_known_;
    std::vector<uint32_t> after_stack_;
    std::vector<uint64_t> shortest_;  // keep_shortest's tokens
    uint16_t longest_depth_ = 0;      // closing_token's longest so far
    int32_t longest_token_ = -1;
    std::vector<uint64_t> closing_states_;
};

}  // namespace kite::grammar
