// Bidirectional attention over a ragged batch held in memory, as an encoder needs it: no KV
// cache and no causal mask, each token attending every token of its own input.
#pragma once

#include <cstdint>

#include "core/thread_pool.h"
#include "kernels/attention/attention.h"

namespace kite {

// The batch's inputs, one after another: input i is tokens [starts[i], starts[i + 1]).
struct Spans {
    const int64_t* starts = nullptr;
    int64_t count = 0;  // inputs; starts holds count + 1 entries
};

// For each token t of input i and each head: out[t] = softmax(q[t] . K[starts[i] ..
// starts[i + 1]) * scale) V. q and out are [tokens][n_heads * head_dim]; k and v are
// [tokens][n_kv_heads * head_dim], floats. shape.window must be 0.
void span_attention(const AttentionShape& shape, const float* q, const float* k, const float* v,
                    float* out, Spans spans, float scale, ThreadPool& pool);

}  // namespace kite
