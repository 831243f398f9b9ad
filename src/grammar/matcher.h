// An incremental Earley recognizer over bytes for one Grammar: one item set per byte fed, so
// any context-free grammar works (recursion, left recursion, nullable rules), and undoing
// bytes or whole tokens is dropping the newest sets. Token boundaries are remembered so that
// rejected speculative drafts can be rolled back.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "grammar/grammar.h"

namespace kite::grammar {

class TokenTrie;

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

    // Sets bit t of `mask` (n_vocab bits, 64 per word) for every token t whose bytes could
    // come next, and the stop tokens when the sentence may end here. Walks the vocabulary's
    // trie, dropping a whole subtree as soon as its prefix is rejected.
    void allowed_tokens(const TokenTrie& trie, std::vector<uint64_t>& mask);

  private:
    struct Item {
        uint32_t pos;     // index into grammar elements: the element after the dot
        uint32_t origin;  // the set where the item's production started
    };

    bool push_byte(uint8_t b);
    void pop_set();
    void close_set(uint32_t k);
    void add(Item item);
    void reset_dedup(size_t expected);

    std::shared_ptr<const Grammar> g_;
    std::vector<Item> items_;
    std::vector<uint32_t> set_start_;   // items of set k: [set_start_[k], set_start_[k+1])
    std::vector<uint32_t> token_sets_;  // the number of sets before each accepted token
    // Open-addressing set of the current set's items, cleared by bumping a generation.
    std::vector<uint64_t> dedup_keys_;
    std::vector<uint32_t> dedup_gen_;
    uint32_t gen_ = 0;
    size_t dedup_count_ = 0;
};

}  // namespace kite::grammar
