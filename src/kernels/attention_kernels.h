// The per-instruction-set kernels behind paged_attention, which chooses one per call.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>

#include "kernels/attention.h"
#include "quant/blocks.h"

namespace kite {

// The most query heads one call attends together (grouped-query attention: heads sharing a
// KV head load and convert each key and value row once for all of them).
constexpr int kMaxGroup = 8;

// The SIMD kernels hold one KV block's scores per head, so they take blocks up to this size.
constexpr int64_t kMaxKernelBlock = 64;

// The KV element types the kernels read, in the order of each kernel's table of loaders.
constexpr TensorType kKvElementTypes[] = {TensorType::F32, TensorType::F16, TensorType::Q8_0,
                                          TensorType::Q4_0};
constexpr size_t kKvElementTypeCount = std::size(kKvElementTypes);

// A type's position in kKvElementTypes; kite::Error for a type the kernels do not read.
size_t kv_element_index(TensorType type);

// Attention of n_q <= kMaxGroup query heads that share KV head kv_head, over positions
// first..last: q and out are their rows, head_dim apart, as paged_attention defines them.
// Against Q8_0 keys, q8 holds the same rows as Q8_0 blocks (quantize_row_q8_0) and the scores
// are theirs: integer products of the query's and the key's bytes, as llama.cpp computes them,
// and on every instruction set the same query (null for other key types). With `stats`, head h's
// softmax is also reported for merging with other position ranges: stats[2h] the largest scaled
// score, stats[2h + 1] the sum of exp(score - that maximum).
using AttendHeadsFn = void (*)(const PagedKvLayer& kv, int64_t head_dim, int64_t kv_head, int n_q,
                               const float* q, const BlockQ8_0* q8, float* out, int64_t first,
                               int64_t last, const int32_t* block_table, float scale, float* stats);

// The SIMD kernels' share of PagedKvRows::first_key, for a block of positions starting at a
// sequence's position 0: adds scale * q_h . first_key to the score of position 0 of each of
// the n_q heads, scores[h * stride] (with q8's queries where q8 is given).
void add_first_key_scores(const PagedKvRows& k, int64_t kv_head, int64_t head_dim, int n_q,
                          const float* q, const BlockQ8_0* q8, float scale, float* scores,
                          int64_t stride);

// Asks the caches for KV head kv_head's key and value rows of the block holding position
// `start` (up to `last`), if start <= last, while the kernel works on the block before: one
// head's rows lie a slot's row apart, a stride the hardware prefetchers follow too late for
// a block of a few rows. Out of line: inlined into the kernels it slowed f16 decode at 4k
// by about a third (alternated A/B, 3 rounds).
void prefetch_block(const PagedKvLayer& kv, int64_t kv_head, const int32_t* block_table,
                    int64_t start, int64_t last);

#if defined(__x86_64__)
// head_dim a multiple of 16, block_size <= kMaxKernelBlock.
void attend_heads_avx512(const PagedKvLayer& kv, int64_t head_dim, int64_t kv_head, int n_q,
                         const float* q, const BlockQ8_0* q8, float* out, int64_t first,
                         int64_t last, const int32_t* block_table, float scale, float* stats);

// head_dim a multiple of 8, block_size <= kMaxKernelBlock.
void attend_heads_avx2(const PagedKvLayer& kv, int64_t head_dim, int64_t kv_head, int n_q,
                       const float* q, const BlockQ8_0* q8, float* out, int64_t first, int64_t last,
                       const int32_t* block_table, float scale, float* stats);
#endif

}  // namespace kite
