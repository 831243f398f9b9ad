#include "kv/kv_cache.h"

#include <algorithm>
#include <vector>

#include "core/error.h"
#include "quant/convert.h"
#include "quant/hadamard.h"

namespace kite {

namespace {

// Blocks run along the head dimension, so each head's row must fill whole blocks.
void check_head_dim(const KvCacheShape& s, TensorType type) {
    const KvTypeInfo& t = kv_type_info(type);
    if (s.head_dim % t.block_values != 0)
        fail("a {} KV cache needs a head dimension that is a multiple of {} (this model's is {})",
             t.name, t.block_values, s.head_dim);
}

// One slot's keys (which = 0) or values (1) as they are stored, per thread: writes of
// different slots run on the pool's threads at once. Grown once, never per token.
float* scratch_row(int which, int64_t n) {
    thread_local std::vector<float> rows[2];
    if (static_cast<int64_t>(rows[which].size()) < n) rows[which].resize(static_cast<size_t>(n));
    return rows[which].data();
}

}  // namespace

size_t KvCache::bytes_per_token(const KvCacheShape& s, KvTypes types) {
    check_head_dim(s, types.k);
    check_head_dim(s, types.v);
    const int64_t row = s.n_kv_heads * s.head_dim;
    return static_cast<size_t>(s.n_layers) *
           (kv_row_bytes(types.k, row) + kv_row_bytes(types.v, row));
}

size_t KvCache::block_bytes(const KvCacheShape& shape, KvTypes types, int64_t block_size) {
    return bytes_per_token(shape, types) * static_cast<size_t>(block_size);
}

size_t KvCache::first_token_bytes(const KvCacheShape& s, KvTypes types, int64_t n_slots) {
    const int64_t row = s.n_kv_heads * s.head_dim;
    const auto slots = static_cast<size_t>(n_slots);
    const size_t k_region = kv_row_bytes(types.k, row) * slots,
                 v_region = kv_row_bytes(types.v, row) * slots;
    return static_cast<size_t>(s.n_layers) *
           (std::min(kHugePageBytes, k_region) + std::min(kHugePageBytes, v_region));
}

int64_t KvCache::blocks_for_budget(const KvCacheShape& s, KvTypes types, int64_t block_size,
                                   size_t budget_bytes) {
    return static_cast<int64_t>(budget_bytes / block_bytes(s, types, block_size));
}

KvCache::KvCache(const KvCacheShape& shape, KvTypes types, int64_t n_blocks, int64_t block_size,
                 KeyCalibration calibration)
    : shape_(shape),
      types_(types),
      n_blocks_(n_blocks),
      block_size_(block_size),
      slot_elements_(shape.n_kv_heads * shape.head_dim),
      k_slot_(kv_row_bytes(types.k, slot_elements_)),
      v_slot_(kv_row_bytes(types.v, slot_elements_)),
      write_k_(kv_type_info(types.k).from_f32),
      write_v_(kv_type_info(types.v).from_f32),
      rotate_keys_(kv_type_info(types.k).rotated),
      rotate_values_(kv_type_info(types.v).rotated),
      calibration_(kv_type_info(types.k).calibrated_keys ? std::move(calibration)
                                                         : KeyCalibration{}),
      shifted_(slot_elements_) {
    check_head_dim(shape, types.k);
    check_head_dim(shape, types.v);
    if (!calibration_.empty() &&
        (calibration_.width != slot_elements_ ||
         calibration_.mean.size() != static_cast<size_t>(shape.n_layers * slot_elements_)))
        fail("a key calibration of {} channels does not fit this cache's {} layers of {}",
             calibration_.width, shape.n_layers, slot_elements_);
    if (!calibration_.empty()) {
        for (int64_t l = 0; l < shape.n_layers; ++l) {
            std::vector<float> first = calibration_.stored_first(l);
            if (rotate_keys_) hadamard32_blocks(first.data(), slot_elements_);
            stored_first_.insert(stored_first_.end(), first.begin(), first.end());
        }
    }
    const auto slots = static_cast<size_t>(shape.n_layers * n_slots());
    keys_ = allocate_huge_pages(k_slot_ * slots);
    values_ = allocate_huge_pages(v_slot_ * slots);
}

void KvCache::store_keys(int64_t layer, size_t index, bool first_position, const float* k) {
    if (!calibration_.empty() || rotate_keys_) {
        float* stored = scratch_row(0, slot_elements_);
        std::copy(k, k + slot_elements_, stored);
        if (!calibration_.empty()) calibration_.apply(layer, first_position, stored);
        if (rotate_keys_) hadamard32_blocks(stored, slot_elements_);
        k = stored;
    }
    write_k_(k, keys_.get() + index * k_slot_, slot_elements_);
}

void KvCache::write(int64_t layer, int64_t slot, int64_t position, const float* k, const float* v) {
    // A head's row fills whole blocks, so the slot's row quantizes as its heads' rows would.
    const auto index = static_cast<size_t>(layer * n_slots() + slot);
    store_keys(layer, index, position == 0, k);
    if (rotate_values_) {
        float* stored = scratch_row(1, slot_elements_);
        std::copy(v, v + slot_elements_, stored);
        hadamard32_blocks(stored, slot_elements_);
        v = stored;
    }
    write_v_(v, values_.get() + index * v_slot_, slot_elements_);
}

void KvCache::read_keys(int64_t layer, int64_t slot, int64_t position, float* k) const {
    const auto index = static_cast<size_t>(layer * n_slots() + slot);
    dequantize_row(types_.k, keys_.get() + index * k_slot_, k, static_cast<size_t>(slot_elements_));
    if (rotate_keys_) hadamard32_blocks(k, slot_elements_);  // its own inverse
    if (!calibration_.empty()) calibration_.undo(layer, position == 0, k);
}

void KvCache::copy_rotated(int64_t layer, int64_t from, int64_t from_position, int64_t to,
                           const RopeParams& rope, int64_t delta) {
    float cos_sin[kMaxRopeDims];
    rope_shift_angles(rope, delta, cos_sin);
    read_keys(layer, from, from_position, shifted_.data());
    for (int64_t h = 0; h < shape_.n_kv_heads; ++h)
        rope_rotate(shifted_.data() + h * shape_.head_dim, cos_sin, rope.n_rot, rope.style);
    const auto src = static_cast<size_t>(layer * n_slots() + from);
    const auto dst = static_cast<size_t>(layer * n_slots() + to);
    std::copy_n(values_.get() + src * v_slot_, v_slot_, values_.get() + dst * v_slot_);
    store_keys(layer, dst, false, shifted_.data());
}

PagedKvLayer KvCache::layer(int64_t layer) const {
    const auto first = static_cast<size_t>(layer * n_slots());
    const auto k_head = kv_row_bytes(types_.k, shape_.head_dim);
    const auto v_head = kv_row_bytes(types_.v, shape_.head_dim);
    return {{keys_.get() + first * k_slot_, types_.k, static_cast<int64_t>(k_slot_),
             static_cast<int64_t>(k_head), rotate_keys_,
             calibration_.empty() ? nullptr : calibration_.query_scale_of(layer),
             calibration_.empty() ? nullptr : stored_first_.data() + layer * slot_elements_},
            {values_.get() + first * v_slot_, types_.v, static_cast<int64_t>(v_slot_),
             static_cast<int64_t>(v_head), rotate_values_},
            block_size_};
}

}  // namespace kite
