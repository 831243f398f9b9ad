// Packed weights unpacked to one level per byte, the form the AMX int8 tiles multiply (a tile
// product reads whole bytes; the packed layouts hold nibbles and high bits). Shared by the
// tile kernels of packed_gemm_amx.cpp and packed_gemm_amx_k.cpp.
#pragma once

#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
// GCC 12's tile intrinsics read their uninitialised tile variables.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <cstdint>

#include "gguf/tensor_type.h"
#include "kernels/gemm/packed_k_layout.h"

#define KITE_AMX                                                         \
    __attribute__((                                                      \
        target("amx-tile,amx-int8,avx512f,avx512bw,avx512vl,avx512vnni," \
               "avx512dq,f16c,fma")))

namespace kite::packed::amx {

// The low and high nibbles of a pair register: quads 2p and 2p + 1.
KITE_AMX inline void unpack_pair(const uint8_t* src, uint8_t* dst) {
    const __m512i v = _mm512_loadu_si512(src), low = _mm512_set1_epi8(0x0f);
    _mm512_storeu_si512(dst, _mm512_and_si512(v, low));
    _mm512_storeu_si512(dst + 64, _mm512_and_si512(_mm512_srli_epi16(v, 4), low));
}

// The levels of one packed K-quant super-block of 16 rows (packed_k_layout.h): 64 quads x 16
// rows x 4 bytes, in the order a tile product reads its second operand.
template <TensorType T>
KITE_AMX inline void unpack_k_levels(const uint8_t* sb, uint8_t* dst) {
    constexpr KLayout l = k_layout(T, 16);
    static_assert(l.low_bits == 4, "AMX tiles unpack nibbles (Q4_K, Q5_K, Q6_K)");
    for (int p = 0; p < 32; ++p) unpack_pair(sb + 64 * p, dst + 128 * p);
    if constexpr (l.high_regs > 0) {
        const __m512i mask = _mm512_set1_epi8(static_cast<char>((1 << l.high_bits()) - 1));
        for (int q = 0; q < 64; ++q) {
            const __m512i reg =
                _mm512_loadu_si512(sb + l.high_offset() + 64 * (q / l.quads_per_high()));
            const __m128i shift = _mm_cvtsi32_si128((q % l.quads_per_high()) * l.high_bits());
            const __m512i bits = _mm512_and_si512(_mm512_srl_epi16(reg, shift), mask);
            uint8_t* level = dst + 64 * q;
            _mm512_storeu_si512(
                level, _mm512_or_si512(_mm512_loadu_si512(level), _mm512_slli_epi16(bits, 4)));
        }
    }
}

}  // namespace kite::packed::amx
