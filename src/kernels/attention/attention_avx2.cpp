// The AVX2 paged-attention kernel: the AVX-512 kernel's structure with 8 floats per register
// and 16 registers, for CPUs without AVX-512 (Haswell, Zen 1-3). Only AVX2, FMA and F16C.
#include "kernels/attention/attention_kernels.h"

#if defined(__x86_64__)
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <type_traits>

#include "kernels/attention/key_bytes.h"
#include "kernels/ops/exp_avx2.h"
#include "quant/blocks.h"

namespace kite {

namespace {

#define KITE_AVX2 __attribute__((target("avx2,fma,f16c")))

// Up to kMaxHeadDim / 8 vectors of 8 floats, or kMaxHeadDim / 32 quantized blocks.
constexpr int kMaxVecs = kMaxHeadDim / 8;
constexpr int kMaxBlocks = kMaxHeadDim / kQK;

// Loaders: values 8 i .. 8 i + 7 of one head's row, as floats, one struct per KV type. The
// block formats are converted in registers: no dequantized copy of the cache exists. A
// quantized block's scale is converted once for its four loads (scale(row, i) for the block
// holding vector i), which halves the work of a Q8_0 load; the products d * q are the same.
struct LoadF32 {
    KITE_AVX2 static __m256 scale(const uint8_t*, int) { return _mm256_setzero_ps(); }
    KITE_AVX2 static __m256 load8(const uint8_t* row, int i, __m256) {
        return _mm256_loadu_ps(reinterpret_cast<const float*>(row) + 8 * i);
    }
};

struct LoadF16 {
    KITE_AVX2 static __m256 scale(const uint8_t*, int) { return _mm256_setzero_ps(); }
    KITE_AVX2 static __m256 load8(const uint8_t* row, int i, __m256) {
        return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row) + i));
    }
};

// A Q8_0 block is four loads: values d * q for 8 of its 32 signed bytes each.
struct LoadQ8_0 {
    KITE_AVX2 static __m256 scale(const uint8_t* row, int i) {
        return _mm256_set1_ps(_cvtsh_ss(reinterpret_cast<const BlockQ8_0*>(row)[i / 4].d));
    }
    KITE_AVX2 static __m256 load8(const uint8_t* row, int i, __m256 d) {
        const auto* b = reinterpret_cast<const BlockQ8_0*>(row) + i / 4;
        const __m128i q = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(b->qs + 8 * (i % 4)));
        return _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q)), d);
    }
};

// Q4_0 byte j holds value j in its low nibble and value j + 16 in its high one: values
// 0-7 and 8-15 are the low nibbles of bytes 0-7 and 8-15, values 16-31 their high nibbles.
struct LoadQ4_0 {
    KITE_AVX2 static __m256 scale(const uint8_t* row, int i) {
        return _mm256_set1_ps(_cvtsh_ss(reinterpret_cast<const BlockQ4_0*>(row)[i / 4].d));
    }
    KITE_AVX2 static __m256 load8(const uint8_t* row, int i, __m256 d) {
        const auto* b = reinterpret_cast<const BlockQ4_0*>(row) + i / 4;
        __m128i q = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(b->qs + 8 * (i % 2)));
        if (i % 4 >= 2) q = _mm_srli_epi16(q, 4);
        q = _mm_and_si128(q, _mm_set1_epi8(0x0f));
        const __m256i centred = _mm256_sub_epi32(_mm256_cvtepu8_epi32(q), _mm256_set1_epi32(8));
        return _mm256_mul_ps(_mm256_cvtepi32_ps(centred), d);
    }
};

// Quantized blocks hold 32 values: four vectors share a scale.
constexpr int kVecsPerBlock = 4;

// All bits set in lanes 0..n-1.
KITE_AVX2 inline __m256 first_lanes(int64_t n) {
    return _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)),
                                                  _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)));
}

