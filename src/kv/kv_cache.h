// The KV cache: one pool of fixed-size blocks of token slots holding every layer's keys
// and values. Sequences own blocks through block tables (kv/block_pool.h); the element
// type is a property of the pool, so the model code does not change with it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "gguf/tensor_type.h"
#include "kernels/attention.h"

namespace kite {

struct KvCacheShape {
    int64_t n_layers = 0;
    int64_t n_kv_heads = 0;
    int64_t head_dim = 0;
};

class KvCache {
  public:
    // `type` is F32 or F16.
    KvCache(const KvCacheShape& shape, TensorType type, int64_t n_blocks, int64_t block_size);

    // Blocks that fit in `budget_bytes` (at least 1 is not guaranteed: may return 0).
    static int64_t blocks_for_budget(const KvCacheShape& shape, TensorType type, int64_t block_size,
                                     size_t budget_bytes);
    static size_t element_bytes(TensorType type);

    int64_t n_blocks() const { return n_blocks_; }
    int64_t block_size() const { return block_size_; }
    int64_t n_slots() const { return n_blocks_ * block_size_; }
    TensorType type() const { return type_; }

    // M_kv = 2 * b * L * H_kv * d_h * slots: exactly the bytes allocated.
    size_t bytes() const { return keys_.size() + values_.size(); }

    // Stores one token's keys and values (n_kv_heads * head_dim floats each) in `slot`.
    void write(int64_t layer, int64_t slot, const float* k, const float* v);

    PagedKvLayer layer(int64_t layer) const;

  private:
    KvCacheShape shape_;
    TensorType type_;
    int64_t n_blocks_, block_size_;
    int64_t slot_elements_;
    std::vector<uint8_t> keys_, values_;  // [layer][slot][n_kv_heads * head_dim]
};

}  // namespace kite
