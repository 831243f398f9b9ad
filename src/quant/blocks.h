// Quantized block formats of GGUF files, bit-compatible with ggml: a block holds 32 weights
// as small integers plus f16 scale (and minimum), so a weight costs 4.25 to 8.5 bits.
#pragma once

#include <cstddef>
#include <cstdint>

namespace kite {

constexpr int kQK = 32;  // weights per block for Q8_0, Q4_0, Q4_1

// x = d * q, q in [-127, 127].
struct BlockQ8_0 {
    uint16_t d;  // f16 scale
    int8_t qs[kQK];
};
static_assert(sizeof(BlockQ8_0) == 34);

// x = d * (q - 8), q in [0, 15]; byte j holds weight j (low nibble) and j + 16 (high nibble).
struct BlockQ4_0 {
    uint16_t d;
    uint8_t qs[kQK / 2];
};
static_assert(sizeof(BlockQ4_0) == 18);

// x = d * q + m, q in [0, 15]; nibbles laid out as in Q4_0.
struct BlockQ4_1 {
    uint16_t d;
    uint16_t m;
    uint8_t qs[kQK / 2];
};
static_assert(sizeof(BlockQ4_1) == 20);

// Activations multiplied with Q4_1 weights: Q8_0 plus s = d * sum(q), which carries the
// weights' per-block minimum through the dot product without a second pass.
struct BlockQ8_1 {
    uint16_t d;
    uint16_t s;
    int8_t qs[kQK];
};
static_assert(sizeof(BlockQ8_1) == 36);

// Rows of n values (n a multiple of 32 for the block formats). The quantizers give exactly
// the bytes of ggml's reference quantizers, so files match llama.cpp's byte for byte.
void quantize_row_q8_0(const float* x, BlockQ8_0* y, size_t n);
void quantize_row_q4_0(const float* x, BlockQ4_0* y, size_t n);
void quantize_row_q4_1(const float* x, BlockQ4_1* y, size_t n);

void dequantize_row_q8_0(const BlockQ8_0* x, float* y, size_t n);
void dequantize_row_q4_0(const BlockQ4_0* x, float* y, size_t n);
void dequantize_row_q4_1(const BlockQ4_1* x, float* y, size_t n);

}  // namespace kite
