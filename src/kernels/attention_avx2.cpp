// The AVX2 paged-attention kernel: the AVX-512 kernel's structure with 8 floats per register
// and 16 registers, for CPUs without AVX-512 (Haswell, Zen 1-3). Only AVX2, FMA and F16C.
#include "kernels/attention_kernels.h"

#if defined(__x86_64__)
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/exp_avx2.h"

namespace kite {

namespace {

#define KITE_AVX2 __attribute__((target("avx2,fma,f16c")))

// Up to kMaxHeadDim / 8 vectors of 8 floats.
constexpr int kMaxVecs = kMaxHeadDim / 8;

KITE_AVX2 inline __m256 load8(const void* base, TensorType type, int64_t offset) {
    if (type == TensorType::F16)
        return _mm256_cvtph_ps(_mm_loadu_si128(
            reinterpret_cast<const __m128i*>(static_cast<const uint16_t*>(base) + offset)));
    return _mm256_loadu_ps(static_cast<const float*>(base) + offset);
}

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

// Values are accumulated a slice of kSliceVecs vectors (32 floats) for kValueHeads heads at a
// time: 12 sums, 3 broadcast weights and the value vector fill the 16 registers.
constexpr int kSliceVecs = 4;
constexpr int kValueHeads = 3;

// acc[h][i] += sum over the block's positions j of w[h][j] * V[j][8 i..8 i + 7] for NQ heads
// and the NV vectors from `first` (a value row's offset plus 8 * i): sizes known at compile
// time keep the sums in registers for the whole block.
template <int NV, int NQ>
KITE_AVX2 void add_values_slice(const PagedKvLayer& kv, int64_t first, int64_t n,
                                const float (*w)[kMaxKernelBlock], __m256* const* acc) {
    __m256 sum[NQ][NV];
    for (int h = 0; h < NQ; ++h)
        for (int i = 0; i < NV; ++i) sum[h][i] = acc[h][i];
    for (int64_t j = 0; j < n; ++j) {
        __m256 wv[NQ];
        for (int h = 0; h < NQ; ++h) wv[h] = _mm256_broadcast_ss(&w[h][j]);
        for (int i = 0; i < NV; ++i) {
            const __m256 row = load8(kv.v, kv.type, first + j * kv.slot_elements + 8 * i);
            for (int h = 0; h < NQ; ++h) sum[h][i] = _mm256_fmadd_ps(wv[h], row, sum[h][i]);
        }
    }
    for (int h = 0; h < NQ; ++h)
        for (int i = 0; i < NV; ++i) acc[h][i] = sum[h][i];
}

// The same over whole heads of n_vecs vectors, n_q <= kValueHeads heads at once: every
// head_dim that is a multiple of 8 is whole slices plus one shorter slice.
KITE_AVX2 void add_values(const PagedKvLayer& kv, int64_t first, int64_t n, int n_vecs, int n_q,
                          const float (*w)[kMaxKernelBlock], __m256 (*acc)[kMaxVecs]) {
    using Fn = void (*)(const PagedKvLayer&, int64_t, int64_t, const float(*)[kMaxKernelBlock],
                        __m256* const*);
    static constexpr Fn kSlice[kSliceVecs][kValueHeads] = {
        {add_values_slice<1, 1>, add_values_slice<1, 2>, add_values_slice<1, 3>},
        {add_values_slice<2, 1>, add_values_slice<2, 2>, add_values_slice<2, 3>},
        {add_values_slice<3, 1>, add_values_slice<3, 2>, add_values_slice<3, 3>},
        {add_values_slice<4, 1>, add_values_slice<4, 2>, add_values_slice<4, 3>}};
    for (int i = 0; i < n_vecs; i += kSliceVecs) {
        __m256* slice[kValueHeads];
        for (int h = 0; h < n_q; ++h) slice[h] = acc[h] + i;
        const int nv = std::min(kSliceVecs, n_vecs - i);
        kSlice[nv - 1][n_q - 1](kv, first + 8 * i, n, w, slice);
    }
}

}  // namespace

// The scalar reference's computation for n_q heads of one KV head, a KV block at a time: the
// block's scores first, then one rescale of the running sums per block instead of one per
// position.
KITE_AVX2 void attend_heads_avx2(const PagedKvLayer& kv, int64_t head_dim, int64_t kv_head, int n_q,
                                 const float* q, float* out, int64_t first, int64_t last,
                                 const int32_t* block_table, float scale) {
    const int n_vecs = static_cast<int>(head_dim / 8);
    __m256 qv[kMaxGroup][kMaxVecs], acc[kMaxGroup][kMaxVecs];
    float max_score[kMaxGroup], sum[kMaxGroup];
    float scores[kMaxGroup][kMaxKernelBlock];
    // F16 keys converted once for all heads; F32 keys are read where they are.
    alignas(32) float converted[8][kMaxHeadDim];
    for (int h = 0; h < n_q; ++h) {
        for (int i = 0; i < n_vecs; ++i) {
            qv[h][i] =
                _mm256_mul_ps(_mm256_loadu_ps(q + h * head_dim + 8 * i), _mm256_set1_ps(scale));
            acc[h][i] = _mm256_setzero_ps();
        }
        max_score[h] = -std::numeric_limits<float>::infinity();
        sum[h] = 0.0f;
    }
    const __m256 minus_inf = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
    const int64_t bs = kv.block_size;
    // Blocks from the one holding `first`; the first and the last may be partial.
    for (int64_t start = first, end; start <= last; start = end) {
        end = std::min((start / bs + 1) * bs, last + 1);
        const int64_t n = end - start;
        const int64_t base = int64_t{block_table[start / bs]} * bs + start % bs;
        // Scores 8 positions at a time, each head's 8 products summed across lanes together.
        // Past the block's end the first key stands in and the score is masked to -inf.
        for (int64_t j0 = 0; j0 < n; j0 += 8) {
            const int64_t m = std::min<int64_t>(8, n - j0);
            const float* keys[8];
            for (int64_t j = 0; j < m; ++j) {
                const int64_t offset = (base + j0 + j) * kv.slot_elements + kv_head * head_dim;
                if (kv.type == TensorType::F16) {
                    for (int i = 0; i < n_vecs; ++i)
                        _mm256_store_ps(converted[j] + 8 * i, load8(kv.k, kv.type, offset + 8 * i));
                    keys[j] = converted[j];
                } else {
                    keys[j] = static_cast<const float*>(kv.k) + offset;
                }
            }
            for (int64_t j = m; j < 8; ++j) keys[j] = keys[0];
            for (int h = 0; h < n_q; ++h) {
                __m256 dot[8];
                for (int j = 0; j < 8; ++j)
                    dot[j] = _mm256_mul_ps(qv[h][0], _mm256_loadu_ps(keys[j]));
                for (int i = 1; i < n_vecs; ++i)
                    for (int j = 0; j < 8; ++j)
                        dot[j] =
                            _mm256_fmadd_ps(qv[h][i], _mm256_loadu_ps(keys[j] + 8 * i), dot[j]);
                _mm256_storeu_ps(scores[h] + j0,
                                 _mm256_blendv_ps(minus_inf, sum_lanes8(dot), first_lanes(m)));
            }
        }
        for (int h = 0; h < n_q; ++h) {
            __m256 top = _mm256_set1_ps(max_score[h]);
            for (int64_t j = 0; j < n; j += 8)
                top = _mm256_max_ps(top, _mm256_loadu_ps(scores[h] + j));
            const float block_max = max_lanes(top);
            const float correction = std::exp(max_score[h] - block_max);
            for (int i = 0; i < n_vecs; ++i)
                acc[h][i] = _mm256_mul_ps(acc[h][i], _mm256_set1_ps(correction));
            max_score[h] = block_max;
            __m256 block_sum = _mm256_setzero_ps();
            for (int64_t j = 0; j < n; j += 8) {
                // Lanes past the block's end hold -inf, which exp8 clamps to a weight of 1e-38:
                // nothing beside the maximum's weight of 1 in the sum, and never read as values.
                const __m256 w =
                    exp8(_mm256_sub_ps(_mm256_loadu_ps(scores[h] + j), _mm256_set1_ps(block_max)));
                _mm256_storeu_ps(scores[h] + j, w);  // now exp(score - max)
                block_sum = _mm256_add_ps(block_sum, w);
            }
            sum[h] = sum[h] * correction + sum_lanes(block_sum);
        }
        const int64_t values = base * kv.slot_elements + kv_head * head_dim;
        for (int h = 0; h < n_q; h += kValueHeads)
            add_values(kv, values, n, n_vecs, std::min(kValueHeads, n_q - h), scores + h, acc + h);
    }
    for (int h = 0; h < n_q; ++h) {
        const __m256 inv = _mm256_set1_ps(1.0f / sum[h]);
        for (int i = 0; i < n_vecs; ++i)
            _mm256_storeu_ps(out + h * head_dim + 8 * i, _mm256_mul_ps(acc[h][i], inv));
    }
}

}  // namespace kite
#endif
