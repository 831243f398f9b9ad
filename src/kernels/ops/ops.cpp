// GCC 12's AVX-512 headers trip -Wuninitialized where inlined (GCC bug 105593).
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include "kernels/ops/ops.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/cpu/isa.h"
#include "kernels/ops/exp_avx2.h"
#include "kernels/ops/exp_avx512.h"
#include "quant/fp16.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace kite {

namespace {

// Sums over a row in double: a long row of squares loses bits in float. kSquares: the terms
// are double(x[i] - center)^2 (exact: the square of a float fits a double), else double(x[i]).
// The SIMD paths differ from the scalar one only in the order of the additions (the last
// bits of a double, far below the float a norm returns).
template <bool kSquares>
double row_sum_scalar(const float* x, int64_t n, float center) {
    double sum = 0;
    for (int64_t i = 0; i < n; ++i) {
        if constexpr (kSquares) {
            const float v = x[i] - center;
            sum += double(v) * v;
        } else {
            sum += x[i];
        }
    }
    return sum;
}

#if defined(__x86_64__)
// Two chains of 8 doubles: the scalar loop waits for each addition (on Gemma 3, which norms
// every row six times a layer, the largest of a prompt's steps outside the matmuls).
template <bool kSquares>
__attribute__((target("avx512f"))) double row_sum_avx512(const float* x, int64_t n, float center) {
    const __m256 c = _mm256_set1_ps(center);
    __m512d a = _mm512_setzero_pd(), b = _mm512_setzero_pd();
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const __m256 lo = _mm256_loadu_ps(x + i), hi = _mm256_loadu_ps(x + i + 8);
        if constexpr (kSquares) {
            const __m512d l = _mm512_cvtps_pd(_mm256_sub_ps(lo, c));
            const __m512d h = _mm512_cvtps_pd(_mm256_sub_ps(hi, c));
            a = _mm512_fmadd_pd(l, l, a);
            b = _mm512_fmadd_pd(h, h, b);
        } else {
            a = _mm512_add_pd(a, _mm512_cvtps_pd(lo));
            b = _mm512_add_pd(b, _mm512_cvtps_pd(hi));
        }
    }
    return _mm512_reduce_add_pd(_mm512_add_pd(a, b)) +
           row_sum_scalar<kSquares>(x + i, n - i, center);
}

template <bool kSquares>
__attribute__((target("avx2,fma"))) double row_sum_avx2(const float* x, int64_t n, float center) {
    const __m128 c = _mm_set1_ps(center);
    __m256d a = _mm256_setzero_pd(), b = _mm256_setzero_pd();
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m128 lo = _mm_loadu_ps(x + i), hi = _mm_loadu_ps(x + i + 4);
        if constexpr (kSquares) {
            const __m256d l = _mm256_cvtps_pd(_mm_sub_ps(lo, c));
            const __m256d h = _mm256_cvtps_pd(_mm_sub_ps(hi, c));
            a = _mm256_fmadd_pd(l, l, a);
            b = _mm256_fmadd_pd(h, h, b);
        } else {
            a = _mm256_add_pd(a, _mm256_cvtps_pd(lo));
            b = _mm256_add_pd(b, _mm256_cvtps_pd(hi));
        }
    }
    const __m256d ab = _mm256_add_pd(a, b);
    const __m128d half = _mm_add_pd(_mm256_castpd256_pd128(ab), _mm256_extractf128_pd(ab, 1));
    return _mm_cvtsd_f64(_mm_add_sd(half, _mm_unpackhi_pd(half, half))) +
           row_sum_scalar<kSquares>(x + i, n - i, center);
}
#endif

template <bool kSquares>
double row_sum(const float* x, int64_t n, float center = 0.0f) {
#if defined(__x86_64__)
    const Isa isa = active_isa();
    if (isa >= Isa::Avx512) return row_sum_avx512<kSquares>(x, n, center);
    if (isa >= Isa::Avx2) return row_sum_avx2<kSquares>(x, n, center);
#endif
    return row_sum_scalar<kSquares>(x, n, center);
}

}  // namespace

void rms_norm(const float* x, const float* weight, float* out, int64_t n, float eps) {
    const float scale = 1.0f / std::sqrt(static_cast<float>(row_sum<true>(x, n) / n) + eps);
    for (int64_t i = 0; i < n; ++i) out[i] = x[i] * scale * weight[i];
}

