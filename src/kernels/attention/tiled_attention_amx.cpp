// The AMX tile kernel: a tile's rows 16 at a time, both products on bf16 tiles (tdpbf16ps),
// the online softmax between them on AVX-512 as in the AVX-512 kernel. On a long prompt's
// attention the f32 FMAs were two thirds of the time; the tiles do the same products several
// times faster, so what is left is mostly the softmax.
//
// bf16 keeps 8 significant bits. A score off by 2^-9 of |q||k| moves its weight by that much
// times the score, and scores reach tens: rounded queries and keys moved the F32 file's
// perplexity by 0.06% from llama.cpp's (0.001% with f32 products). So every factor is two bf16
// parts, x = hi + lo (an f16 key or value exactly, an f32 query or weight to 16 bits), and each
// product is hi . hi + lo . hi + hi . lo (0.004%).
//
// Per block the keys and values are split once for all of the tile's rows, in the order a
// tile's second operand takes them (B[k / 2][n][2]: products of pairs along k):
//   keys    [d / 2][kTileKeys] pairs of consecutive dimensions of one position,
//   values  [kTileKeys / 2][d] pairs of one dimension at consecutive positions;
// the queries once per tile (tile_prepare_amx) and the softmax weights per block, as rows (the
// first operand):
//   scores  C[16 rows][16 positions] += q[16][32 dimensions] . keys
//   sums    C[16 rows][16 dimensions] += w[16][32 positions] . values
// in the full configuration of amx_tiles.h: sums in tmm0-3, the first operand's parts in
// tmm4/tmm5, the second's in tmm6/tmm7.
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include "kernels/attention/tiled_attention.h"

#if defined(__x86_64__)
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "kernels/attention/tile_softmax_avx512.h"
#include "kernels/cpu/amx_tiles.h"
#include "kernels/cpu/bf16_split.h"

