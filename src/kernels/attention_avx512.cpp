// The AVX-512 paged-attention kernel: 16 floats per register, 32 registers.
// GCC 12's AVX-512 headers trip -Wuninitialized where inlined (GCC bug 105593).
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include "kernels/attention_kernels.h"

#if defined(__x86_64__)
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/exp_avx512.h"

namespace kite {

namespace {

#define KITE_AVX512 __attribute__((target("avx512f,avx512dq,avx512bw,avx512vl,f16c,fma")))

// Up to kMaxHeadDim / 16 vectors of 16 floats.
constexpr int kMaxVecs = kMaxHeadDim / 16;

KITE_AVX512 inline __m512 load16(const void* base, TensorType type, int64_t offset) {
    if (type == TensorType::F16)
        return _mm512_cvtph_ps(_mm256_loadu_si256(
            reinterpret_cast<const __m256i*>(static_cast<const uint16_t*>(base) + offset)));
    return _mm512_loadu_ps(static_cast<const float*>(base) + offset);
}

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

// acc[h] += sum over the block's positions j of w[h][j] * V[j], for NQ heads of NV vectors:
// sizes known at compile time keep the sums in registers for the whole block.
template <int NV, int NQ>
KITE_AVX512 void add_values_fixed(const PagedKvLayer& kv, int64_t first, int64_t n,
                                  const float (*w)[kMaxKernelBlock], __m512 (*acc)[kMaxVecs]) {
    __m512 sum[NQ][NV];
    for (int h = 0; h < NQ; ++h)
        for (int i = 0; i < NV; ++i) sum[h][i] = acc[h][i];
    for (int64_t j = 0; j < n; ++j) {
        __m512 row[NV];
        for (int i = 0; i < NV; ++i)
            row[i] = load16(kv.v, kv.type, first + j * kv.slot_elements + 16 * i);
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
KITE_AVX512 void add_values(const PagedKvLayer& kv, int64_t first, int64_t n, int n_vecs, int n_q,
                            const float (*w)[kMaxKernelBlock], __m512 (*acc)[kMaxVecs]) {
    using Fn = void (*)(const PagedKvLayer&, int64_t, int64_t, const float(*)[kMaxKernelBlock],
                        __m512(*)[kMaxVecs]);
    static constexpr Fn kFixed[2][kValueHeads] = {
        {add_values_fixed<4, 1>, add_values_fixed<4, 2>, add_values_fixed<4, 3>},
        {add_values_fixed<8, 1>, add_values_fixed<8, 2>, add_values_fixed<8, 3>}};
    if (n_vecs == 4 || n_vecs == 8) return kFixed[n_vecs / 8][n_q - 1](kv, first, n, w, acc);
    for (int64_t j = 0; j < n; ++j) {
        __m512 row[kMaxVecs];
        for (int i = 0; i < n_vecs; ++i)
            row[i] = load16(kv.v, kv.type, first + j * kv.slot_elements + 16 * i);
        for (int h = 0; h < n_q; ++h) {
            const __m512 wv = _mm512_set1_ps(w[h][j]);
            for (int i = 0; i < n_vecs; ++i) acc[h][i] = _mm512_fmadd_ps(wv, row[i], acc[h][i]);
        }
    }
}

}  // namespace

// The scalar reference's computation for n_q heads of one KV head, a KV block at a time: the
// block's scores first, then one rescale of the running sums per block instead of one per position.
KITE_AVX512 void attend_heads_avx512(const PagedKvLayer& kv, int64_t head_dim, int64_t kv_head,
                                     int n_q, const float* q, float* out, int64_t first,
                                     int64_t last, const int32_t* block_table, float scale) {
    const int n_vecs = static_cast<int>(head_dim / 16);
    __m512 qv[kMaxGroup][kMaxVecs], acc[kMaxGroup][kMaxVecs];
    float max_score[kMaxGroup], sum[kMaxGroup];
    float scores[kMaxGroup][kMaxKernelBlock];
    __m512 keys[16][kMaxVecs];
    for (int h = 0; h < n_q; ++h) {
        for (int i = 0; i < n_vecs; ++i) {
            qv[h][i] =
                _mm512_mul_ps(_mm512_loadu_ps(q + h * head_dim + 16 * i), _mm512_set1_ps(scale));
            acc[h][i] = _mm512_setzero_ps();
        }
        max_score[h] = -std::numeric_limits<float>::infinity();
        sum[h] = 0.0f;
    }
    const int64_t bs = kv.block_size;
    // Blocks from the one holding `first`; the first and the last may be partial.
    for (int64_t start = first, end; start <= last; start = end) {
        end = std::min((start / bs + 1) * bs, last + 1);
        const int64_t n = end - start;
        const int64_t base = int64_t{block_table[start / bs]} * bs + start % bs;
        // Scores 16 positions at a time: their keys converted once for all heads, and each
        // head's 16 products summed across lanes together.
        for (int64_t j0 = 0; j0 < n; j0 += 16) {
            const int64_t m = std::min<int64_t>(16, n - j0);
            for (int64_t j = 0; j < m; ++j) {
                const int64_t offset = (base + j0 + j) * kv.slot_elements + kv_head * head_dim;
                for (int i = 0; i < n_vecs; ++i)
                    keys[j][i] = load16(kv.k, kv.type, offset + 16 * i);
            }
            for (int64_t j = m; j < 16; ++j)
                for (int i = 0; i < n_vecs; ++i) keys[j][i] = _mm512_setzero_ps();
            for (int h = 0; h < n_q; ++h) {
                __m512 dot[16];
                for (int j = 0; j < 16; ++j) {
                    dot[j] = _mm512_mul_ps(qv[h][0], keys[j][0]);
                    for (int i = 1; i < n_vecs; ++i)
                        dot[j] = _mm512_fmadd_ps(qv[h][i], keys[j][i], dot[j]);
                }
                _mm512_storeu_ps(scores[h] + j0, sum_lanes16(dot));
            }
        }
        for (int h = 0; h < n_q; ++h) {
            float block_max = max_score[h];
            for (int64_t j = 0; j < n; ++j) block_max = std::max(block_max, scores[h][j]);
            const float correction = std::exp(max_score[h] - block_max);
            for (int i = 0; i < n_vecs; ++i)
                acc[h][i] = _mm512_mul_ps(acc[h][i], _mm512_set1_ps(correction));
            max_score[h] = block_max;
            __m512 block_sum = _mm512_setzero_ps();
            for (int64_t j = 0; j < n; j += 16) {
                const __mmask16 m =
                    n - j >= 16 ? __mmask16(0xffff) : __mmask16((1u << (n - j)) - 1);
                const __m512 w = exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, scores[h] + j),
                                                     _mm512_set1_ps(block_max)));
                _mm512_mask_storeu_ps(scores[h] + j, m, w);  // now exp(score - max)
                block_sum = _mm512_mask_add_ps(block_sum, m, block_sum, w);
            }
            sum[h] = sum[h] * correction + _mm512_reduce_add_ps(block_sum);
        }
        const int64_t values = base * kv.slot_elements + kv_head * head_dim;
        for (int h = 0; h < n_q; h += kValueHeads)
            add_values(kv, values, n, n_vecs, std::min(kValueHeads, n_q - h), scores + h, acc + h);
    }
    for (int h = 0; h < n_q; ++h) {
        const __m512 inv = _mm512_set1_ps(1.0f / sum[h]);
        for (int i = 0; i < n_vecs; ++i)
            _mm512_storeu_ps(out + h * head_dim + 16 * i, _mm512_mul_ps(acc[h][i], inv));
    }
}

}  // namespace kite
#endif
