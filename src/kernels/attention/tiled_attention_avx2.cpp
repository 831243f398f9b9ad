// The AVX2 tile kernel: tiled_attention_avx512.cpp's steps with 8-float registers, sized for
// 16 of them. A block's scores take 2 rows at a time, a half block (4 vectors) per pass, so
// each key vector is loaded once for both rows; the weighted values are added 32 columns at a
// time for up to 3 rows, each value vector loaded once for them.
#include "kernels/attention/tiled_attention.h"

#if defined(__x86_64__)
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/ops/exp_avx2.h"
#include "quant/convert.h"

namespace kite {

namespace {

#define KITE_AVX2 __attribute__((target("avx2,fma,f16c")))

constexpr int kGroupRows = 4;                 // rows whose scores are held at once
constexpr int kKeyVecs = int(kTileKeys / 8);  // vectors of one row's block of scores
constexpr int kHalfVecs = kKeyVecs / 2;
constexpr int kChunkVecs = 4;  // value columns per pass: 3 rows x 4 sums, a value, 3 weights
using Scores = float[kTileKeys];

// s[r] = q_r . K for R <= 2 rows (q's rows d apart) and the block's 64 positions.
template <int R>
KITE_AVX2 void score_rows(const float* q, int64_t d, const float* kt, Scores* s) {
    for (int half = 0; half < 2; ++half) {
        const float* k = kt + half * kHalfVecs * 8;
        __m256 acc[R][kHalfVecs];
        for (int r = 0; r < R; ++r)
            for (int c = 0; c < kHalfVecs; ++c) acc[r][c] = _mm256_setzero_ps();
        for (int64_t i = 0; i < d; ++i) {
            __m256 x[R];
            for (int r = 0; r < R; ++r) x[r] = _mm256_set1_ps(q[r * d + i]);
            for (int c = 0; c < kHalfVecs; ++c) {
                const __m256 kv = _mm256_loadu_ps(k + i * kTileKeys + 8 * c);
                for (int r = 0; r < R; ++r) acc[r][c] = _mm256_fmadd_ps(x[r], kv, acc[r][c]);
            }
        }
        for (int r = 0; r < R; ++r)
            for (int c = 0; c < kHalfVecs; ++c)
                _mm256_storeu_ps(s[r] + half * kHalfVecs * 8 + 8 * c, acc[r][c]);
    }
}

KITE_AVX2 float max8(__m256 v) {
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    return _mm_cvtss_f32(_mm_max_ss(m, _mm_movehdup_ps(m)));
}

KITE_AVX2 float sum8(__m256 v) {
    __m128 m = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_add_ps(m, _mm_movehl_ps(m, m));
    return _mm_cvtss_f32(_mm_add_ss(m, _mm_movehdup_ps(m)));
}

// The lanes of vector c whose positions are in `bits`, as an all-ones or zero mask per lane.
KITE_AVX2 __m256 lane_mask(uint64_t bits, int c) {
    const __m256i lane_bit = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
    const __m256i byte = _mm256_set1_epi32(static_cast<int>((bits >> (8 * c)) & 0xff));
    return _mm256_castsi256_ps(_mm256_cmpeq_epi32(_mm256_and_si256(byte, lane_bit), lane_bit));
}

// One row's softmax step, as softmax_step in tiled_attention_avx512.cpp: its scores s at the
// positions `bits` become exp(s - m') (the others zeros), m and l are updated, and the factor
// its earlier sums are scaled by is returned.
KITE_AVX2 float softmax_step(float* s, uint64_t bits, float& m, float& l) {
    if (bits == 0) {
        for (int c = 0; c < kKeyVecs; ++c) _mm256_storeu_ps(s + 8 * c, _mm256_setzero_ps());
        return 1.0f;
    }
    const __m256 minus_inf = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
    __m256 v[kKeyVecs], keep[kKeyVecs], top = minus_inf;
    for (int c = 0; c < kKeyVecs; ++c) {
        keep[c] = lane_mask(bits, c);
        v[c] = _mm256_blendv_ps(minus_inf, _mm256_loadu_ps(s + 8 * c), keep[c]);
        top = _mm256_max_ps(top, v[c]);
    }
    const float new_max = std::max(m, max8(top));
    // Past a row's first blocks its maximum seldom moves: exp(0) is 1 without the call.
    const float correction = new_max == m ? 1.0f : std::exp(m - new_max);
    __m256 sum = _mm256_setzero_ps();
    for (int c = 0; c < kKeyVecs; ++c) {
        // exp8 clamps its input, so positions left out are masked to zero after it.
        const __m256 w = _mm256_and_ps(keep[c], exp8(_mm256_sub_ps(v[c], _mm256_set1_ps(new_max))));
        _mm256_storeu_ps(s + 8 * c, w);
        sum = _mm256_add_ps(sum, w);
    }
    l = l * correction + sum8(sum);
    m = new_max;
    return correction;
}

// o_r = o_r * correction[r] + sum over positions j0..j1-1 of w[r][j] V[j], for R rows and NV
// vectors of columns (o and V rows d apart, both starting at the chunk's first column).
template <int R, int NV>
KITE_AVX2 void add_rows(const Scores* w, const float* correction, const float* v, int64_t d,
                        int64_t j0, int64_t j1, float* o) {
    __m256 acc[R][NV];
    for (int r = 0; r < R; ++r)
        for (int i = 0; i < NV; ++i)
            acc[r][i] =
                _mm256_mul_ps(_mm256_loadu_ps(o + r * d + 8 * i), _mm256_set1_ps(correction[r]));
    for (int64_t j = j0; j < j1; ++j) {
        __m256 wj[R];
        for (int r = 0; r < R; ++r) wj[r] = _mm256_set1_ps(w[r][j]);
        for (int i = 0; i < NV; ++i) {
            const __m256 x = _mm256_loadu_ps(v + j * d + 8 * i);
            for (int r = 0; r < R; ++r) acc[r][i] = _mm256_fmadd_ps(wj[r], x, acc[r][i]);
        }
    }
    for (int r = 0; r < R; ++r)
        for (int i = 0; i < NV; ++i) _mm256_storeu_ps(o + r * d + 8 * i, acc[r][i]);
}

// The values of a group of g rows over one chunk of NV vectors of columns: 3 rows at a time.
template <int NV>
KITE_AVX2 void add_chunk(const Scores* w, const float* correction, const float* v, int64_t d,
                         int64_t j0, int64_t j1, float* o, int g) {
    int r = 0;
    for (; r + 3 <= g; r += 3) add_rows<3, NV>(w + r, correction + r, v, d, j0, j1, o + r * d);
    for (; r < g; ++r) add_rows<1, NV>(w + r, correction + r, v, d, j0, j1, o + r * d);
}

using AddChunk = void (*)(const Scores*, const float*, const float*, int64_t, int64_t, int64_t,
                          float*, int);
constexpr AddChunk kAddChunk[kChunkVecs] = {add_chunk<1>, add_chunk<2>, add_chunk<3>, add_chunk<4>};

}  // namespace

KITE_AVX2 void tile_block_avx2(const TileRows& rows, const KeyBlock& block) {
    const int64_t d = rows.head_dim, vecs = d / 8;
    alignas(32) Scores s[kGroupRows];
    float correction[kGroupRows];
    uint64_t bits[kGroupRows];
    for (int64_t r0 = 0; r0 < rows.rows; r0 += kGroupRows) {
        const int g = static_cast<int>(std::min<int64_t>(kGroupRows, rows.rows - r0));
        // The positions some row of the group reads.
        const uint64_t any = group_position_bits(rows, block, r0, g, bits);
        if (any == 0) continue;
        const float* q = rows.q + r0 * d;
        for (int r = 0; r < g; r += 2) {
            if (r + 1 < g)
                score_rows<2>(q + r * d, d, block.kt, s + r);
            else
                score_rows<1>(q + r * d, d, block.kt, s + r);
        }
        for (int r = 0; r < g; ++r)
            correction[r] = softmax_step(s[r], bits[r], rows.m[r0 + r], rows.l[r0 + r]);
        const int64_t j0 = __builtin_ctzll(any), j1 = 64 - __builtin_clzll(any);
        for (int64_t i = 0; i < vecs; i += kChunkVecs) {
            const int64_t n = std::min<int64_t>(kChunkVecs, vecs - i);
            kAddChunk[n - 1](s, correction, block.v + 8 * i, d, j0, j1, rows.o + r0 * d + 8 * i, g);
        }
    }
}

KITE_AVX2 void kv_row_avx2(TensorType type, const void* src, float* dst, size_t n) {
    if (type != TensorType::F16 || n % 8 != 0) return dequantize_row(type, src, dst, n);
    const auto* halves = static_cast<const __m128i*>(src);
    for (size_t i = 0; i < n / 8; ++i)
        _mm256_storeu_ps(dst + 8 * i, _mm256_cvtph_ps(_mm_loadu_si128(halves + i)));
}

}  // namespace kite
#endif
