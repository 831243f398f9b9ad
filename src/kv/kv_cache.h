// The KV cache: one pool of fixed-size blocks of token slots holding every layer's keys
// and values. Sequences own blocks through block tables (kv/block_pool.h); the element
// types (kv/kv_type.h, keys and values may differ) are properties of the pool, so the model
// code does not change with them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/huge_pages.h"
#include "kernels/attention/attention.h"
#include "kernels/ops/ops.h"
#include "kv/key_calibration.h"
#include "kv/kv_type.h"

namespace kite {

struct KvCacheShape {
    int64_t n_layers = 0;
    int64_t n_kv_heads = 0;
    int64_t head_dim = 0;
};

class KvCache {
  public:
    // kite::Error where head_dim does not fill a block format's blocks. Keys of a type that
    // takes a calibration (KvTypeInfo::calibrated_keys) are stored centred and scaled by
    // `calibration` when it is not empty (model/key_calibration_run.h makes one).
    KvCache(const KvCacheShape& shape, KvTypes types, int64_t n_blocks, int64_t block_size,
            KeyCalibration calibration = {});

    // M_kv of one token: (b_k + b_v) * L * H_kv * d_h bytes, exactly what a slot allocates.
    static size_t bytes_per_token(const KvCacheShape& shape, KvTypes types);
    static size_t block_bytes(const KvCacheShape& shape, KvTypes types, int64_t block_size);
    // Bytes resident once each layer holds a first token, in a cache of `n_slots` slots: each
    // layer's keys and values are a region of huge-page-advised memory, so its first write
    // makes a huge page of it (or all of it, when smaller) resident.
    static size_t first_token_bytes(const KvCacheShape& shape, KvTypes types, int64_t n_slots);
    // Blocks that fit in `budget_bytes` (at least 1 is not guaranteed: may return 0).
    static int64_t blocks_for_budget(const KvCacheShape& shape, KvTypes types, int64_t block_size,
                                     size_t budget_bytes);

    int64_t n_blocks() const { return n_blocks_; }
    int64_t block_size() const { return block_size_; }
    int64_t n_slots() const { return n_blocks_ * block_size_; }
    KvTypes types() const { return types_; }

    // Exactly the bytes allocated: bytes_per_token * n_slots.
    size_t bytes() const {
        return bytes_per_token(shape_, types_) * static_cast<size_t>(n_slots());
    }

    // Stores one token's keys and values (n_kv_heads * head_dim floats each) in `slot`,
    // converted (quantized) to the cache's types. `position`: the token's place in its
    // sequence (a calibrated cache stores position 0's keys apart, kv/key_calibration.h).
    // Writes of different slots may run at once, on different threads.
    void write(int64_t layer, int64_t slot, int64_t position, const float* k, const float* v);
    // One slot's keys as floats, as they were given to write() (with the same position) up
    // to the type's rounding.
    void read_keys(int64_t layer, int64_t slot, int64_t position, float* k) const;
    // Copies slot `from` (written at `from_position`) to slot `to`, its keys turned by RoPE as
    // if they had been written `delta` positions later (each head's first rope.n_rot values, in
    // rope.style): the attention sinks of a sliding window (kv/kv_window.h), whose copies lie
    // past position 0. Keys of a block type are dequantized, rotated and quantized again;
    // values are copied as stored.
    void copy_rotated(int64_t layer, int64_t from, int64_t from_position, int64_t to,
                      const RopeParams& rope, int64_t delta);

    PagedKvLayer layer(int64_t layer) const;

  private:
    // Centred, scaled and rotated first where the type and the calibration want it.
    void store_keys(int64_t layer, size_t index, bool first_position, const float* k);

    KvCacheShape shape_;
    KvTypes types_;
    int64_t n_blocks_, block_size_;
    int64_t slot_elements_;   // n_kv_heads * head_dim
    size_t k_slot_, v_slot_;  // bytes of one slot's row of keys, of values
    void (*write_k_)(const float*, void*, int64_t);
    void (*write_v_)(const float*, void*, int64_t);
    bool rotate_keys_, rotate_values_;
    KeyCalibration calibration_;  // empty: keys stored as they are
    // [layer][n_kv_heads * head_dim]: calibration_.first as keys are stored (rotated too), for
    // attention to add to position 0's scores (PagedKvRows::first_key).
    std::vector<float> stored_first_;
    std::vector<float> shifted_;  // one slot's keys, for copy_rotated
    // [layer][slot][n_kv_heads rows of head_dim]. Fresh anonymous pages, like the packed
    // weights (core/huge_pages.h): attention streams them, and a page is only touched (and
    // resident) once a token is written to it, so a long context costs memory as it fills.
    HugePageBytes keys_, values_;
};

}  // namespace kite