// Lane j of the result: the sum of d[j]'s 8 lanes. Each level of shuffles and adds halves the
// partial sums per position and doubles the positions per register (8 -> 4 -> 2 -> 1): 22
// operations for 8 scores, where 8 horizontal reductions take about 6 each.
KITE_AVX2 inline __m256 sum_lanes8(const __m256 d[8]) {
    __m256 a[4], b[2];
    for (int i = 0; i < 4; ++i)  // a[i]: 4 partials of d[2i], then 4 of d[2i+1]
        a[i] = _mm256_add_ps(_mm256_permute2f128_ps(d[2 * i], d[2 * i + 1], 0x20),
                             _mm256_permute2f128_ps(d[2 * i], d[2 * i + 1], 0x31));
    for (int i = 0; i < 2;
         ++i)  // b[i]: 128-bit lane m holds 2 partials of d[4i + m], d[4i + 2 + m]
        b[i] = _mm256_add_ps(_mm256_shuffle_ps(a[2 * i], a[2 * i + 1], 0x44),
                             _mm256_shuffle_ps(a[2 * i], a[2 * i + 1], 0xee));
    // Element 4m + k holds the sum of d[m + 2k]; the index transposes that back.
    const __m256 e =
        _mm256_add_ps(_mm256_shuffle_ps(b[0], b[1], 0x88), _mm256_shuffle_ps(b[0], b[1], 0xdd));
    return _mm256_permutevar8x32_ps(e, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

KITE_AVX2 inline float max_lanes(__m256 v) {
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    return _mm_cvtss_f32(_mm_max_ss(m, _mm_movehdup_ps(m)));
}

KITE_AVX2 inline float sum_lanes(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
}

// Values are accumulated a slice of kSliceVecs vectors (32 floats, one quantized block) for
// kValueHeads heads at a time: 12 sums, 3 broadcast weights and the value vector fill the 16
// registers.
constexpr int kSliceVecs = kVecsPerBlock;
constexpr int kValueHeads = 3;

// acc[h][i] += sum over the block's positions j of w[h][j] * V[j][8 i..8 i + 7] for NQ heads
// and the NV vectors from vector `first` of the value rows from slot `base` on: sizes known at
// compile time keep the sums in registers for the whole block.
template <class Load, int NV, int NQ>
KITE_AVX2 void add_values_slice(const PagedKvRows& v, int64_t kv_head, int64_t base, int first,
                                int64_t n, const float (*w)[kMaxKernelBlock], __m256* const* acc) {
    __m256 sum[NQ][NV];
    for (int h = 0; h < NQ; ++h)
        for (int i = 0; i < NV; ++i) sum[h][i] = acc[h][i];
    for (int64_t j = 0; j < n; ++j) {
        const uint8_t* src = v.row(base + j, kv_head);
        __m256 wv[NQ];
        for (int h = 0; h < NQ; ++h) wv[h] = _mm256_broadcast_ss(&w[h][j]);
        const __m256 d = Load::scale(src, first);  // a slice lies within one block
        for (int i = 0; i < NV; ++i) {
            const __m256 row = Load::load8(src, first + i, d);
            for (int h = 0; h < NQ; ++h) sum[h][i] = _mm256_fmadd_ps(wv[h], row, sum[h][i]);
        }
    }
    for (int h = 0; h < NQ; ++h)
        for (int i = 0; i < NV; ++i) acc[h][i] = sum[h][i];
}

// The same over whole heads of n_vecs vectors, n_q <= kValueHeads heads at once: every
// head_dim that is a multiple of 8 is whole slices plus one shorter slice.
template <class Load>
KITE_AVX2 void add_values(const PagedKvRows& v, int64_t kv_head, int64_t base, int64_t n,
                          int n_vecs, int n_q, const float (*w)[kMaxKernelBlock],
                          __m256 (*acc)[kMaxVecs]) {
    using Fn = void (*)(const PagedKvRows&, int64_t, int64_t, int, int64_t,
                        const float(*)[kMaxKernelBlock], __m256* const*);
    static constexpr Fn kSlice[kSliceVecs][kValueHeads] = {
        {add_values_slice<Load, 1, 1>, add_values_slice<Load, 1, 2>, add_values_slice<Load, 1, 3>},
        {add_values_slice<Load, 2, 1>, add_values_slice<Load, 2, 2>, add_values_slice<Load, 2, 3>},
        {add_values_slice<Load, 3, 1>, add_values_slice<Load, 3, 2>, add_values_slice<Load, 3, 3>},
        {add_values_slice<Load, 4, 1>, add_values_slice<Load, 4, 2>, add_values_slice<Load, 4, 3>}};
    for (int i = 0; i < n_vecs; i += kSliceVecs) {
        __m256* slice[kValueHeads];
        for (int h = 0; h < n_q; ++h) slice[h] = acc[h] + i;
        const int nv = std::min(kSliceVecs, n_vecs - i);
        kSlice[nv - 1][n_q - 1](v, kv_head, base, i, n, w, slice);
    }
}

// Each head's query as the score functions read it: times the attention scale, and where
// the keys are scored in integers as its QueryBlocks (AttendHeadsFn).
struct Queries {
    __m256 v[kMaxGroup][kMaxVecs];  // float keys
    // Integer scores: each block's values 0-15 and 16-31, and the head's scale times the
    // attention scale.
    __m256i words[kMaxGroup][kMaxBlocks][2];
    __m256 d[kMaxGroup];
};

KITE_AVX2 void prepare_queries(const float* q, const QueryBlock* qb, int n_q, int64_t head_dim,
                               float scale, Queries& qs) {
    for (int h = 0; h < n_q; ++h) {
        if (qb == nullptr) {
            for (int i = 0; i < head_dim / 8; ++i)
                qs.v[h][i] =
                    _mm256_mul_ps(_mm256_loadu_ps(q + h * head_dim + 8 * i), _mm256_set1_ps(scale));
            continue;
        }
        for (int b = 0; b < head_dim / kQK; ++b) {
            const QueryBlock& block = qb[h * head_dim / kQK + b];
            for (int half = 0; half < 2; ++half)
                qs.words[h][b][half] =
                    _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block.q + 16 * half));
        }
        qs.d[h] = _mm256_set1_ps(qb[h * head_dim / kQK].d * scale);
    }
}

