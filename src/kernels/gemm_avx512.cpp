// AVX-512 tiles. Block types use VNNI: vpdpbusd multiplies unsigned by signed bytes and
// adds groups of four into int32 lanes; a 512-bit register holds two 32-weight blocks, so
// lanes 0-7 sum block A and lanes 8-15 block B, and one float FMA applies both blocks'
// scales. Signed weights are made unsigned by an offset whose effect is subtracted up front
// by seeding the accumulator with -offset * sum(x).
// GCC 12's AVX-512 headers seed results with _mm512_undefined_*(), which its own
// -Wuninitialized then reports wherever they are inlined (GCC bug 105593, fixed in 13).
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include "kernels/cpu_features.h"

#include <cstring>

#include "kernels/gemm.h"
#include "kernels/vec_dot.h"
#include "quant/blocks.h"

namespace kite {

namespace {

#define KITE_AVX512 \
    __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx512dq,f16c,fma")))

KITE_AVX512 inline float h2f(uint16_t h) {
    return _cvtsh_ss(h);
}

// Two half-scales as [a x8 | b x8].
KITE_AVX512 inline __m512 pair_scale(float a, float b) {
    return _mm512_insertf32x8(_mm512_set1_ps(a), _mm256_set1_ps(b), 1);
}

KITE_AVX512 inline __m512i load_pair(const int8_t* a, const int8_t* b) {
    const __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a));
    const __m256i hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b));
    return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
}

// Two Q4 blocks' nibbles as 64 bytes 0..15 in weight order.
KITE_AVX512 inline __m512i unpack_q4_pair(const uint8_t* a, const uint8_t* b) {
    const __m128i qa = _mm_loadu_si128(reinterpret_cast<const __m128i*>(a));
    const __m128i qb = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b));
    __m512i v = _mm512_castsi128_si512(qa);
    v = _mm512_inserti32x4(v, _mm_srli_epi16(qa, 4), 1);
    v = _mm512_inserti32x4(v, qb, 2);
    v = _mm512_inserti32x4(v, _mm_srli_epi16(qb, 4), 3);
    return _mm512_and_si512(v, _mm512_set1_epi8(0x0f));
}

// Weight and activation block layouts per kernel.
struct Q41 {
    using W = BlockQ4_1;
    using A = BlockQ8_1;
};
struct Q40 {
    using W = BlockQ4_0;
    using A = BlockQ8_0;
};
struct Q80 {
    using W = BlockQ8_0;
    using A = BlockQ8_0;
};

template <typename K>
KITE_AVX512 inline __m512i weight_pair(const typename K::W* w) {
    if constexpr (std::is_same_v<K, Q80>) {
        // Signed weights + 128 are unsigned; the offset is removed via the seed below.
        return _mm512_xor_si512(load_pair(w[0].qs, w[1].qs), _mm512_set1_epi8(char(0x80)));
    } else {
        return unpack_q4_pair(w[0].qs, w[1].qs);
    }
}

// -offset * (sum of each 4 activations), so that dpbusd(seed, w + offset, x) = w . x.
template <typename K>
KITE_AVX512 inline __m512i seed_for(__m512i x) {
    if constexpr (std::is_same_v<K, Q41>) {
        return _mm512_setzero_si512();  // Q4_1 weights are unsigned; the minimum is separate
    } else {
        const char offset = std::is_same_v<K, Q80> ? char(0x80) : char(8);
        const __m512i sums =
            _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_set1_epi8(offset), x);
        return _mm512_sub_epi32(_mm512_setzero_si512(), sums);
    }
}

