// The AVX-512 paged-attention kernel: 16 floats per register, 32 registers.
// GCC 12's AVX-512 headers trip -Wuninitialized where inlined (GCC bug 105593).
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include "kernels/attention/attention_kernels.h"

#if defined(__x86_64__)
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>

#include "kernels/attention/key_bytes.h"
#include "kernels/ops/exp_avx512.h"
#include "quant/blocks.h"

namespace kite {

namespace {

#define KITE_AVX512 __attribute__((target("avx512f,avx512dq,avx512bw,avx512vl,f16c,fma")))

// Up to kMaxHeadDim / 16 vectors of 16 floats, or kMaxHeadDim / 32 quantized blocks.
constexpr int kMaxVecs = kMaxHeadDim / 16;
constexpr int kMaxBlocks = kMaxHeadDim / kQK;

// Loaders: values 16 i .. 16 i + 15 of one head's row, as floats, one function per KV type.
// The block formats are converted in registers: no dequantized copy of the cache exists.
KITE_AVX512 inline __m512 load16_f32(const uint8_t* row, int i) {
    return _mm512_loadu_ps(reinterpret_cast<const float*>(row) + 16 * i);
}

KITE_AVX512 inline __m512 load16_f16(const uint8_t* row, int i) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(row) + i));
}

// A Q8_0 block is two loads: values d * q for 16 of its 32 signed bytes each.
KITE_AVX512 inline __m512 load16_q8_0(const uint8_t* row, int i) {
    const auto* b = reinterpret_cast<const BlockQ8_0*>(row) + i / 2;
    const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b->qs + 16 * (i % 2)));
    return _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q)),
                         _mm512_set1_ps(_cvtsh_ss(b->d)));
}

// Q4_0 byte j holds value j in its low nibble and value j + 16 in its high one, so the first
// 16 values are the low nibbles of the block's 16 bytes and the next 16 the high ones.
KITE_AVX512 inline __m512 load16_q4_0(const uint8_t* row, int i) {
    const auto* b = reinterpret_cast<const BlockQ4_0*>(row) + i / 2;
    __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b->qs));
    if (i % 2) q = _mm_srli_epi16(q, 4);
    q = _mm_and_si128(q, _mm_set1_epi8(0x0f));
    const __m512i centred = _mm512_sub_epi32(_mm512_cvtepu8_epi32(q), _mm512_set1_epi32(8));
    return _mm512_mul_ps(_mm512_cvtepi32_ps(centred), _mm512_set1_ps(_cvtsh_ss(b->d)));
}

using Load16 = __m512 (*)(const uint8_t* row, int i);

// Lane j of the result: the sum of d[j]'s 16 lanes. Each level of shuffles and adds halves
// the partial sums per position and doubles the positions per register (16 -> 8 -> 4 -> 2
// -> 1): 31 shuffles and 15 adds for 16 scores, where 16 horizontal reductions take about
// 8 operations each.
KITE_AVX512 inline __m512 sum_lanes16(const __m512 d[16]) {
    __m512 a[8], b[4], c[2];
    for (int i = 0; i < 8; ++i)  // a[i]: 8 partials of d[2i], then 8 of d[2i+1]
        a[i] = _mm512_add_ps(_mm512_shuffle_f32x4(d[2 * i], d[2 * i + 1], 0x44),
                             _mm512_shuffle_f32x4(d[2 * i], d[2 * i + 1], 0xee));
    for (int i = 0; i < 4; ++i)  // b[i]: 128-bit lane m holds 4 partials of d[4i + m]
        b[i] = _mm512_add_ps(_mm512_shuffle_f32x4(a[2 * i], a[2 * i + 1], 0x88),
                             _mm512_shuffle_f32x4(a[2 * i], a[2 * i + 1], 0xdd));
    for (int i = 0; i < 2; ++i)  // c[i]: lane m holds 2 partials of d[8i + m], d[8i + 4 + m]
        c[i] = _mm512_add_ps(_mm512_shuffle_ps(b[2 * i], b[2 * i + 1], 0x44),
                             _mm512_shuffle_ps(b[2 * i], b[2 * i + 1], 0xee));
    // Element 4m + k holds the sum of d[m + 4k]; the index transposes that back.
    const __m512 e =
        _mm512_add_ps(_mm512_shuffle_ps(c[0], c[1], 0x88), _mm512_shuffle_ps(c[0], c[1], 0xdd));
    const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    return _mm512_permutexvar_ps(order, e);
}

// Heads per pass over a block's values: 3 heads of 8 vectors fill 24 registers.
constexpr int kValueHeads = 3;