// Loads the keys of positions base + j0 .. base + j0 + 7 of a block of n: past its end the
// first key stands in (its score is masked to -inf after).
KITE_AVX2 inline void key_rows(const PagedKvRows& k, int64_t kv_head, int64_t base, int64_t j0,
                               int64_t n, const uint8_t* rows[8]) {
    for (int64_t j = 0; j < 8; ++j) rows[j] = k.row(base + j0 + (j0 + j < n ? j : 0), kv_head);
}

// Scores 8 positions' sums times `scale` into scores[j0 ..], -inf past the block's n
// positions.
KITE_AVX2 inline void store_scores(const __m256 dot[8], __m256 scale, int64_t j0, int64_t n,
                                   float* scores) {
    const __m256 minus_inf = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
    _mm256_storeu_ps(scores + j0, _mm256_blendv_ps(minus_inf, _mm256_mul_ps(sum_lanes8(dot), scale),
                                                   first_lanes(n - j0)));
}

// scores[h][j] = q_h . K[base + j] for the n positions of a block, 8 at a time, each head's
// 8 products summed across lanes together, for float keys: F32 keys are read where they are,
// F16 keys converted once for all heads (the block types are scored in integers below).
template <class Load>
KITE_AVX2 void score_block(const PagedKvRows& k, int64_t kv_head, int64_t base, int64_t n,
                           int n_vecs, int n_q, const Queries& qs,
                           float (*scores)[kMaxKernelBlock]) {
    alignas(32) float converted[8][kMaxHeadDim];
    for (int64_t j0 = 0; j0 < n; j0 += 8) {
        const uint8_t* rows[8];
        key_rows(k, kv_head, base, j0, n, rows);
        const float* keys[8];
        for (int j = 0; j < 8; ++j) {
            if constexpr (std::is_same_v<Load, LoadF32>) {
                keys[j] = reinterpret_cast<const float*>(rows[j]);
            } else {
                __m256 d = _mm256_setzero_ps();
                for (int i = 0; i < n_vecs; ++i) {
                    if (i % kVecsPerBlock == 0) d = Load::scale(rows[j], i);
                    _mm256_store_ps(converted[j] + 8 * i, Load::load8(rows[j], i, d));
                }
                keys[j] = converted[j];
            }
        }
        for (int h = 0; h < n_q; ++h) {
            __m256 dot[8];
            for (int j = 0; j < 8; ++j)
                dot[j] = _mm256_mul_ps(qs.v[h][0], _mm256_loadu_ps(keys[j]));
            for (int i = 1; i < n_vecs; ++i)
                for (int j = 0; j < 8; ++j)
                    dot[j] = _mm256_fmadd_ps(qs.v[h][i], _mm256_loadu_ps(keys[j] + 8 * i), dot[j]);
            store_scores(dot, _mm256_set1_ps(1.0f), j0, n, scores[h]);
        }
    }
}

