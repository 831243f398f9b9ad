// GCC 12's AVX-512 headers trip -Wuninitialized where inlined (GCC bug 105593).
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include "kernels/ops.h"

#include <algorithm>
#include <cmath>

#include "kernels/exp_avx2.h"
#include "kernels/exp_avx512.h"
#include "kernels/isa.h"
#include "quant/fp16.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace kite {

void rms_norm(const float* x, const float* weight, float* out, int64_t n, float eps) {
    double sum = 0;  // double: a long row of squares loses bits in float
    for (int64_t i = 0; i < n; ++i) sum += double(x[i]) * x[i];
    const float scale = 1.0f / std::sqrt(static_cast<float>(sum / n) + eps);
    for (int64_t i = 0; i < n; ++i) out[i] = x[i] * scale * weight[i];
}

void rope(float* head, int64_t n_rot, int64_t position, float freq_base, RopeStyle style) {
    const float theta_scale = std::pow(freq_base, -2.0f / static_cast<float>(n_rot));
    float theta = static_cast<float>(position);
    for (int64_t i = 0; i < n_rot / 2; ++i) {
        const float c = std::cos(theta), s = std::sin(theta);
        const int64_t a = style == RopeStyle::Interleaved ? 2 * i : i;
        const int64_t b = style == RopeStyle::Interleaved ? 2 * i + 1 : i + n_rot / 2;
        const float x0 = head[a], x1 = head[b];
        head[a] = x0 * c - x1 * s;
        head[b] = x0 * s + x1 * c;
        theta *= theta_scale;
    }
}

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