// acc[h] += sum over the block's positions j of w[h][j] * V[j], for NQ heads of NV vectors
// of the NV-vector rows from slot `base` on: sizes known at compile time keep the sums in
// registers for the whole block.
template <Load16 Load, int NV, int NQ>
KITE_AVX512 void add_values_fixed(const PagedKvRows& v, int64_t kv_head, int64_t base, int64_t n,
                                  const float (*w)[kMaxKernelBlock], __m512 (*acc)[kMaxVecs]) {
    __m512 sum[NQ][NV];
    for (int h = 0; h < NQ; ++h)
        for (int i = 0; i < NV; ++i) sum[h][i] = acc[h][i];
    for (int64_t j = 0; j < n; ++j) {
        const uint8_t* src = v.row(base + j, kv_head);
        __m512 row[NV];
        for (int i = 0; i < NV; ++i) row[i] = Load(src, i);
        for (int h = 0; h < NQ; ++h) {
            const __m512 wv = _mm512_set1_ps(w[h][j]);
            for (int i = 0; i < NV; ++i) sum[h][i] = _mm512_fmadd_ps(wv, row[i], sum[h][i]);
        }
    }
    for (int h = 0; h < NQ; ++h)
        for (int i = 0; i < NV; ++i) acc[h][i] = sum[h][i];
}

// The same for any n_vecs and n_q <= kValueHeads: head_dim 64 and 128 take the fixed-size
// kernels, other sizes a loop whose sums live in memory.
template <Load16 Load>
KITE_AVX512 void add_values(const PagedKvRows& v, int64_t kv_head, int64_t base, int64_t n,
                            int n_vecs, int n_q, const float (*w)[kMaxKernelBlock],
                            __m512 (*acc)[kMaxVecs]) {
    using Fn = void (*)(const PagedKvRows&, int64_t, int64_t, int64_t,
                        const float(*)[kMaxKernelBlock], __m512(*)[kMaxVecs]);
    static constexpr Fn kFixed[2][kValueHeads] = {
        {add_values_fixed<Load, 4, 1>, add_values_fixed<Load, 4, 2>, add_values_fixed<Load, 4, 3>},
        {add_values_fixed<Load, 8, 1>, add_values_fixed<Load, 8, 2>, add_values_fixed<Load, 8, 3>}};
    if (n_vecs == 4 || n_vecs == 8) return kFixed[n_vecs / 8][n_q - 1](v, kv_head, base, n, w, acc);
    for (int64_t j = 0; j < n; ++j) {
        const uint8_t* src = v.row(base + j, kv_head);
        __m512 row[kMaxVecs];
        for (int i = 0; i < n_vecs; ++i) row[i] = Load(src, i);
        for (int h = 0; h < n_q; ++h) {
            const __m512 wv = _mm512_set1_ps(w[h][j]);
            for (int i = 0; i < n_vecs; ++i) acc[h][i] = _mm512_fmadd_ps(wv, row[i], acc[h][i]);
        }
    }
}

// Each head's query as the score functions read it: times the attention scale, and where
// the keys are scored in integers as its QueryBlocks (AttendHeadsFn).
struct Queries {
    __m512 v[kMaxGroup][kMaxVecs];  // float keys
    // Integer scores: each block's 32 values, and the head's scale times the attention scale.
    __m512i words[kMaxGroup][kMaxBlocks];
    __m512 d[kMaxGroup];
};

KITE_AVX512 void prepare_queries(const float* q, const QueryBlock* qb, int n_q, int64_t head_dim,
                                 float scale, Queries& qs) {
    for (int h = 0; h < n_q; ++h) {
        if (qb == nullptr) {
            for (int i = 0; i < head_dim / 16; ++i)
                qs.v[h][i] = _mm512_mul_ps(_mm512_loadu_ps(q + h * head_dim + 16 * i),
                                           _mm512_set1_ps(scale));
            continue;
        }
        for (int b = 0; b < head_dim / kQK; ++b) {
            const QueryBlock& block = qb[h * head_dim / kQK + b];
            qs.words[h][b] = _mm512_loadu_si512(block.q);
        }
        qs.d[h] = _mm512_set1_ps(qb[h * head_dim / kQK].d * scale);
    }
}

// scores[h][j] = q_h . K[base + j] for the n positions of a block, 16 at a time, for float
// keys: converted once for all heads, and each head's 16 products summed across lanes together
// (the block types are scored in integers below).
template <Load16 Load>
KITE_AVX512 void score_block(const PagedKvRows& k, int64_t kv_head, int64_t base, int64_t n,
                             int n_vecs, int n_q, const Queries& qs,
                             float (*scores)[kMaxKernelBlock]) {
    __m512 keys[16][kMaxVecs];
    for (int64_t j0 = 0; j0 < n; j0 += 16) {
        const int64_t m = std::min<int64_t>(16, n - j0);
        for (int64_t j = 0; j < m; ++j) {
            const uint8_t* src = k.row(base + j0 + j, kv_head);
            for (int i = 0; i < n_vecs; ++i) keys[j][i] = Load(src, i);
        }
        for (int64_t j = m; j < 16; ++j)
            for (int i = 0; i < n_vecs; ++i) keys[j][i] = _mm512_setzero_ps();
        for (int h = 0; h < n_q; ++h) {
            __m512 dot[16];
            for (int j = 0; j < 16; ++j) {
                dot[j] = _mm512_mul_ps(qs.v[h][0], keys[j][0]);
                for (int i = 1; i < n_vecs; ++i)
                    dot[j] = _mm512_fmadd_ps(qs.v[h][i], keys[j][i], dot[j]);
            }
            _mm512_storeu_ps(scores[h] + j0, sum_lanes16(dot));
        }
    }
}