template <typename K, int R, int C>
KITE_AVX512 void tile(const WeightMatrix& w, const uint8_t* act, size_t act_bytes, int64_t r0,
                      int64_t t0, int64_t n_rows, float* y) {
    using W = typename K::W;
    using A = typename K::A;
    const int64_t nb = w.cols / kQK;
    const W* wr[R];
    const A* xc[C];
    for (int r = 0; r < R; ++r) wr[r] = reinterpret_cast<const W*>(w.data + (r0 + r) * w.row_bytes);
    for (int c = 0; c < C; ++c) xc[c] = reinterpret_cast<const A*>(act + (t0 + c) * act_bytes);

    __m512 acc[R][C];
    for (int r = 0; r < R; ++r)
        for (int c = 0; c < C; ++c) acc[r][c] = _mm512_setzero_ps();

    for (int64_t b = 0; b + 1 < nb; b += 2) {
        __m512i wv[R];
        __m512 wd[R], wm[R];
        for (int r = 0; r < R; ++r) {
            wv[r] = weight_pair<K>(wr[r] + b);
            wd[r] = pair_scale(h2f(wr[r][b].d), h2f(wr[r][b + 1].d));
            if constexpr (std::is_same_v<K, Q41>)  // min * s, spread over 8 lanes each
                wm[r] = pair_scale(h2f(wr[r][b].m) * 0.125f, h2f(wr[r][b + 1].m) * 0.125f);
        }
        for (int c = 0; c < C; ++c) {
            const __m512i xv = load_pair(xc[c][b].qs, xc[c][b + 1].qs);
            const __m512 xd = pair_scale(h2f(xc[c][b].d), h2f(xc[c][b + 1].d));
            const __m512i seed = seed_for<K>(xv);
            for (int r = 0; r < R; ++r) {
                const __m512 dot = _mm512_cvtepi32_ps(_mm512_dpbusd_epi32(seed, wv[r], xv));
                acc[r][c] = _mm512_fmadd_ps(dot, _mm512_mul_ps(wd[r], xd), acc[r][c]);
            }
            if constexpr (std::is_same_v<K, Q41>) {
                const __m512 xs = pair_scale(h2f(xc[c][b].s), h2f(xc[c][b + 1].s));
                for (int r = 0; r < R; ++r) acc[r][c] = _mm512_fmadd_ps(wm[r], xs, acc[r][c]);
            }
        }
    }
    const DotFn tail_dot = dot_reference(w.type);
    for (int r = 0; r < R; ++r)
        for (int c = 0; c < C; ++c) {
            float sum = _mm512_reduce_add_ps(acc[r][c]);
            if (nb % 2) sum += tail_dot(wr[r] + nb - 1, xc[c] + nb - 1, kQK);  // odd last block
            y[(t0 + c) * n_rows + r0 + r] = sum;
        }
}

// Float weights: 16 values per step, masked tail.
template <TensorType T>
KITE_AVX512 inline __m512 load_weights(const uint8_t* row, int64_t i, __mmask16 m) {
    if constexpr (T == TensorType::F32) {
        return _mm512_maskz_loadu_ps(m, reinterpret_cast<const float*>(row) + i);
    } else {
        const __m256i h = _mm256_maskz_loadu_epi16(m, reinterpret_cast<const uint16_t*>(row) + i);
        if constexpr (T == TensorType::F16) return _mm512_cvtph_ps(h);
        return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
    }
}

template <TensorType T, int R, int C>
KITE_AVX512 void tile_float(const WeightMatrix& w, const uint8_t* act, size_t act_bytes, int64_t r0,
                            int64_t t0, int64_t n_rows, float* y) {
    __m512 acc[R][C];
    for (int r = 0; r < R; ++r)
        for (int c = 0; c < C; ++c) acc[r][c] = _mm512_setzero_ps();
    for (int64_t i = 0; i < w.cols; i += 16) {
        const __mmask16 m =
            w.cols - i >= 16 ? __mmask16(0xffff) : __mmask16((1u << (w.cols - i)) - 1);
        __m512 wv[R];
        for (int r = 0; r < R; ++r) wv[r] = load_weights<T>(w.data + (r0 + r) * w.row_bytes, i, m);
        for (int c = 0; c < C; ++c) {
            const __m512 xv = _mm512_maskz_loadu_ps(
                m, reinterpret_cast<const float*>(act + (t0 + c) * act_bytes) + i);
            for (int r = 0; r < R; ++r) acc[r][c] = _mm512_fmadd_ps(wv[r], xv, acc[r][c]);
        }
    }
    for (int r = 0; r < R; ++r)
        for (int c = 0; c < C; ++c) y[(t0 + c) * n_rows + r0 + r] = _mm512_reduce_add_ps(acc[r][c]);
}