void layer_norm(const float* x, const float* weight, const float* bias, float* out, int64_t n,
                float eps) {
    const auto mean = static_cast<float>(row_sum<false>(x, n) / n);
    const double squares = row_sum<true>(x, n, mean);
    const float scale = 1.0f / std::sqrt(static_cast<float>(squares / n) + eps);
    for (int64_t i = 0; i < n; ++i) out[i] = (x[i] - mean) * scale * weight[i] + bias[i];
}

namespace {

void angles(const RopeParams& p, int64_t position, float mscale, float* cos_sin) {
    const float theta_scale = std::pow(p.freq_base, -2.0f / static_cast<float>(p.n_rot));
    float theta_base = static_cast<float>(position);
    for (int64_t i = 0; i < p.n_rot / 2; ++i) {
        const float extrapolated = p.freq_factors ? theta_base / p.freq_factors[i] : theta_base;
        float theta = p.freq_scale * extrapolated;
        if (p.ext_factor != 0.0f) {
            const float y =
                (static_cast<float>(i) - p.corr_low) / std::max(0.001f, p.corr_high - p.corr_low);
            const float ramp = (1.0f - std::min(1.0f, std::max(0.0f, y))) * p.ext_factor;
            theta = theta * (1.0f - ramp) + extrapolated * ramp;
        }
        cos_sin[2 * i] = std::cos(theta) * mscale;
        cos_sin[2 * i + 1] = std::sin(theta) * mscale;
        theta_base *= theta_scale;
    }
}

}  // namespace

void rope_angles(const RopeParams& p, int64_t position, float* cos_sin) {
    // YaRN keeps the unscaled angle's magnitude growth; LongRoPE and YaRN give attn_factor.
    const float mscale =
        p.attn_factor * (p.ext_factor != 0.0f ? 1.0f + 0.1f * std::log(1.0f / p.freq_scale) : 1.0f);
    angles(p, position, mscale, cos_sin);
}

void rope_shift_angles(const RopeParams& p, int64_t delta, float* cos_sin) {
    angles(p, delta, 1.0f, cos_sin);
}

void rope_rotate(float* head, const float* cos_sin, int64_t n_rot, RopeStyle style) {
    for (int64_t i = 0; i < n_rot / 2; ++i) {
        const float c = cos_sin[2 * i], s = cos_sin[2 * i + 1];
        const int64_t a = style == RopeStyle::Interleaved ? 2 * i : i;
        const int64_t b = style == RopeStyle::Interleaved ? 2 * i + 1 : i + n_rot / 2;
        const float x0 = head[a], x1 = head[b];
        head[a] = x0 * c - x1 * s;
        head[b] = x0 * s + x1 * c;
    }
}

void rope(float* head, int64_t n_rot, int64_t position, float freq_base, RopeStyle style) {
    float cos_sin[kMaxRopeDims];
    rope_angles({.style = style, .n_rot = n_rot, .freq_base = freq_base}, position, cos_sin);
    rope_rotate(head, cos_sin, n_rot, style);
}

// gelu_tanh(x) = 0.5 x (1 + tanh(u)) = x * sigmoid(2u) = x / (1 + exp(-2u)) with
// u = sqrt(2/pi) (x + 0.044715 x^3): the SIMD paths need one exp, like SiLU's.
constexpr float kGeluA = 0.044715f, kGeluTwoB = 2.0f * 0.7978845608f;

#if defined(__x86_64__)
__attribute__((target("avx512f,fma"))) static void swiglu_avx512(float* gate, const float* up,
                                                                 int64_t n) {
    const __m512 one = _mm512_set1_ps(1.0f);
    for (int64_t i = 0; i < n; i += 16) {
        const __mmask16 m = n - i >= 16 ? __mmask16(0xffff) : __mmask16((1u << (n - i)) - 1);
        const __m512 g = _mm512_maskz_loadu_ps(m, gate + i);
        const __m512 e = exp16(_mm512_sub_ps(_mm512_setzero_ps(), g));
        const __m512 silu = _mm512_div_ps(g, _mm512_add_ps(one, e));
        _mm512_mask_storeu_ps(gate + i, m, _mm512_mul_ps(silu, _mm512_maskz_loadu_ps(m, up + i)));
    }
}

__attribute__((target("avx2,fma"))) static void swiglu_avx2(float* gate, const float* up,
                                                            int64_t n) {
    const __m256 one = _mm256_set1_ps(1.0f);
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    for (int64_t i = 0; i < n; i += 8) {
        // Lanes past the end are neither read nor written.
        const __m256i m = _mm256_cmpgt_epi32(
            _mm256_set1_epi32(static_cast<int>(std::min<int64_t>(n - i, 8))), lane);
        const __m256 g = _mm256_maskload_ps(gate + i, m);
        const __m256 e = exp8(_mm256_sub_ps(_mm256_setzero_ps(), g));
        const __m256 silu = _mm256_div_ps(g, _mm256_add_ps(one, e));
        _mm256_maskstore_ps(gate + i, m, _mm256_mul_ps(silu, _mm256_maskload_ps(up + i, m)));
    }
}

