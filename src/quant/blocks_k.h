// K-quant block formats of GGUF files (ggml's Q2_K ... Q6_K), bit-compatible with ggml: a
// super-block of 256 weights split into sub-blocks of 16 or 32, each with a small integer
// scale (and minimum) relative to the super-block's f16 scale(s). Q4_K_M files, the kind most
// people download, are mostly Q4_K and Q6_K.
#pragma once

#include <cstddef>
#include <cstdint>

namespace kite {

constexpr int kQK_K = 256;  // weights per K-quant super-block

// x = d * sc * q - dmin * m, q in [0, 3], per 16 weights a 4-bit scale sc (low nibble of
// scales[i]) and 4-bit minimum m (high nibble). Weight 128 h + 32 s + l is bits 2s..2s+1 of
// qs[32 h + l].
struct BlockQ2_K {
    uint8_t scales[kQK_K / 16];
    uint8_t qs[kQK_K / 4];
    uint16_t d;
    uint16_t dmin;
};
static_assert(sizeof(BlockQ2_K) == 84);

// x = d * (sc - 32) * (q - 4 h'), q in [0, 3] as in Q2_K, h' = 1 where the weight's hmask bit
// is clear (bit i of hmask[l] for weight 32 i + l); 6-bit scales per 16 weights: low 4 bits
// in nibbles of scales[0..7] (weights 0-127 low nibbles, 128-255 high), high 2 bits in
// scales[8..11].
struct BlockQ3_K {
    uint8_t hmask[kQK_K / 8];
    uint8_t qs[kQK_K / 4];
    uint8_t scales[12];
    uint16_t d;
};
static_assert(sizeof(BlockQ3_K) == 110);

// x = d * sc * q - dmin * m, q in [0, 15], a 6-bit scale and minimum per 32 weights packed in
// 12 bytes (k_scale_min). Sub-blocks 2g and 2g + 1 are the low and high nibbles of
// qs[32 g .. 32 g + 31].
struct BlockQ4_K {
    uint16_t d;
    uint16_t dmin;
    uint8_t scales[12];
    uint8_t qs[kQK_K / 2];
};
static_assert(sizeof(BlockQ4_K) == 144);

// As Q4_K with a fifth bit per weight: bit i of qh[l] for weight 32 i + l.
struct BlockQ5_K {
    uint16_t d;
    uint16_t dmin;
    uint8_t scales[12];
    uint8_t qh[kQK_K / 8];
    uint8_t qs[kQK_K / 2];
};
static_assert(sizeof(BlockQ5_K) == 176);

// x = d * sc * (q - 32), q in [0, 63], a signed 8-bit scale per 16 weights. Weight
// 128 h + 64 k + l (l < 64) has its low 4 bits in nibble k of ql[64 h + l]; weight
// 128 h + 32 s + l (l < 32) its high 2 bits in bits 2s..2s+1 of qh[32 h + l].
struct BlockQ6_K {
    uint8_t ql[kQK_K / 2];
    uint8_t qh[kQK_K / 4];
    int8_t scales[kQK_K / 16];
    uint16_t d;
};
static_assert(sizeof(BlockQ6_K) == 210);

// Activations multiplied with K-quant weights: x = d * q with a float scale, and the sum of
// each 16 q, which carries the weights' minimums through the dot product.
struct BlockQ8_K {
    float d;
    int8_t qs[kQK_K];
    int16_t bsums[kQK_K / 16];
};
static_assert(sizeof(BlockQ8_K) == 292);

// Scale and minimum of sub-block j (0..7) of a Q4_K/Q5_K block's 12 packed bytes: j < 4 in the
// low 6 bits of bytes j and j + 4; j >= 4 in a nibble of byte j + 4 plus the top 2 bits of
// bytes j - 4 and j.
struct ScaleMin {
    uint8_t scale;
    uint8_t min;
};
inline ScaleMin k_scale_min(const uint8_t* s, int j) {
    if (j < 4) return {static_cast<uint8_t>(s[j] & 63), static_cast<uint8_t>(s[j + 4] & 63)};
    return {static_cast<uint8_t>((s[j + 4] & 0x0f) | (s[j - 4] >> 6) << 4),
            static_cast<uint8_t>((s[j + 4] >> 4) | (s[j] >> 6) << 4)};
}

// The signed 6-bit scale (-32..31) of sub-block j (0..15) of a Q3_K block.
inline int q3_k_scale(const uint8_t* s, int j) {
    const int low = j < 8 ? s[j] & 0x0f : s[j - 8] >> 4;
    const int high = (s[8 + j % 4] >> (2 * (j / 4))) & 3;
    return (low | high << 4) - 32;
}

// Rows of n values, n a multiple of 256.
void dequantize_row_q2_k(const BlockQ2_K* x, float* y, size_t n);
void dequantize_row_q3_k(const BlockQ3_K* x, float* y, size_t n);
void dequantize_row_q4_k(const BlockQ4_K* x, float* y, size_t n);
void dequantize_row_q5_k(const BlockQ5_K* x, float* y, size_t n);
void dequantize_row_q6_k(const BlockQ6_K* x, float* y, size_t n);

// The bytes of ggml's reference quantizers without an importance matrix
// (quantize_row_q4_K_ref etc.), which is what llama-quantize writes without --imatrix.
void quantize_row_q4_k(const float* x, BlockQ4_K* y, size_t n);
void quantize_row_q5_k(const float* x, BlockQ5_K* y, size_t n);
void quantize_row_q6_k(const float* x, BlockQ6_K* y, size_t n);

// Activations for the K-quant dot products, as ggml's quantize_row_q8_K_ref.
void quantize_row_q8_k(const float* x, BlockQ8_K* y, size_t n);

}  // namespace kite
