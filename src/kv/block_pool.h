// Which KV-cache blocks are free: a free list with reference counts, so that sequences
// sharing a prefix share its blocks. With prefix caching, a full block is published under
// the hash of the prefix it holds (kv/prefix_cache.h); when its last user releases it, it
// stays cached instead of going back to the free list, and is evicted, least recently
// used first, only when no plain free block is left.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "kv/prefix_cache.h"

namespace kite {

class BlockPool {
  public:
    explicit BlockPool(int64_t n_blocks, bool prefix_caching = false);
    ~BlockPool();

    int64_t n_blocks() const { return static_cast<int64_t>(ref_counts_.size()); }
    // Blocks allocate() can hand out: plain free ones plus unused cached ones.
    int64_t n_free() const;
    // Blocks some sequence holds (reference count > 0).
    int64_t n_used() const { return n_blocks() - n_free(); }
    // Unused blocks kept for their cached prefix (part of n_free()).
    int64_t n_cached_free() const { return cache_ ? cache_->n_parked() : 0; }
    bool prefix_caching() const { return cache_ != nullptr; }

    // A block with reference count 1 and no cached contents (a cached unused block is
    // evicted when no plain free block is left), or -1 when none is left.
    int32_t allocate();
    void add_ref(int32_t block);
    // Drops one reference; the block is free again (or cached) when none remain.
    void release(int32_t block);
    int32_t ref_count(int32_t block) const { return ref_counts_[block]; }

    // The cached block holding the prefix named `hash`, with a reference taken for the
    // caller; -1 when it is not cached (or prefix caching is off).
    int32_t acquire_cached(uint64_t hash);
    // Records that `block` is full and holds the prefix named `hash`.
    void publish(int32_t block, uint64_t hash);

  private:
    std::vector<int32_t> ref_counts_;
    std::vector<int32_t> free_;  // used as a stack: recently freed blocks are still warm
    std::unique_ptr<PrefixCache> cache_;
};

}  // namespace kite
