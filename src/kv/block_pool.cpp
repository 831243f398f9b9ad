#include "kv/block_pool.h"

#include <cassert>

namespace kite {

BlockPool::BlockPool(int64_t n_blocks) : ref_counts_(n_blocks, 0) {
    free_.reserve(n_blocks);
    for (int64_t b = n_blocks - 1; b >= 0; --b) free_.push_back(static_cast<int32_t>(b));
}

int32_t BlockPool::allocate() {
    if (free_.empty()) return -1;
    int32_t b = free_.back();
    free_.pop_back();
    ref_counts_[b] = 1;
    return b;
}

void BlockPool::add_ref(int32_t block) {
    ref_counts_[block]++;
}

void BlockPool::release(int32_t block) {
    assert(ref_counts_[block] > 0);
    if (--ref_counts_[block] == 0) free_.push_back(block);
}

}  // namespace kite
