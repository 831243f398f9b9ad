#include "kv/kv_cache.h"

#include <cstring>

#include "core/error.h"
#include "kernels/ops.h"

namespace kite {

size_t KvCache::element_bytes(TensorType type) {
    switch (type) {
        case TensorType::F32:
            return 4;
        case TensorType::F16:
            return 2;
        default:
            fail("KV cache type {} is not supported (use f32 or f16)", tensor_type_name(type));
    }
}

int64_t KvCache::blocks_for_budget(const KvCacheShape& s, TensorType type, int64_t block_size,
                                   size_t budget_bytes) {
    const size_t per_block =
        2 * element_bytes(type) * s.n_layers * s.n_kv_heads * s.head_dim * block_size;
    return static_cast<int64_t>(budget_bytes / per_block);
}

KvCache::KvCache(const KvCacheShape& shape, TensorType type, int64_t n_blocks, int64_t block_size)
    : shape_(shape),
      type_(type),
      n_blocks_(n_blocks),
      block_size_(block_size),
      slot_elements_(shape.n_kv_heads * shape.head_dim) {
    const size_t layer_bytes = element_bytes(type) * slot_elements_ * n_slots();
    keys_.resize(layer_bytes * shape.n_layers);
    values_.resize(layer_bytes * shape.n_layers);
}

void KvCache::write(int64_t layer, int64_t slot, const float* k, const float* v) {
    const size_t index = (layer * n_slots() + slot) * slot_elements_;
    if (type_ == TensorType::F16) {
        auto* kd = reinterpret_cast<uint16_t*>(keys_.data()) + index;
        auto* vd = reinterpret_cast<uint16_t*>(values_.data()) + index;
        f32_to_f16_row(k, kd, slot_elements_);
        f32_to_f16_row(v, vd, slot_elements_);
    } else {
        std::memcpy(reinterpret_cast<float*>(keys_.data()) + index, k, slot_elements_ * 4);
        std::memcpy(reinterpret_cast<float*>(values_.data()) + index, v, slot_elements_ * 4);
    }
}

PagedKvLayer KvCache::layer(int64_t layer) const {
    const size_t offset = element_bytes(type_) * layer * n_slots() * slot_elements_;
    return {keys_.data() + offset, values_.data() + offset, type_, slot_elements_, block_size_};
}

}  // namespace kite
