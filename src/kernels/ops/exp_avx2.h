// exp() of 8 floats at once: exp16's computation for CPUs with AVX2 but no AVX-512 (same
// clamp, range reduction and degree-7 polynomial, so the results are bit-identical).
#pragma once

#if defined(__x86_64__)
#include <immintrin.h>

namespace kite {

__attribute__((target("avx2,fma"))) inline __m256 exp8(__m256 x) {
    // Beyond these, expf overflows to inf or underflows past the normal range.
    x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-87.3f)), _mm256_set1_ps(88.7f));
    const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504f)),
                                     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    // ln 2 in two parts, so n * ln2_hi is exact and r keeps its low bits.
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693145752f), x);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(1.42860677e-6f), r);
    __m256 p = _mm256_set1_ps(1.0f / 5040);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 720));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
    // p * 2^n by adding n to p's exponent field (AVX2 has no scalef). The clamp keeps the
    // result normal: n = -126 only when r > 0 (p >= 1, biased exponent 127 - 126 = 1), and
    // n = 128 only when r < 0 (p < 1, biased exponent 126 + 128 = 254).
    const __m256i shift = _mm256_slli_epi32(_mm256_cvtps_epi32(n), 23);
    return _mm256_castsi256_ps(_mm256_add_epi32(_mm256_castps_si256(p), shift));
}

}  // namespace kite
#endif
