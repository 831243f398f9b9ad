// Which KV-cache blocks are free: a free list with reference counts, so that sequences
// sharing a prefix can share its blocks.
#pragma once

#include <cstdint>
#include <vector>

namespace kite {

class BlockPool {
  public:
    explicit BlockPool(int64_t n_blocks);

    int64_t n_blocks() const { return static_cast<int64_t>(ref_counts_.size()); }
    int64_t n_free() const { return static_cast<int64_t>(free_.size()); }

    // A free block with reference count 1, or -1 when none is left.
    int32_t allocate();
    void add_ref(int32_t block);
    // Drops one reference; the block is free again when none remain.
    void release(int32_t block);
    int32_t ref_count(int32_t block) const { return ref_counts_[block]; }

  private:
    std::vector<int32_t> ref_counts_;
    std::vector<int32_t> free_;  // used as a stack: recently freed blocks are still warm
};

}  // namespace kite
