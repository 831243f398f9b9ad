// Causal attention over a paged KV cache: each query token reads its own sequence's keys
// and values through the sequence's block table, with a one-pass (online) softmax.
#pragma once

#include <cstdint>

#include "core/thread_pool.h"
#include "gguf/tensor_type.h"

namespace kite {

// One layer's keys (or values): the row of KV head h in slot s starts at
// data + s * slot_bytes + h * head_bytes and holds head_dim values of `type`: F32, F16, or
// ggml's Q8_0 / Q4_0 blocks of 32 values along the head dimension (quant/blocks.h).
struct PagedKvRows {
    const uint8_t* data = nullptr;
    TensorType type = TensorType::F32;
    int64_t slot_bytes = 0;
    int64_t head_bytes = 0;
    // Rows stored rotated by hadamard32_blocks (quant/hadamard.h). Keys: attention rotates the
    // queries the same way, which leaves every q . k as it was. Values: attention rotates its
    // output back (the rotation is linear and its own inverse).
    bool rotated = false;
    // Keys stored centred and scaled per channel (kv/key_calibration.h): attention multiplies
    // each query by this (one float per channel of the row of n_kv_heads * head_dim) before
    // any rotation. Null: keys stored as they are.
    const float* query_scale = nullptr;
    // Keys whose sequence position 0 is stored as its difference from a calibrated first key
    // (kv/key_calibration.h): that key, as keys are stored (one float per channel of the row of
    // n_kv_heads * head_dim), which attention adds to position 0's key. Null: none.
    const float* first_key = nullptr;

    const uint8_t* row(int64_t slot, int64_t kv_head) const {
        return data + slot * slot_bytes + kv_head * head_bytes;
    }
};

// Keys and values may have different types.
struct PagedKvLayer {
    PagedKvRows k, v;
    int64_t block_size = 0;
};

struct AttentionShape {
    int64_t n_heads = 0;
    int64_t n_kv_heads = 0;
    int64_t head_dim = 0;  // at most kMaxHeadDim
    // A sliding window: each query reads only the last `window` positions up to its own (its
    // own included), as llama.cpp masks them. 0: all positions.
    int64_t window = 0;
};
constexpr int64_t kMaxHeadDim = 256;

// For each token t: out[t] = softmax(q[t] . K[first..positions[t]] * scale) V, per head (first
// is firsts[t], or 0 when firsts is null, or the start of the sliding window if that is
// later), where K/V position p lives in slot
// block_tables[t][p / block_size] * block_size + p % block_size.
// q and out are [n_tokens][n_heads * head_dim].
void paged_attention(const PagedKvLayer& kv, const AttentionShape& shape, const float* q,
                     float* out, int64_t n_tokens, const int64_t* positions, const int64_t* firsts,
                     const int32_t* const* block_tables, float scale, ThreadPool& pool);

}  // namespace kite
