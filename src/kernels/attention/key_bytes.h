// Keys of the block KV types as 32 signed bytes per block, for the attention kernels' integer
// scores (AVX2 and AVX-512 both read them): Q8_0's bytes as they are, Q4_0's nibbles (value j
// in the low nibble of byte j, value j + 16 in its high one) unpacked and centred.
#pragma once

#if defined(__x86_64__)
#include <immintrin.h>

#include "quant/blocks.h"

namespace kite {

#define KITE_KEY_BYTES __attribute__((target("avx2")))

struct BytesQ8_0 {
    using Block = BlockQ8_0;
    KITE_KEY_BYTES static __m256i bytes(const Block& b) {
        return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs));
    }
};

struct BytesQ4_0 {
    using Block = BlockQ4_0;
    KITE_KEY_BYTES static __m256i bytes(const Block& b) {
        const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.qs));
        const __m128i low = _mm_set1_epi8(0x0f);
        const __m256i nibbles = _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(packed, 4), low),
                                                 _mm_and_si128(packed, low));
        return _mm256_sub_epi8(nibbles, _mm256_set1_epi8(8));
    }
};

#undef KITE_KEY_BYTES

}  // namespace kite
#endif
