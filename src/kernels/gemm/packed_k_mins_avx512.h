// A packed K-quant super-block's minimums as the int16 pairs of vpdpwssd (packed_k_layout.h),
// for the AVX-512 kernels and the AMX ones, which sum M the same way.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "kernels/gemm/packed_k_layout.h"

namespace kite::packed {

// Minimum pair k of a super-block of 16 rows laid out as l: (t = 2k, 2k + 1) of row r in lanes
// 2r and 2r + 1. Q6_K's are its scales, interleaved here from two sub-blocks' rows.
template <KLayout l>
__attribute__((target("avx512f,avx512bw"), always_inline)) inline __m512i min_pair(
    const uint8_t* sb, int k) {
    static_assert(l.rows == 16);
    if constexpr (l.mins_are_scales) {
        const uint8_t* scales = sb + l.scale_offset() + 2 * k * l.rows;
        const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(scales));
        const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(scales + l.rows));
        return _mm512_cvtepi8_epi16(
            _mm256_set_m128i(_mm_unpackhi_epi8(a, b), _mm_unpacklo_epi8(a, b)));
    } else {
        return _mm512_cvtepi8_epi16(_mm256_loadu_si256(
            reinterpret_cast<const __m256i*>(sb + l.min_offset() + 2 * l.rows * k)));
    }
}

}  // namespace kite::packed