// The same for keys of a block type (key_bytes.h) against the QueryBlocks: per block, the
// key's bytes widened to int16 once for all heads, then per head two vpmaddwd (16 products
// each, summed in pairs), a conversion and one multiply-add by the key block's scale: 5
// instructions per 32 values and head (the head's query scale comes once per score), where
// widening the key to floats took 16 to 24 (shared by the heads) and its products 4 more.
// The int32 sums cannot overflow: |key| <= 127, |query| <= 32767, 4 products a lane.
template <class Bytes>
KITE_AVX2 void score_block_int(const PagedKvRows& k, int64_t kv_head, int64_t base, int64_t n,
                               int n_vecs, int n_q, const Queries& qs,
                               float (*scores)[kMaxKernelBlock]) {
    const int n_blocks = n_vecs / kVecsPerBlock;
    for (int64_t j0 = 0; j0 < n; j0 += 8) {
        const uint8_t* rows[8];
        key_rows(k, kv_head, base, j0, n, rows);
        // The keys' values and scales, once for all heads.
        __m256i keys[kMaxBlocks][8][2];
        float dk[kMaxBlocks][8];
        for (int j = 0; j < 8; ++j)
            for (int b = 0; b < n_blocks; ++b) {
                const auto& block = reinterpret_cast<const typename Bytes::Block*>(rows[j])[b];
                const __m256i bytes = Bytes::bytes(block);
                keys[b][j][0] = _mm256_cvtepi8_epi16(_mm256_castsi256_si128(bytes));
                keys[b][j][1] = _mm256_cvtepi8_epi16(_mm256_extracti128_si256(bytes, 1));
                dk[b][j] = _cvtsh_ss(block.d);
            }
        for (int h = 0; h < n_q; ++h) {
            __m256 dot[8];
            for (__m256& x : dot) x = _mm256_setzero_ps();
            for (int b = 0; b < n_blocks; ++b)
                for (int j = 0; j < 8; ++j) {
                    const __m256i sums =
                        _mm256_add_epi32(_mm256_madd_epi16(keys[b][j][0], qs.words[h][b][0]),
                                         _mm256_madd_epi16(keys[b][j][1], qs.words[h][b][1]));
                    dot[j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sums),
                                             _mm256_broadcast_ss(&dk[b][j]), dot[j]);
                }
            store_scores(dot, qs.d[h], j0, n, scores[h]);
        }
    }
}

// One row per KV type, in kKvElementTypes' order: how its keys are scored and its values added.
struct Loaders {
    decltype(&score_block<LoadF32>) score;
    decltype(&add_values<LoadF32>) add_values;
};
constexpr Loaders kLoaders[] = {
    {score_block<LoadF32>, add_values<LoadF32>},
    {score_block<LoadF16>, add_values<LoadF16>},
    {score_block_int<BytesQ8_0>, add_values<LoadQ8_0>},
    {score_block_int<BytesQ4_0>, add_values<LoadQ4_0>},
};
static_assert(std::size(kLoaders) == kKvElementTypeCount);

// The register width of this level, for the online-softmax loop.
struct Width {
    using Vec = __m256;
    static constexpr int kLanes = 8;
    KITE_AVX2 static Vec zero() { return _mm256_setzero_ps(); }
    KITE_AVX2 static Vec scale(Vec v, float s) { return _mm256_mul_ps(v, _mm256_set1_ps(s)); }
    KITE_AVX2 static void store_scaled(float* out, Vec v, float s) {
        _mm256_storeu_ps(out, scale(v, s));
    }
    KITE_AVX2 static float block_max(const float* scores, int64_t n, float init) {
        __m256 top = _mm256_set1_ps(init);
        for (int64_t j = 0; j < n; j += 8) top = _mm256_max_ps(top, _mm256_loadu_ps(scores + j));
        return max_lanes(top);
    }
    // Lanes past the block's end hold -inf, which exp8 clamps to a weight of 1e-38: nothing
    // beside the maximum's weight of 1 in the sum, and never read as values.
    KITE_AVX2 static float exp_sum(float* scores, int64_t n, float max) {
        __m256 sum = _mm256_setzero_ps();
        for (int64_t j = 0; j < n; j += 8) {
            const __m256 w = exp8(_mm256_sub_ps(_mm256_loadu_ps(scores + j), _mm256_set1_ps(max)));
            _mm256_storeu_ps(scores + j, w);  // now exp(score - max)
            sum = _mm256_add_ps(sum, w);
        }
        return sum_lanes(sum);
    }
};

#define KITE_ATTENTION_TARGET KITE_AVX2
#include "kernels/attention/online_softmax.inc"
#undef KITE_ATTENTION_TARGET

}  // namespace

KITE_AVX2 void attend_heads_avx2(const PagedKvLayer& kv, int64_t head_dim, int64_t kv_head, int n_q,
                                 const float* q, const QueryBlock* qb, float* out, int64_t first,
                                 int64_t last, const int32_t* block_table, float scale,
                                 float* stats) {
    attend_heads_online<Width>(kv, head_dim, kv_head, n_q, q, qb, out, first, last, block_table,
                               scale, stats);
}

}  // namespace kite
#endif
