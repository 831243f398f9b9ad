// Attention of many query tokens of one sequence (a prefill chunk) at once, tiled as
// FlashAttention tiles it: a job takes a tile of query rows (consecutive tokens times the
// query heads of one KV head) and walks the keys a block at a time. Each block's keys and
// values are read from the paged cache and converted to floats once for all of the tile's
// rows and stay in L1 while every row scores them; each row keeps its softmax online (running
// maximum and sum), so it never holds more than one block's scores. paged_attention sends its
// prefill runs here, where reading every key and value once per token made attention half of
// a 4096-token prefill.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "core/thread_pool.h"
#include "kernels/attention/attention.h"

namespace kite {

// Positions per key block: one row's scores of a block are four vectors of 16 floats.
constexpr int64_t kTileKeys = 64;

// One block of positions [start, start + kTileKeys), converted: keys transposed
// ([head_dim][kTileKeys], so one query value times one row of it is 16 products of 16
// positions) and values as rows ([kTileKeys][head_dim]). Positions no row of the tile reads
// are zeros.
struct KeyBlock {
    const float* kt;
    const float* v;
    int64_t start;
};

// A tile's rows and their running softmax: q is [rows][head_dim], already times the attention
// scale; row r reads positions first[r]..last[r]; o is [rows][head_dim], the weighted sum of
// values not yet divided by l; m the largest score so far and l the sum of exp(score - m).
struct TileRows {
    const float* q;
    int64_t rows, head_dim;
    const int64_t* first;
    const int64_t* last;
    float* o;
    float* m;
    float* l;
};

// For the SIMD tile kernels: bits[r] holds, one bit per position of the block, the positions
// row r0 + r of the tile reads, for g rows; returns their union.
inline uint64_t group_position_bits(const TileRows& rows, const KeyBlock& block, int64_t r0, int g,
                                    uint64_t* bits) {
    uint64_t any = 0;
    for (int r = 0; r < g; ++r) {
        const int64_t lo = std::max<int64_t>(rows.first[r0 + r] - block.start, 0);
        const int64_t hi = std::min<int64_t>(rows.last[r0 + r] - block.start, kTileKeys - 1);
        if (lo > hi) {
            bits[r] = 0;
            continue;
        }
        const uint64_t ones = hi - lo == 63 ? ~uint64_t{0} : (uint64_t{1} << (hi - lo + 1)) - 1;
        bits[r] = ones << lo;
        any |= bits[r];
    }
    return any;
}

// One key block's step of the online softmax, for every row of a tile.
using TileBlockFn = void (*)(const TileRows& rows, const KeyBlock& block);
// n values of a KV row of `type` as floats (quant/convert.h's dequantize_row, or faster).
using KvRowFn = void (*)(TensorType type, const void* src, float* dst, size_t n);

// Called once per tile, before its first block and on the thread that runs its blocks: a
// kernel that multiplies the queries in a form of its own converts them here.
using TilePrepareFn = void (*)(const TileRows& rows);

// A level's tile kernels.
struct TileKernels {
    TileBlockFn block = nullptr;
    KvRowFn row = nullptr;
    TilePrepareFn prepare = nullptr;  // none where null
};

// The scalar reference.
void tile_block_scalar(const TileRows& rows, const KeyBlock& block);
#if defined(__x86_64__)
// head_dim a multiple of 16.
void tile_block_avx512(const TileRows& rows, const KeyBlock& block);
// F16 rows converted 16 values an instruction; the other types through dequantize_row.
void kv_row_avx512(TensorType type, const void* src, float* dst, size_t n);
// The same with 256-bit registers: head_dim a multiple of 8, F16 rows 8 values at a time.
void tile_block_avx2(const TileRows& rows, const KeyBlock& block);
void kv_row_avx2(TensorType type, const void* src, float* dst, size_t n);
// Both products on AMX bf16 tiles, each factor as two bf16 parts (16 significant bits), sums
// in f32, 16 rows at a time: head_dim a multiple of 64, a CPU with AMX-BF16 and AVX512-BF16,
// and the process granted the tiles (the amx level). tile_prepare_amx first, for the tile.
void tile_prepare_amx(const TileRows& rows);
void tile_block_amx(const TileRows& rows, const KeyBlock& block);
#endif

// The SIMD tile kernels this CPU (under set_isa_cap) has for the head dimension; null
// functions where it has none (paged_attention then attends token by token, with its own SIMD
// kernels).
TileKernels choose_tile_kernels(int64_t head_dim);

// Tokens [0, n) that share one block table: out[t] = softmax(q[t] . K[first[t]..last[t]]
// * scale) V per head, K and V read as paged_attention reads them; q and out are
// [n][n_heads * head_dim], q already as the keys are stored (rotated, scaled: paged_attention).
// Every position from the smallest first to the largest last is one that some token reads.
void tiled_attention(const TileKernels& kernels, const PagedKvLayer& kv,
                     const AttentionShape& shape, const float* q, float* out, int64_t n,
                     const int64_t* first, const int64_t* last, const int32_t* block_table,
                     float scale, ThreadPool& pool);

}  // namespace kite
