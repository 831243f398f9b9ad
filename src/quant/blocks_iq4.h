// Non-linear 4-bit block formats of GGUF files (ggml's IQ4_NL and IQ4_XS), bit-compatible with
// ggml: each 4-bit index picks one of 16 fixed levels, spaced closer near zero where weights
// are dense, times the block's scale.
#pragma once

#include <cstddef>
#include <cstdint>

#include "quant/blocks.h"
#include "quant/blocks_k.h"

namespace kite {

// The 16 levels, shared by both formats.
inline constexpr int8_t kIq4Levels[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                          1,    13,   25,  38,  53,  69,  89,  113};

// x = d * level[q]; nibbles laid out as Q4_0's.
struct BlockIQ4_NL {
    uint16_t d;
    uint8_t qs[kQK / 2];
};
static_assert(sizeof(BlockIQ4_NL) == 18);

// 256 weights: x = d * (ls - 32) * level[q], a 6-bit ls per 32 weights (low 4 bits in a nibble
// of scales_l: sub-block 2i low, 2i + 1 high; high 2 bits at bits 2j of scales_h). Sub-block
// j's nibbles are laid out as Q4_0's in qs[16 j .. 16 j + 15].
struct BlockIQ4_XS {
    uint16_t d;
    uint16_t scales_h;
    uint8_t scales_l[kQK_K / 64];
    uint8_t qs[kQK_K / 2];
};
static_assert(sizeof(BlockIQ4_XS) == 136);

// The signed scale (-32..31) of sub-block j (0..7).
inline int iq4_xs_scale(const BlockIQ4_XS& b, int j) {
    const int low = (b.scales_l[j / 2] >> (4 * (j % 2))) & 0x0f;
    const int high = (b.scales_h >> (2 * j)) & 3;
    return (low | high << 4) - 32;
}

// Rows of n values (a multiple of 32 for IQ4_NL, of 256 for IQ4_XS).
void dequantize_row_iq4_nl(const BlockIQ4_NL* x, float* y, size_t n);
void dequantize_row_iq4_xs(const BlockIQ4_XS* x, float* y, size_t n);

}  // namespace kite