__attribute__((target("avx512f,fma"))) static void geglu_tanh_avx512(float* gate, const float* up,
                                                                     int64_t n) {
    const __m512 one = _mm512_set1_ps(1.0f), a = _mm512_set1_ps(kGeluA);
    const __m512 minus_two_b = _mm512_set1_ps(-kGeluTwoB);
    for (int64_t i = 0; i < n; i += 16) {
        const __mmask16 m = n - i >= 16 ? __mmask16(0xffff) : __mmask16((1u << (n - i)) - 1);
        const __m512 x = _mm512_maskz_loadu_ps(m, gate + i);
        const __m512 inner = _mm512_fmadd_ps(_mm512_mul_ps(a, x), _mm512_mul_ps(x, x), x);
        const __m512 e = exp16(_mm512_mul_ps(minus_two_b, inner));
        const __m512 gelu = _mm512_div_ps(x, _mm512_add_ps(one, e));
        _mm512_mask_storeu_ps(gate + i, m, _mm512_mul_ps(gelu, _mm512_maskz_loadu_ps(m, up + i)));
    }
}

__attribute__((target("avx2,fma"))) static void geglu_tanh_avx2(float* gate, const float* up,
                                                                int64_t n) {
    const __m256 one = _mm256_set1_ps(1.0f), a = _mm256_set1_ps(kGeluA);
    const __m256 minus_two_b = _mm256_set1_ps(-kGeluTwoB);
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    for (int64_t i = 0; i < n; i += 8) {
        const __m256i m = _mm256_cmpgt_epi32(
            _mm256_set1_epi32(static_cast<int>(std::min<int64_t>(n - i, 8))), lane);
        const __m256 x = _mm256_maskload_ps(gate + i, m);
        const __m256 inner = _mm256_fmadd_ps(_mm256_mul_ps(a, x), _mm256_mul_ps(x, x), x);
        const __m256 e = exp8(_mm256_mul_ps(minus_two_b, inner));
        const __m256 gelu = _mm256_div_ps(x, _mm256_add_ps(one, e));
        _mm256_maskstore_ps(gate + i, m, _mm256_mul_ps(gelu, _mm256_maskload_ps(up + i, m)));
    }
}

__attribute__((target("f16c,avx"))) static void f32_to_f16_f16c(const float* src, uint16_t* dst,
                                                                int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i),
                         _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT));
    for (; i < n; ++i) dst[i] = f32_to_f16(src[i]);
}
#endif

// Both read active_isa() at each call, so that set_isa_cap takes effect at once.
void swiglu(float* gate, const float* up, int64_t n) {
#if defined(__x86_64__)
    const Isa isa = active_isa();
    if (isa >= Isa::Avx512) return swiglu_avx512(gate, up, n);
    if (isa >= Isa::Avx2) return swiglu_avx2(gate, up, n);
#endif
    for (int64_t i = 0; i < n; ++i) gate[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
}

void geglu_tanh(float* gate, const float* up, int64_t n) {
#if defined(__x86_64__)
    const Isa isa = active_isa();
    if (isa >= Isa::Avx512) return geglu_tanh_avx512(gate, up, n);
    if (isa >= Isa::Avx2) return geglu_tanh_avx2(gate, up, n);
#endif
    for (int64_t i = 0; i < n; ++i) {
        const float x = gate[i];
        gate[i] =
            0.5f * x * (1.0f + std::tanh(0.5f * kGeluTwoB * (x + kGeluA * x * x * x))) * up[i];
    }
}

void gelu_tanh(float* x, int64_t n) {
    // gelu(x) = geglu(x, 1): the same kernels, given a row of ones as the up projection.
    constexpr int64_t kChunk = 1024;
    static const std::vector<float> ones(kChunk, 1.0f);
    for (int64_t i = 0; i < n; i += kChunk) geglu_tanh(x + i, ones.data(), std::min(kChunk, n - i));
}

void f32_to_f16_row(const float* src, uint16_t* dst, int64_t n) {
#if defined(__x86_64__)
    if (active_isa() >= Isa::Avx2) return f32_to_f16_f16c(src, dst, n);
#endif
    for (int64_t i = 0; i < n; ++i) dst[i] = f32_to_f16(src[i]);
}

void add_in_place(float* x, const float* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) x[i] += y[i];
}

}  // namespace kite