// The same for keys of a block type (key_bytes.h) against the QueryBlocks: per block, the
// key's bytes widened to int16 once for all heads, then per head one vpmaddwd (32 products,
// summed in pairs), a conversion and one multiply-add by the key block's scale (the head's
// query scale comes once per score). The int32 sums
// cannot overflow: |key| <= 127, |query| <= 32767, 2 products a lane.
template <class Bytes>
KITE_AVX512 void score_block_int(const PagedKvRows& k, int64_t kv_head, int64_t base, int64_t n,
                                 int n_vecs, int n_q, const Queries& qs,
                                 float (*scores)[kMaxKernelBlock]) {
    using Block = typename Bytes::Block;
    const int n_blocks = n_vecs / 2;
    __m512i keys[16][kMaxBlocks];
    float dk[16][kMaxBlocks];  // the key blocks' scales, converted once for all heads
    for (int64_t j0 = 0; j0 < n; j0 += 16) {
        const int64_t m = std::min<int64_t>(16, n - j0);
        for (int64_t j = 0; j < 16; ++j) {
            // Past the block's end the first key stands in (its scores are never read).
            const auto* row =
                reinterpret_cast<const Block*>(k.row(base + j0 + (j < m ? j : 0), kv_head));
            for (int b = 0; b < n_blocks; ++b) {
                keys[j][b] = _mm512_cvtepi8_epi16(Bytes::bytes(row[b]));
                dk[j][b] = _cvtsh_ss(row[b].d);
            }
        }
        for (int h = 0; h < n_q; ++h) {
            __m512 dot[16];
            for (__m512& x : dot) x = _mm512_setzero_ps();
            for (int b = 0; b < n_blocks; ++b)
                for (int j = 0; j < 16; ++j) {
                    const __m512i sums = _mm512_madd_epi16(keys[j][b], qs.words[h][b]);
                    dot[j] =
                        _mm512_fmadd_ps(_mm512_cvtepi32_ps(sums), _mm512_set1_ps(dk[j][b]), dot[j]);
                }
            _mm512_storeu_ps(scores[h] + j0, _mm512_mul_ps(sum_lanes16(dot), qs.d[h]));
        }
    }
}

// One row per KV type, in kKvElementTypes' order: how its keys are scored and its values added.
struct Loaders {
    decltype(&score_block<load16_f32>) score;
    decltype(&add_values<load16_f32>) add_values;
};
constexpr Loaders kLoaders[] = {
    {score_block<load16_f32>, add_values<load16_f32>},
    {score_block<load16_f16>, add_values<load16_f16>},
    {score_block_int<BytesQ8_0>, add_values<load16_q8_0>},
    {score_block_int<BytesQ4_0>, add_values<load16_q4_0>},
};
static_assert(std::size(kLoaders) == kKvElementTypeCount);

// The register width of this level, for the online-softmax loop.
struct Width {
    using Vec = __m512;
    static constexpr int kLanes = 16;
    KITE_AVX512 static Vec zero() { return _mm512_setzero_ps(); }
    KITE_AVX512 static Vec scale(Vec v, float s) { return _mm512_mul_ps(v, _mm512_set1_ps(s)); }
    KITE_AVX512 static void store_scaled(float* out, Vec v, float s) {
        _mm512_storeu_ps(out, scale(v, s));
    }
    KITE_AVX512 static float block_max(const float* scores, int64_t n, float init) {
        float m = init;
        for (int64_t j = 0; j < n; ++j) m = std::max(m, scores[j]);
        return m;
    }
    KITE_AVX512 static float exp_sum(float* scores, int64_t n, float max) {
        __m512 sum = _mm512_setzero_ps();
        for (int64_t j = 0; j < n; j += 16) {
            const __mmask16 m = n - j >= 16 ? __mmask16(0xffff) : __mmask16((1u << (n - j)) - 1);
            const __m512 w =
                exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, scores + j), _mm512_set1_ps(max)));
            _mm512_mask_storeu_ps(scores + j, m, w);
            sum = _mm512_mask_add_ps(sum, m, sum, w);
        }
        return _mm512_reduce_add_ps(sum);
    }
};

#define KITE_ATTENTION_TARGET KITE_AVX512
#include "kernels/attention/online_softmax.inc"
#undef KITE_ATTENTION_TARGET

}  // namespace

KITE_AVX512 void attend_heads_avx512(const PagedKvLayer& kv, int64_t head_dim, int64_t kv_head,
                                     int n_q, const float* q, const QueryBlock* qb, float* out,
                                     int64_t first, int64_t last, const int32_t* block_table,
                                     float scale, float* stats) {
    attend_heads_online<Width>(kv, head_dim, kv_head, n_q, q, qb, out, first, last, block_table,
                               scale, stats);
}

}  // namespace kite
#endif
