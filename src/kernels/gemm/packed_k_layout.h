// The packed layout of K-quant weights (Q2_K, Q3_K, Q4_K, Q5_K, Q6_K) for the register-tiled
// kernels: rows in groups of R as in packed_layout.h, one 256-value super-block of the group
// after another. Every type becomes the same form,
//     w = d * scale_s * q - dmin * min_t,   q unsigned (2 to 6 bits),
// with a scale per sub-block s (32 values for Q4_K/Q5_K, 16 for Q2_K/Q3_K/Q6_K) and a minimum
// per sub-block t, so that one kernel per instruction set serves all five: Q6_K's -32 offset
// is a minimum of scale_t with dmin = 32 d, Q3_K's -4 one with dmin = 4 d. The weights are the
// unsigned operand of the byte products and the Q8_K activations the signed one, so no bias
// needs undoing. Decode streams these bytes, so they stay close to the file's: 148 bytes per
// row and super-block for Q4_K (file 144), 212 for Q6_K (file 210), 116 for Q3_K (110) and
// 100 for Q2_K (84: its 4-bit scales and minimums take a byte each).
//
// Per group, per super-block (R rows each):
//   low bits  the levels' low 4 bits (Q2_K, Q3_K: 2 bits), 4 bytes per row and quad
//             pair (quad pair p: quads 2p, 2p+1; a quad is 4 adjacent columns):
//             nibbles: 32 registers of R x 4 bytes, register p: quad 2p low, 2p+1 high
//             2 bits: 16 registers, register e: quads 4e..4e+3 at bits 0, 2, 4, 6
//   high      bits above the low ones: Q3_K, Q5_K 8 x R x 4 bytes (bit k: quad 8h + k),
//             Q6_K 16 x R x 4 bytes (bits 2k, 2k+1: quad 4h + k); none for Q2_K and Q4_K
//   scales    int8, sub-blocks x R
//   mins      int8, pairs of minimums x R rows x 2 (the pair of row r at 2r): 4 pairs of
//             32-value minimums (Q4_K, Q5_K) or 8 of 16-value ones (Q2_K); none for Q3_K and
//             Q6_K, whose minimums are their scales
//   d, dmin   f16, R each
// Unpacked (groups converted per call for long prompts, packed_gemm.h): the low and high bits
// replaced by the levels, one byte each, 64 quads x R rows x 4 bytes; the rest as packed.
// Rows past the matrix's last row in the last group are zero.
#pragma once

#include <cstdint>
#include <cstring>

#include "gguf/tensor_type.h"
#include "kernels/gemm/matmul.h"
#include "quant/blocks_k.h"

namespace kite::packed {

constexpr bool is_k_quant(TensorType t) {
    return t == TensorType::Q2_K || t == TensorType::Q3_K || t == TensorType::Q4_K ||
           t == TensorType::Q5_K || t == TensorType::Q6_K;
}

// One K-quant type's packed super-block for groups of `rows` rows.
struct KLayout {
    int64_t rows;           // R
    int bits;               // bits per level: 2 to 6
    int low_bits;           // of them in the low registers: 4, or 2 (Q2_K, Q3_K)
    int sub_blocks;         // 8 (32 values each) or 16 (16 values each), a minimum each
    int64_t high_regs;      // registers of high bits: 0, 8 or 16
    bool mins_are_scales;   // Q3_K, Q6_K: minimum t is scale t (dmin 4 d, 32 d): none stored
    bool unpacked = false;  // levels one per byte (then high_regs is 0)

    // Quads whose low bits share a byte: 2 (nibbles) or 4.
    constexpr int quads_per_low() const { return 8 / low_bits; }
    constexpr int64_t low_bytes() const { return (unpacked ? 256 : 32 * low_bits) * rows; }
    constexpr int64_t high_offset() const { return low_bytes(); }
    constexpr int64_t scale_offset() const { return high_offset() + high_regs * 4 * rows; }
    constexpr int64_t min_offset() const { return scale_offset() + sub_blocks * rows; }
    constexpr int stored_mins() const { return mins_are_scales ? 0 : sub_blocks; }
    constexpr int64_t d_offset() const { return min_offset() + stored_mins() * rows; }
    constexpr int64_t dmin_offset() const { return d_offset() + 2 * rows; }
    constexpr int64_t super_block_bytes() const { return dmin_offset() + 2 * rows; }
    // Quad pairs per sub-block: 4 (32 values) or 2 (16 values).
    constexpr int pairs_per_sub_block() const { return 32 / sub_blocks; }
    // Bits above the low ones, and the quads whose high bits share one register.
    constexpr int high_bits() const { return bits - low_bits; }
    constexpr int quads_per_high() const { return 8 / high_bits(); }
};

constexpr KLayout k_layout(TensorType t, int64_t rows) {
    if (t == TensorType::Q2_K) return {rows, 2, 2, 16, 0, false};
    if (t == TensorType::Q3_K) return {rows, 3, 2, 16, 8, true};
    if (t == TensorType::Q6_K) return {rows, 6, 4, 16, 16, true};
    if (t == TensorType::Q5_K) return {rows, 5, 4, 8, 8, false};
    return {rows, 4, 4, 8, 0, false};
}

// The layout of t's groups unpacked to one level per byte.
constexpr KLayout unpacked_k_layout(TensorType t, int64_t rows) {
    KLayout l = k_layout(t, rows);
    l.high_regs = 0;
    l.unpacked = true;
    return l;
}

// The activations' sums that minimum pair k multiplies, as the two int16 halves of one word
// (the order of the pair in the kernels' minimum registers): sums of 16 values, or of 32 for
// 32-value minimums (a sum of 32 int8 fits int16).
inline int32_t min_pair_sums(const BlockQ8_K& x, const KLayout& l, int k) {
    int16_t pair[2];
    if (l.sub_blocks == 16) {
        pair[0] = x.bsums[2 * k], pair[1] = x.bsums[2 * k + 1];
    } else {
        pair[0] = static_cast<int16_t>(x.bsums[4 * k] + x.bsums[4 * k + 1]);
        pair[1] = static_cast<int16_t>(x.bsums[4 * k + 2] + x.bsums[4 * k + 3]);
    }
    int32_t word;
    std::memcpy(&word, pair, 4);
    return word;
}

// Packed bytes of one group of `rows` rows of w (a K-quant matrix).
int64_t k_group_bytes(const WeightMatrix& w, int64_t rows);

// Writes w packed in groups of `rows` rows to out (zeroed).
void pack_k_into(const WeightMatrix& w, int64_t rows, uint8_t* out);

}  // namespace kite::packed
