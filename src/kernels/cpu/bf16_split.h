// Floats as sums of two bf16 parts, x = hi + lo, for the AMX bf16 tiles (tdpbf16ps): the
// attention tiles and the float-weight matmul tiles split their factors with these. Each part
// is rounded to nearest even, so hi + lo keeps 16 significant bits (an f16 value exactly).
// x86-64 with AVX512-BF16 only: include after <immintrin.h>, in code built for that target.
#pragma once

#define KITE_BF16_SPLIT __attribute__((target("avx512f,avx512bw,avx512bf16")))

namespace kite {

// x - bf16(x): what the rounding to bf16 leaves.
KITE_BF16_SPLIT inline __m512 bf16_residue(__m512 x) {
    const __m256i hi = (__m256i)_mm512_cvtneps_pbh(x);
    return _mm512_sub_ps(x, _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(hi), 16)));
}

// The bf16 pairs (even[i], odd[i]) of 16 lanes, rounded to nearest even: a row of a tile's
// second operand (B[k / 2][n][2]).
KITE_BF16_SPLIT inline __m512i interleaved_bf16(__m512 even, __m512 odd) {
    // 16-bit lanes 0..15 hold even[], 16..31 odd[]: take them alternately.
    const __m512i order =
        _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8, 23, 7, 22, 6,
                         21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
    return _mm512_permutexvar_epi16(order, (__m512i)_mm512_cvtne2ps_pbh(odd, even));
}

}  // namespace kite
