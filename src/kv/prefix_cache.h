// Prefix caching: which KV blocks hold which token prefix. A full block is named by a hash
// chained over the previous block's hash and its own token ids (XXH3-64), so one hash names
// a whole prefix. Cached blocks nobody uses any more are kept, least recently used first
// out, until the pool needs them (kv/block_pool.h evicts through evict()).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "kv/hash_index.h"

namespace kite {

class PrefixCache {
  public:
    static constexpr uint64_t kRootHash = 0x6b6974652d6b7600;  // the "previous block" of block 0

    // The hash of a block of `tokens` that follows a block hashed `parent`.
    static uint64_t chain_hash(uint64_t parent, std::span<const int32_t> tokens);

    explicit PrefixCache(int64_t n_blocks);

    // The block holding the prefix named `hash`, or -1.
    int32_t find(uint64_t hash) const;
    bool holds(int32_t block) const { return has_hash_[block]; }
    // Names a full block's contents. Does nothing when the block already has a name or
    // another block holds the same prefix (both stay as they are).
    void insert(uint64_t hash, int32_t block);

    // The unused cached blocks, in least-recently-used order.
    void park(int32_t block);    // its last user released it: evictable, most recent
    void unpark(int32_t block);  // in use again
    // Forgets the least recently used parked block and returns it; -1 when none is parked.
    int32_t evict();

    int64_t n_parked() const { return n_parked_; }
    int64_t n_cached() const { return by_hash_.size(); }

  private:
    void unlink(int32_t block);

    HashIndex by_hash_;
    std::vector<uint64_t> hash_of_;
    std::vector<bool> has_hash_;
    // Doubly linked LRU list over block ids; index n_blocks is the sentinel.
    std::vector<int32_t> prev_, next_;
    std::vector<bool> parked_;
    int64_t n_parked_ = 0;
};

}  // namespace kite
