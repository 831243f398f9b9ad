// The AVX-512 tile kernel: a block's scores for 4 rows at a time, each key vector loaded once
// for the 4 rows, with no sums across lanes (the keys are transposed); then each row's online
// softmax step on its 64 scores, and the weighted values added to the rows' sums 64 columns at
// a time, each value vector loaded once for the 4 rows.
// GCC 12's AVX-512 headers trip -Wuninitialized where inlined (GCC bug 105593).
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include "kernels/attention/tiled_attention.h"

#if defined(__x86_64__)
#include <immintrin.h>

#include <algorithm>

#include "kernels/attention/tile_softmax_avx512.h"
#include "quant/convert.h"

namespace kite {

namespace {

#define KITE_AVX512 __attribute__((target("avx512f,avx512dq,avx512bw,avx512vl,f16c,fma")))

constexpr int kScoreRows = 4;                  // 16 score sums in registers
constexpr int kKeyVecs = int(kTileKeys / 16);  // vectors of one row's block of scores
constexpr int kChunkVecs = 4;  // value columns per pass: 4 rows x 4 sums, 4 values, a weight
using Scores = float[kTileKeys];

// s[r] = q_r . K for R rows (q's rows head_dim apart) and the block's 64 positions.
template <int R>
KITE_AVX512 void score_rows(const float* q, int64_t d, const float* kt, Scores* s) {
    __m512 acc[R][kKeyVecs];
    for (int r = 0; r < R; ++r)
        for (int c = 0; c < kKeyVecs; ++c) acc[r][c] = _mm512_setzero_ps();
    for (int64_t i = 0; i < d; ++i) {
        __m512 k[kKeyVecs];
        for (int c = 0; c < kKeyVecs; ++c) k[c] = _mm512_loadu_ps(kt + i * kTileKeys + 16 * c);
        for (int r = 0; r < R; ++r) {
            const __m512 x = _mm512_set1_ps(q[r * d + i]);
            for (int c = 0; c < kKeyVecs; ++c) acc[r][c] = _mm512_fmadd_ps(x, k[c], acc[r][c]);
        }
    }
    for (int r = 0; r < R; ++r)
        for (int c = 0; c < kKeyVecs; ++c) _mm512_storeu_ps(s[r] + 16 * c, acc[r][c]);
}

using ScoreRows = void (*)(const float*, int64_t, const float*, Scores*);
constexpr ScoreRows kScoreRowsFns[kScoreRows] = {score_rows<1>, score_rows<2>, score_rows<3>,
                                                 score_rows<4>};

// o_r = o_r * correction[r] + sum over positions j0..j1-1 of w[r][j] V[j], for R rows and NV
// vectors of columns (o and V rows d apart, both from the chunk's first column): the sums
// stay in registers for the whole block.
template <int R, int NV>
KITE_AVX512 void add_rows(const Scores* w, const float* correction, const float* v, int64_t d,
                          int64_t j0, int64_t j1, float* o) {
    __m512 acc[R][NV];
    for (int r = 0; r < R; ++r)
        for (int i = 0; i < NV; ++i)
            acc[r][i] =
                _mm512_mul_ps(_mm512_loadu_ps(o + r * d + 16 * i), _mm512_set1_ps(correction[r]));
    for (int64_t j = j0; j < j1; ++j) {
        __m512 x[NV];
        for (int i = 0; i < NV; ++i) x[i] = _mm512_loadu_ps(v + j * d + 16 * i);
        for (int r = 0; r < R; ++r) {
            const __m512 wj = _mm512_set1_ps(w[r][j]);
            for (int i = 0; i < NV; ++i) acc[r][i] = _mm512_fmadd_ps(wj, x[i], acc[r][i]);
        }
    }
    for (int r = 0; r < R; ++r)
        for (int i = 0; i < NV; ++i) _mm512_storeu_ps(o + r * d + 16 * i, acc[r][i]);
}

// The values of a group of g <= kScoreRows rows over one chunk of NV <= kChunkVecs vectors of
// columns, 4 rows at a time: each value vector is loaded once for the group. (A whole row of
// a 256-wide head, one row a pass, read its block's 64 KiB of values once per row, from L2.)
template <int NV>
KITE_AVX512 void add_chunk(const Scores* w, const float* correction, const float* v, int64_t d,
                           int64_t j0, int64_t j1, float* o, int g) {
    if (g == kScoreRows) return add_rows<kScoreRows, NV>(w, correction, v, d, j0, j1, o);
    for (int r = 0; r < g; ++r) add_rows<1, NV>(w + r, correction + r, v, d, j0, j1, o + r * d);
}

using AddChunk = void (*)(const Scores*, const float*, const float*, int64_t, int64_t, int64_t,
                          float*, int);
constexpr AddChunk kAddChunk[kChunkVecs] = {add_chunk<1>, add_chunk<2>, add_chunk<3>, add_chunk<4>};

}  // namespace

KITE_AVX512 void tile_block_avx512(const TileRows& rows, const KeyBlock& block) {
    const int64_t d = rows.head_dim, vecs = d / 16;
    alignas(64) Scores s[kScoreRows];
    float correction[kScoreRows];
    uint64_t bits[kScoreRows];
    for (int64_t r0 = 0; r0 < rows.rows; r0 += kScoreRows) {
        const int g = static_cast<int>(std::min<int64_t>(kScoreRows, rows.rows - r0));
        // The positions some row of the group reads.
        const uint64_t any = group_position_bits(rows, block, r0, g, bits);
        if (any == 0) continue;
        kScoreRowsFns[g - 1](rows.q + r0 * d, d, block.kt, s);
        for (int r = 0; r < g; ++r)
            correction[r] = softmax_step(s[r], bits[r], rows.m[r0 + r], rows.l[r0 + r]);
        const int64_t j0 = __builtin_ctzll(any), j1 = 64 - __builtin_clzll(any);
        for (int64_t i = 0; i < vecs; i += kChunkVecs) {
            const int64_t n = std::min<int64_t>(kChunkVecs, vecs - i);
            kAddChunk[n - 1](s, correction, block.v + 16 * i, d, j0, j1, rows.o + r0 * d + 16 * i,
                             g);
        }
    }
}

KITE_AVX512 void kv_row_avx512(TensorType type, const void* src, float* dst, size_t n) {
    if (type != TensorType::F16 || n % 16 != 0) return dequantize_row(type, src, dst, n);
    const auto* halves = static_cast<const __m256i*>(src);
    for (size_t i = 0; i < n / 16; ++i)
        _mm512_storeu_ps(dst + 16 * i, _mm512_cvtph_ps(_mm256_loadu_si256(halves + i)));
}

}  // namespace kite
#endif
