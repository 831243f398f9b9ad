// The packed layout of K-quant weights (Q4_K, Q5_K, Q6_K) for the register-tiled kernels:
// rows in groups of R as in packed_layout.h, one 256-value super-block of the group after
// another. Every type becomes the same form,
//     w = d * scale_s * q - dmin * min_t,   q unsigned (4, 5 or 6 bits),
// with a scale per sub-block s (32 values for Q4_K/Q5_K, 16 for Q6_K) and a minimum per
// sub-block t, so that one kernel per instruction set serves all three: Q6_K's -32 offset is
// a minimum of scale_t with dmin = 32 d. The weights are the unsigned operand of the byte
// products and the Q8_K activations the signed one, so no bias needs undoing. Decode streams
// these bytes, so they stay close to the file's: 148 bytes per row and super-block for Q4_K
// (file 144), 212 for Q6_K (file 210).
//
// Per group, per super-block (R rows each):
//   nibbles   32 quad pairs x R rows x 4 bytes: low nibbles quad 2p, high nibbles quad 2p+1
//             (a quad is 4 adjacent columns)
//   high      bits above the nibble: Q5_K 8 x R x 4 bytes (bit k: quad 8h + k), Q6_K
//             16 x R x 4 bytes (bits 2k, 2k+1: quad 4h + k); none for Q4_K
//   scales    int8, sub-blocks x R
//   mins      int8, 4 pairs of 32-value minimums x R rows x 2 (the pair of row r at 2r);
//             none for Q6_K, whose minimums are its scales
//   d, dmin   f16, R each
// Unpacked (groups converted per call for long prompts, packed_gemm.h): nibbles and high bits
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
    return t == TensorType::Q4_K || t == TensorType::Q5_K || t == TensorType::Q6_K;
}

// One K-quant type's packed super-block for groups of `rows` rows.
struct KLayout {
    int64_t rows;           // R
    int bits;               // 4, 5 or 6
    int sub_blocks;         // 8 (32 values each) or 16 (16 values each), a minimum each
    int64_t high_regs;      // registers of high bits: 0, 8 or 16
    bool mins_are_scales;   // Q6_K: minimum t is scale t (with dmin = 32 d), so none is stored
    bool unpacked = false;  // levels one per byte (then high_regs is 0)

    constexpr int64_t nibble_bytes() const { return (unpacked ? 256 : 128) * rows; }
    constexpr int64_t high_offset() const { return nibble_bytes(); }
    constexpr int64_t scale_offset() const { return high_offset() + high_regs * 4 * rows; }
    constexpr int64_t min_offset() const { return scale_offset() + sub_blocks * rows; }
    constexpr int stored_mins() const { return mins_are_scales ? 0 : sub_blocks; }
    constexpr int64_t d_offset() const { return min_offset() + stored_mins() * rows; }
    constexpr int64_t dmin_offset() const { return d_offset() + 2 * rows; }
    constexpr int64_t super_block_bytes() const { return dmin_offset() + 2 * rows; }
    // Quad pairs per sub-block: 4 (32 values) or 2 (16 values).
    constexpr int pairs_per_sub_block() const { return 32 / sub_blocks; }
    // Quads whose high bits share one register, and the bits each has there.
    constexpr int quads_per_high() const { return bits == 5 ? 8 : 4; }
    constexpr int high_bits() const { return bits - 4; }
};

constexpr KLayout k_layout(TensorType t, int64_t rows) {
    if (t == TensorType::Q6_K) return {rows, 6, 16, 16, true};
    if (t == TensorType::Q5_K) return {rows, 5, 8, 8, false};
    return {rows, 4, 8, 0, false};
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