// Picks the tile shape for the rows and tokens left, so edges need no special code.
template <typename Kernel>
void run_tiles(const WeightMatrix& w, const uint8_t* act, size_t act_bytes, int64_t n_tokens,
               float* y, int64_t row_begin, int64_t row_end) {
    for (int64_t r = row_begin; r < row_end; r += 4) {
        const int64_t rows = std::min<int64_t>(4, row_end - r);
        for (int64_t t = 0; t < n_tokens; t += 4) {
            const int64_t cols = std::min<int64_t>(4, n_tokens - t);
            Kernel::run(rows, cols, w, act, act_bytes, r, t, w.rows, y);
        }
    }
}

#define KITE_TILE_SWITCH(CALL) \
    switch (rows * 4 + cols) { \
        case 5:                \
            CALL(1, 1);        \
            break;             \
        case 6:                \
            CALL(1, 2);        \
            break;             \
        case 7:                \
            CALL(1, 3);        \
            break;             \
        case 8:                \
            CALL(1, 4);        \
            break;             \
        case 9:                \
            CALL(2, 1);        \
            break;             \
        case 10:               \
            CALL(2, 2);        \
            break;             \
        case 11:               \
            CALL(2, 3);        \
            break;             \
        case 12:               \
            CALL(2, 4);        \
            break;             \
        case 13:               \
            CALL(3, 1);        \
            break;             \
        case 14:               \
            CALL(3, 2);        \
            break;             \
        case 15:               \
            CALL(3, 3);        \
            break;             \
        case 16:               \
            CALL(3, 4);        \
            break;             \
        case 17:               \
            CALL(4, 1);        \
            break;             \
        case 18:               \
            CALL(4, 2);        \
            break;             \
        case 19:               \
            CALL(4, 3);        \
            break;             \
        default:               \
            CALL(4, 4);        \
            break;             \
    }

template <typename K>
struct BlockKernel {
    static void run(int64_t rows, int64_t cols, const WeightMatrix& w, const uint8_t* act,
                    size_t act_bytes, int64_t r0, int64_t t0, int64_t n_rows, float* y) {
#define KITE_CALL(R, C) tile<K, R, C>(w, act, act_bytes, r0, t0, n_rows, y)
        KITE_TILE_SWITCH(KITE_CALL)
#undef KITE_CALL
    }
};

template <TensorType T>
struct FloatKernel {
    static void run(int64_t rows, int64_t cols, const WeightMatrix& w, const uint8_t* act,
                    size_t act_bytes, int64_t r0, int64_t t0, int64_t n_rows, float* y) {
#define KITE_CALL(R, C) tile_float<T, R, C>(w, act, act_bytes, r0, t0, n_rows, y)
        KITE_TILE_SWITCH(KITE_CALL)
#undef KITE_CALL
    }
};

bool has_avx512_vnni() {
    return cpu_features().avx512_vnni && cpu_features().avx512_dq && cpu_features().f16c;
}

}  // namespace

GemmFn gemm_fast(TensorType type) {
    if (!has_avx512_vnni()) return nullptr;
    switch (type) {
        case TensorType::Q4_1:
            return run_tiles<BlockKernel<Q41>>;
        case TensorType::Q4_0:
            return run_tiles<BlockKernel<Q40>>;
        case TensorType::Q8_0:
            return run_tiles<BlockKernel<Q80>>;
        case TensorType::F32:
            return run_tiles<FloatKernel<TensorType::F32>>;
        case TensorType::F16:
            return run_tiles<FloatKernel<TensorType::F16>>;
        case TensorType::BF16:
            return run_tiles<FloatKernel<TensorType::BF16>>;
        default:
            return nullptr;
    }
}

}  // namespace kite
