#include "kv/block_pool.h"

#include <cassert>

namespace kite {

BlockPool::BlockPool(int64_t n_blocks, bool prefix_caching) : ref_counts_(n_blocks, 0) {
    free_.reserve(n_blocks);
    for (int64_t b = n_blocks - 1; b >= 0; --b) free_.push_back(static_cast<int32_t>(b));
    if (prefix_caching) cache_ = std::make_unique<PrefixCache>(n_blocks);
}

BlockPool::~BlockPool() = default;

int64_t BlockPool::n_free() const {
    return static_cast<int64_t>(free_.size()) + n_cached_free();
}

int32_t BlockPool::allocate() {
    int32_t b = -1;
    if (!free_.empty()) {
        b = free_.back();
        free_.pop_back();
    } else if (cache_) {
        b = cache_->evict();
    }
    if (b >= 0) ref_counts_[b] = 1;
    return b;
}

void BlockPool::add_ref(int32_t block) {
    ref_counts_[block]++;
}

void BlockPool::release(int32_t block) {
    assert(ref_counts_[block] > 0);
    if (--ref_counts_[block] > 0) return;
    if (cache_ && cache_->holds(block))
        cache_->park(block);
    else
        free_.push_back(block);
}

int32_t BlockPool::acquire_cached(uint64_t hash) {
    if (!cache_) return -1;
    const int32_t b = cache_->find(hash);
    if (b < 0) return -1;
    if (ref_counts_[b]++ == 0) cache_->unpark(b);
    return b;
}

void BlockPool::publish(int32_t block, uint64_t hash) {
    if (cache_) cache_->insert(hash, block);
}

}  // namespace kite
