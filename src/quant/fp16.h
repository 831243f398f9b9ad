// IEEE half (f16) and bfloat16 conversions, scalar and exact (round to nearest even).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

namespace kite {

inline float f16_to_f32(uint16_t h) {
    uint32_t sign = uint32_t(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1f;
    uint32_t mant = h & 0x3ff;
    uint32_t bits;
    if (exp == 0x1f) {
        bits = sign | 0x7f800000 | (mant << 13);  // inf / nan
    } else if (exp != 0) {
        bits = sign | ((exp + 112) << 23) | (mant << 13);
    } else if (mant == 0) {
        bits = sign;  // signed zero
    } else {
        // Subnormal half: value = mant * 2^-24, normalise it into a float.
        int shift = 0;
        while ((mant & 0x400) == 0) mant <<= 1, shift++;
        bits = sign | (uint32_t(113 - shift) << 23) | ((mant & 0x3ff) << 13);
    }
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
}

inline uint16_t f32_to_f16(float f) {
    uint32_t x;
    std::memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000;
    uint32_t abs = x & 0x7fffffff;
    if (abs > 0x7f800000) return uint16_t(sign | 0x7e00);   // nan
    if (abs >= 0x477ff000) return uint16_t(sign | 0x7c00);  // overflows to inf
    if (abs < 0x38800000) {
        // Subnormal or zero: units of 2^-24, exact in float; nearbyint rounds to even.
        float scaled;
        std::memcpy(&scaled, &abs, 4);
        return uint16_t(sign | uint32_t(std::nearbyint(scaled * 16777216.0f)));
    }
    // Normal: drop 13 mantissa bits with round-to-nearest-even.
    uint32_t rounded = abs + 0xfff + ((abs >> 13) & 1);
    return uint16_t(sign | ((rounded - 0x38000000) >> 13));
}

inline float bf16_to_f32(uint16_t b) {
    uint32_t bits = uint32_t(b) << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
}

inline uint16_t f32_to_bf16(float f) {
    uint32_t x;
    std::memcpy(&x, &f, 4);
    if ((x & 0x7fffffff) > 0x7f800000) return uint16_t((x >> 16) | 64);  // quiet nan
    return uint16_t((x + 0x7fff + ((x >> 16) & 1)) >> 16);
}

}  // namespace kite
