// 5-bit block formats of GGUF files (ggml's Q5_0 and Q5_1), bit-compatible with ggml: a block
// holds 32 weights as 4-bit low parts (laid out as Q4_0's nibbles) plus one high bit each.
// Q4_K_M files keep tensors whose rows do not fill 256-value blocks in Q5_0.
#pragma once

#include <cstddef>
#include <cstdint>

#include "quant/blocks.h"

namespace kite {

// x = d * (q - 16), q in [0, 31]: low 4 bits of weight j in qs[j % 16] (low nibble for
// j < 16, high nibble otherwise), bit 4 in bit j of the little-endian 32-bit qh.
struct BlockQ5_0 {
    uint16_t d;  // f16 scale
    uint8_t qh[4];
    uint8_t qs[kQK / 2];
};
static_assert(sizeof(BlockQ5_0) == 22);

// x = d * q + m, q in [0, 31]; bits laid out as in Q5_0.
struct BlockQ5_1 {
    uint16_t d;
    uint16_t m;
    uint8_t qh[4];
    uint8_t qs[kQK / 2];
};
static_assert(sizeof(BlockQ5_1) == 24);

// The 5-bit value of weight j (0..31) of a Q5_0 or Q5_1 block.
template <typename Block>
inline int q5_value(const Block& b, int j) {
    const uint32_t qh = b.qh[0] | b.qh[1] << 8 | b.qh[2] << 16 | uint32_t(b.qh[3]) << 24;
    const int low = j < kQK / 2 ? b.qs[j] & 0x0f : b.qs[j - kQK / 2] >> 4;
    return low | int((qh >> j) & 1) << 4;
}

// Rows of n values, n a multiple of 32; the quantizers give the bytes of ggml's reference
// quantizers (quantize_row_q5_0_ref / _q5_1_ref).
void quantize_row_q5_0(const float* x, BlockQ5_0* y, size_t n);
void quantize_row_q5_1(const float* x, BlockQ5_1* y, size_t n);

void dequantize_row_q5_0(const BlockQ5_0* x, float* y, size_t n);
void dequantize_row_q5_1(const BlockQ5_1* x, float* y, size_t n);

}  // namespace kite
