// The AVX2 + FMA + F16C dot products (compiled for those extensions whatever the build's
// target; callers check the CPU first).
#include <immintrin.h>

#include <cstdint>

#include "kernels/gemm/dot_products.h"
#include "quant/blocks.h"
#include "quant/fp16.h"

namespace kite::dot_avx2 {

namespace {

#define KITE_AVX2 __attribute__((target("avx2,fma,f16c")))

// F16C converts in one instruction; the portable f16_to_f32 branches on the exponent.
KITE_AVX2 inline float h2f(uint16_t h) {
    return _cvtsh_ss(h);
}

KITE_AVX2 inline float hsum(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

// Sum of 32 products of signed bytes, as 8 int32 lanes turned float.
KITE_AVX2 inline __m256 mul_sum_i8(__m256i x, __m256i y) {
    const __m256i ax = _mm256_sign_epi8(x, x);  // |x|, and y takes x's sign: maddubs needs u8
    const __m256i sy = _mm256_sign_epi8(y, x);
    const __m256i dot16 = _mm256_maddubs_epi16(ax, sy);
    return _mm256_cvtepi32_ps(_mm256_madd_epi16(dot16, _mm256_set1_epi16(1)));
}

// 32 nibbles of a Q4 block as bytes 0..15, in weight order (low nibbles first).
KITE_AVX2 inline __m256i unpack_nibbles(const uint8_t* qs) {
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
    const __m256i both = _mm256_set_m128i(_mm_srli_epi16(b, 4), b);
    return _mm256_and_si256(both, _mm256_set1_epi8(0x0f));
}

KITE_AVX2 inline __m256 load_bf16x8(const uint16_t* p) {
    const __m256i wide =
        _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(wide, 16));
}

}  // namespace

KITE_AVX2 float f32(const void* w, const void* a, size_t n) {
    auto* x = static_cast<const float*>(w);
    auto* y = static_cast<const float*>(a);
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i), acc0);
        acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i + 8), _mm256_loadu_ps(y + i + 8), acc1);
    }
    float sum = hsum(_mm256_add_ps(acc0, acc1));
    for (; i < n; ++i) sum += x[i] * y[i];
    return sum;
}

KITE_AVX2 float f16(const void* w, const void* a, size_t n) {
    auto* x = static_cast<const uint16_t*>(w);
    auto* y = static_cast<const float*>(a);
    __m256 acc = _mm256_setzero_ps();
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 xf = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i)));
        acc = _mm256_fmadd_ps(xf, _mm256_loadu_ps(y + i), acc);
    }
    float sum = hsum(acc);
    for (; i < n; ++i) sum += f16_to_f32(x[i]) * y[i];
    return sum;
}

KITE_AVX2 float bf16(const void* w, const void* a, size_t n) {
    auto* x = static_cast<const uint16_t*>(w);
    auto* y = static_cast<const uint16_t*>(a);
    __m256 acc = _mm256_setzero_ps();
    size_t i = 0;
    for (; i + 8 <= n; i += 8) acc = _mm256_fmadd_ps(load_bf16x8(x + i), load_bf16x8(y + i), acc);
    float sum = hsum(acc);
    for (; i < n; ++i) sum += bf16_to_f32(x[i]) * bf16_to_f32(y[i]);
    return sum;
}

KITE_AVX2 float q8_0(const void* w, const void* a, size_t n) {
    auto* x = static_cast<const BlockQ8_0*>(w);
    auto* y = static_cast<const BlockQ8_0*>(a);
    __m256 acc = _mm256_setzero_ps();
    for (size_t b = 0; b < n / kQK; ++b) {
        const __m256 d = _mm256_set1_ps(h2f(x[b].d) * h2f(y[b].d));
        const __m256i qx = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[b].qs));
        const __m256i qy = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y[b].qs));
        acc = _mm256_fmadd_ps(d, mul_sum_i8(qx, qy), acc);
    }
    return hsum(acc);
}

KITE_AVX2 float q4_0(const void* w, const void* a, size_t n) {
    auto* x = static_cast<const BlockQ4_0*>(w);
    auto* y = static_cast<const BlockQ8_0*>(a);
    __m256 acc = _mm256_setzero_ps();
    for (size_t b = 0; b < n / kQK; ++b) {
        const __m256 d = _mm256_set1_ps(h2f(x[b].d) * h2f(y[b].d));
        const __m256i qx = _mm256_sub_epi8(unpack_nibbles(x[b].qs), _mm256_set1_epi8(8));
        const __m256i qy = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y[b].qs));
        acc = _mm256_fmadd_ps(d, mul_sum_i8(qx, qy), acc);
    }
    return hsum(acc);
}

KITE_AVX2 float q4_1(const void* w, const void* a, size_t n) {
    auto* x = static_cast<const BlockQ4_1*>(w);
    auto* y = static_cast<const BlockQ8_1*>(a);
    __m256 acc = _mm256_setzero_ps();
    float mins = 0;
    for (size_t b = 0; b < n / kQK; ++b) {
        const __m256 d = _mm256_set1_ps(h2f(x[b].d) * h2f(y[b].d));
        const __m256i qx = unpack_nibbles(x[b].qs);  // unsigned, as maddubs wants
        const __m256i qy = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y[b].qs));
        const __m256i dot16 = _mm256_maddubs_epi16(qx, qy);
        const __m256 dot = _mm256_cvtepi32_ps(_mm256_madd_epi16(dot16, _mm256_set1_epi16(1)));
        acc = _mm256_fmadd_ps(d, dot, acc);
        mins += h2f(x[b].m) * h2f(y[b].s);
    }
    return hsum(acc) + mins;
}

}  // namespace kite::dot_avx2
