// One row's step of a tile's online softmax over a key block, in AVX-512 registers: shared by
// the AVX-512 tile kernel and the AMX one, which differ only in how they multiply.
#pragma once

#if defined(__x86_64__)
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "kernels/attention/tiled_attention.h"
#include "kernels/ops/exp_avx512.h"

namespace kite {

// Its scores s at the positions `bits` become exp(s - m') (the others zeros), where m' is the
// new running maximum; m, l are updated; returns exp(m - m'), the factor its earlier sums are
// scaled by.
__attribute__((target("avx512f,avx512dq,fma"))) inline float softmax_step(float* s, uint64_t bits,
                                                                          float& m, float& l) {
    constexpr int kKeyVecs = int(kTileKeys / 16);
    if (bits == 0) {
        for (int c = 0; c < kKeyVecs; ++c) _mm512_storeu_ps(s + 16 * c, _mm512_setzero_ps());
        return 1.0f;
    }
    const __m512 minus_inf = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
    __m512 v[kKeyVecs], top = minus_inf;
    __mmask16 k[kKeyVecs];
    for (int c = 0; c < kKeyVecs; ++c) {
        k[c] = static_cast<__mmask16>(bits >> (16 * c));
        v[c] = _mm512_mask_loadu_ps(minus_inf, k[c], s + 16 * c);
        top = _mm512_max_ps(top, v[c]);
    }
    const float new_max = std::max(m, _mm512_reduce_max_ps(top));
    // Past a row's first blocks its maximum seldom moves: exp(0) is 1 without the call.
    const float correction = new_max == m ? 1.0f : std::exp(m - new_max);
    __m512 sum = _mm512_setzero_ps();
    for (int c = 0; c < kKeyVecs; ++c) {
        const __m512 w = k[c] == 0 ? _mm512_setzero_ps()
                                   : _mm512_maskz_mov_ps(
                                         k[c], exp16(_mm512_sub_ps(v[c], _mm512_set1_ps(new_max))));
        _mm512_storeu_ps(s + 16 * c, w);
        sum = _mm512_add_ps(sum, w);
    }
    l = l * correction + _mm512_reduce_add_ps(sum);
    m = new_max;
    return correction;
}

}  // namespace kite
#endif
