#include "kv/prefix_cache.h"

#include <xxhash.h>

namespace kite {

uint64_t PrefixCache::chain_hash(uint64_t parent, std::span<const int32_t> tokens) {
    return XXH3_64bits_withSeed(tokens.data(), tokens.size_bytes(), parent);
}

PrefixCache::PrefixCache(int64_t n_blocks)
    : by_hash_(n_blocks),
      hash_of_(n_blocks, 0),
      has_hash_(n_blocks, false),
      prev_(n_blocks + 1),
      next_(n_blocks + 1),
      parked_(n_blocks, false) {
    const auto sentinel = static_cast<int32_t>(n_blocks);
    prev_[sentinel] = next_[sentinel] = sentinel;
}

int32_t PrefixCache::find(uint64_t hash) const {
    return by_hash_.find(hash);
}

void PrefixCache::insert(uint64_t hash, int32_t block) {
    if (has_hash_[block] || !by_hash_.insert(hash, block)) return;
    hash_of_[block] = hash;
    has_hash_[block] = true;
}

void PrefixCache::park(int32_t block) {
    if (parked_[block]) return;
    const auto sentinel = static_cast<int32_t>(parked_.size());
    // Insert before the sentinel: the list runs from least to most recently used.
    const int32_t last = prev_[sentinel];
    prev_[block] = last, next_[block] = sentinel;
    next_[last] = block, prev_[sentinel] = block;
    parked_[block] = true;
    n_parked_++;
}

void PrefixCache::unlink(int32_t block) {
    next_[prev_[block]] = next_[block];
    prev_[next_[block]] = prev_[block];
    parked_[block] = false;
    n_parked_--;
}

void PrefixCache::unpark(int32_t block) {
    if (parked_[block]) unlink(block);
}

int32_t PrefixCache::evict() {
    const auto sentinel = static_cast<int32_t>(parked_.size());
    const int32_t block = next_[sentinel];
    if (block == sentinel) return -1;
    unlink(block);
    by_hash_.erase(hash_of_[block]);
    hash_of_[block] = 0;
    has_hash_[block] = false;
    return block;
}

}  // namespace kite