namespace kite {

namespace {

#define KITE_AMX_BF16                                                             \
    __attribute__((                                                               \
        target("amx-tile,amx-bf16,avx512f,avx512dq,avx512bw,avx512vl,avx512bf16," \
               "f16c,fma")))

constexpr int kGroupRows = 16;  // a tile's rows
constexpr int kDepth = 32;      // bf16 values along k per tile product (16 x 64 bytes)
constexpr int kTileCols = 16;   // f32 columns of a sum tile
constexpr int kSumTiles = 4;    // tmm0-3: 64 columns at a time

// One block in the tiles' order and one group's weights and scores, per thread, with the
// tile's queries; parts [0] hi, [1] lo.
struct alignas(64) AmxBlock {
    uint32_t keys[2][kMaxHeadDim / 2][kTileKeys];
    uint32_t values[2][kTileKeys / 2][kMaxHeadDim];
    uint16_t w[2][kGroupRows][kTileKeys];
    float s[kGroupRows][kTileKeys];
    float o[kGroupRows * kMaxHeadDim];  // a partial group's sums, rows d apart
    std::vector<uint16_t> q[2];         // the tile's rows, d apart, zeros to a whole group
};

// On the heap, allocated at a thread's first tile: a static thread_local of this size would
// reserve it in every thread of the process.
AmxBlock& amx_block() {
    thread_local std::unique_ptr<AmxBlock> b = std::make_unique<AmxBlock>();
    return *b;
}

// n values (a multiple of 16) of two rows as bf16 pairs, and their residues' pairs.
KITE_AMX_BF16 void interleave_bf16(const float* even, const float* odd, uint32_t* hi, uint32_t* lo,
                                   int64_t n) {
    for (int64_t i = 0; i < n; i += 16) {
        const __m512 e = _mm512_loadu_ps(even + i), o = _mm512_loadu_ps(odd + i);
        _mm512_storeu_si512(hi + i, interleaved_bf16(e, o));
        _mm512_storeu_si512(lo + i, interleaved_bf16(bf16_residue(e), bf16_residue(o)));
    }
}

// n floats (a multiple of 32) to bf16, hi and lo parts.
KITE_AMX_BF16 void split_bf16(const float* x, uint16_t* hi, uint16_t* lo, int64_t n) {
    for (int64_t i = 0; i < n; i += 32) {
        const __m512 a = _mm512_loadu_ps(x + i), b = _mm512_loadu_ps(x + i + 16);
        _mm512_storeu_si512(hi + i, (__m512i)_mm512_cvtne2ps_pbh(b, a));
        _mm512_storeu_si512(lo + i, (__m512i)_mm512_cvtne2ps_pbh(bf16_residue(b), bf16_residue(a)));
    }
}

KITE_AMX_BF16 void pack_block(const KeyBlock& block, int64_t d, AmxBlock& b) {
    for (int64_t k = 0; k < d / 2; ++k)
        interleave_bf16(block.kt + 2 * k * kTileKeys, block.kt + (2 * k + 1) * kTileKeys,
                        b.keys[0][k], b.keys[1][k], kTileKeys);
    for (int64_t p = 0; p < kTileKeys / 2; ++p)
        interleave_bf16(block.v + 2 * p * d, block.v + (2 * p + 1) * d, b.values[0][p],
                        b.values[1][p], d);
}

// Sum tile C += A . B over one depth, A's parts already in tmm4/tmm5 and B's at hi, lo (rows
// `stride` bytes apart). A macro: GCC's tile intrinsics paste the tile number into their asm,
// so it must be a literal, not a template argument.
#define KITE_SPLIT_PRODUCT(C, hi, lo, stride) \
    do {                                      \
        _tile_loadd(6, hi, stride);           \
        _tile_loadd(7, lo, stride);           \
        _tile_dpbf16ps(C, 4, 6);              \
        _tile_dpbf16ps(C, 5, 6);              \
        _tile_dpbf16ps(C, 4, 7);              \
    } while (0)

// The four sum tiles' products for one depth: B's columns 16 apart.
#define KITE_SPLIT_PRODUCTS(hi, lo, stride)                                        \
    do {                                                                           \
        KITE_SPLIT_PRODUCT(0, hi, lo, stride);                                     \
        KITE_SPLIT_PRODUCT(1, (hi) + kTileCols, (lo) + kTileCols, stride);         \
        KITE_SPLIT_PRODUCT(2, (hi) + 2 * kTileCols, (lo) + 2 * kTileCols, stride); \
        KITE_SPLIT_PRODUCT(3, (hi) + 3 * kTileCols, (lo) + 3 * kTileCols, stride); \
    } while (0)

// The first operand's parts for one depth: 16 rows from a[0], a[1], `stride` bytes apart.
KITE_AMX_BF16 inline void load_first(const uint16_t* const (&a)[2], int64_t stride) {
    _tile_loadd(4, a[0], stride);
    _tile_loadd(5, a[1], stride);
}

// s[r][j] = q_r . key_j for the group's 16 rows (q: their parts, rows d apart) and the block's
// 64 positions.
KITE_AMX_BF16 void score_group(AmxBlock& b, const uint16_t* const (&q)[2], int64_t d) {
    constexpr int64_t key_stride = sizeof(b.keys[0][0]);
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    for (int64_t k = 0; k < d; k += kDepth) {
        load_first({q[0] + k, q[1] + k}, d * sizeof(uint16_t));
        KITE_SPLIT_PRODUCTS(b.keys[0][k / 2], b.keys[1][k / 2], key_stride);
    }
    _tile_stored(0, b.s[0], sizeof(b.s[0]));
    _tile_stored(1, b.s[0] + kTileCols, sizeof(b.s[0]));
    _tile_stored(2, b.s[0] + 2 * kTileCols, sizeof(b.s[0]));
    _tile_stored(3, b.s[0] + 3 * kTileCols, sizeof(b.s[0]));
}

// o[r] += w[r] . values over positions [j0, j1) (rounded out to whole depths), for the 16 rows
// of o (d floats apart; d a multiple of 64).
KITE_AMX_BF16 void add_group(AmxBlock& b, int64_t d, int64_t j0, int64_t j1, float* o) {
    const int64_t o_stride = d * sizeof(float);
    constexpr int64_t value_stride = sizeof(b.values[0][0]);
    for (int64_t c = 0; c < d; c += kSumTiles * kTileCols) {
        _tile_loadd(0, o + c, o_stride);
        _tile_loadd(1, o + c + kTileCols, o_stride);
        _tile_loadd(2, o + c + 2 * kTileCols, o_stride);
        _tile_loadd(3, o + c + 3 * kTileCols, o_stride);
        for (int64_t k = j0 / kDepth * kDepth; k < j1; k += kDepth) {
            load_first({b.w[0][0] + k, b.w[1][0] + k}, sizeof(b.w[0][0]));
            KITE_SPLIT_PRODUCTS(b.values[0][k / 2] + c, b.values[1][k / 2] + c, value_stride);
        }
        _tile_stored(0, o + c, o_stride);
        _tile_stored(1, o + c + kTileCols, o_stride);
        _tile_stored(2, o + c + 2 * kTileCols, o_stride);
        _tile_stored(3, o + c + 3 * kTileCols, o_stride);
    }
}

// Rows r0 .. r0 + g - 1 of the tile (g <= 16), whose positions in the block are bits[].
KITE_AMX_BF16 void attend_group(const TileRows& rows, AmxBlock& b, int64_t r0, int g,
                                const uint64_t* bits, uint64_t any) {
    const int64_t d = rows.head_dim;
    score_group(b, {b.q[0].data() + r0 * d, b.q[1].data() + r0 * d}, d);

    // A whole group's sums are the tile's own rows; a partial group's are copied out and back,
    // so that the 16-row tile loads stay inside the tile's memory.
    float* o = rows.o + r0 * d;
    if (g < kGroupRows) {
        std::memcpy(b.o, o, g * d * sizeof(float));
        std::memset(b.o + g * d, 0, (kGroupRows - g) * d * sizeof(float));
        o = b.o;
    }
    for (int r = 0; r < kGroupRows; ++r) {
        if (r >= g) {
            for (auto& part : b.w) std::memset(part[r], 0, sizeof(part[r]));
            continue;
        }
        const float correction = softmax_step(b.s[r], bits[r], rows.m[r0 + r], rows.l[r0 + r]);
        split_bf16(b.s[r], b.w[0][r], b.w[1][r], kTileKeys);
        if (correction != 1.0f)
            for (int64_t i = 0; i < d; i += 16)
                _mm512_storeu_ps(o + r * d + i, _mm512_mul_ps(_mm512_loadu_ps(o + r * d + i),
                                                              _mm512_set1_ps(correction)));
    }
    add_group(b, d, __builtin_ctzll(any), 64 - __builtin_clzll(any), o);
    if (g < kGroupRows) std::memcpy(rows.o + r0 * d, b.o, g * d * sizeof(float));
}

}  // namespace

KITE_AMX_BF16 void tile_prepare_amx(const TileRows& rows) {
    AmxBlock& b = amx_block();
    const int64_t d = rows.head_dim;
    const int64_t padded = (rows.rows + kGroupRows - 1) / kGroupRows * kGroupRows * d;
    for (std::vector<uint16_t>& part : b.q) part.assign(static_cast<size_t>(padded), 0);
    for (int64_t r = 0; r < rows.rows; ++r)
        split_bf16(rows.q + r * d, b.q[0].data() + r * d, b.q[1].data() + r * d, d);
}

KITE_AMX_BF16 void tile_block_amx(const TileRows& rows, const KeyBlock& block) {
    configure_full_amx_tiles();  // amx_tiles.h
    AmxBlock& b = amx_block();
    pack_block(block, rows.head_dim, b);
    uint64_t bits[kGroupRows];
    for (int64_t r0 = 0; r0 < rows.rows; r0 += kGroupRows) {
        const int g = static_cast<int>(std::min<int64_t>(kGroupRows, rows.rows - r0));
        if (const uint64_t any = group_position_bits(rows, block, r0, g, bits); any != 0)
            attend_group(rows, b, r0, g, bits, any);
    }
}

}  // namespace kite
#endif
