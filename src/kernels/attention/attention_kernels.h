// The per-instruction-set kernels behind paged_attention, which chooses one per call.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>

#include "kernels/attention/attention.h"
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

// 32 values of a query as int16 with one scale, x = d * q: what the kernels' integer scores
// against Q8_0 and Q4_0 keys multiply. All blocks of a head share its scale, so the kernels
// apply it once per score, not per block: 16 bits still round the query by at most 1/65534 of
// the head's largest value, far below the keys' own rounding (llama.cpp's 8-bit Q8_0 queries
// round by 1/254 of each block's). Per head, two vpmaddwd and an add give a block's 32
// products, where 8-bit queries need a sign, vpmaddubsw and vpmaddwd.
struct QueryBlock {
    float d;
    int16_t q[kQK];
};

// n values (a multiple of head_dim, itself of kQK) to n / kQK blocks, one scale per head_dim
// values; and back.
void quantize_query(const float* x, QueryBlock* y, int64_t n, int64_t head_dim);
void dequantize_query(const QueryBlock* x, float* y, int64_t n);

// Whether attention scores keys of this type against QueryBlocks (AttendHeadsFn).
inline bool scores_in_integers(TensorType key_type) {
    return key_type == TensorType::Q8_0 || key_type == TensorType::Q4_0;
}

// Attention of n_q <= kMaxGroup query heads that share KV head kv_head, over positions
// first..last: q and out are their rows, head_dim apart, as paged_attention defines them.
// Where scores_in_integers(key type), qb holds the same rows as QueryBlocks and the scores
// are theirs, on every instruction set (null for other key types): integer products of the
// query's and the key's values, times both scales. With `stats`, head h's softmax is also reported
// for merging with other position ranges: stats[2h] the largest scaled score, stats[2h + 1] the sum
// of exp(score - that maximum).
using AttendHeadsFn = void (*)(const PagedKvLayer& kv, int64_t head_dim, int64_t kv_head, int n_q,
                               const float* q, const QueryBlock* qb, float* out, int64_t first,
                               int64_t last, const int32_t* block_table, float scale, float* stats);

// The fastest kernel this CPU (under set_isa_cap) has for the head dimension and block size;
// the scalar reference where no SIMD kernel fits.
AttendHeadsFn choose_attend_heads(int64_t head_dim, int64_t block_size);

// The SIMD kernels' share of PagedKvRows::first_key, for a block of positions starting at a
// sequence's position 0: adds scale * q_h . first_key to the score of position 0 of each of
// the n_q heads, scores[h * stride] (with qb's queries where qb is given).
void add_first_key_scores(const PagedKvRows& k, int64_t kv_head, int64_t head_dim, int n_q,
                          const float* q, const QueryBlock* qb, float scale, float* scores,
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
                         const float* q, const QueryBlock* qb, float* out, int64_t first,
                         int64_t last, const int32_t* block_table, float scale, float* stats);

// head_dim a multiple of 8, block_size <= kMaxKernelBlock.
void attend_heads_avx2(const PagedKvLayer& kv, int64_t head_dim, int64_t kv_head, int n_q,
                       const float* q, const QueryBlock* qb, float* out, int64_t first,
                       int64_t last, const int32_t* block_table, float scale, float* stats);
#endif

}  // namespace kite
