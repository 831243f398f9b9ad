// The layout of weight matrices repacked at load for the register-tiled matrix kernels
// (packed_gemm.h), for any number R of rows per group: 16 where a register holds 512 bits
// (AVX-512), 8 where it holds 256 (AVX2, AVX-VNNI).
//
// In the file, each weight row is contiguous, so a SIMD dot product must sum its lanes at the
// end and convert every block's integer sum to float for one (row, token) pair. Packed, the
// rows come in groups of R and one register holds the same 4 columns of R rows: one broadcast
// activation word times one register advances R rows at once, the lanes never need summing,
// and each block's int32 sums are scaled for R rows with one float FMA.
//
//   quantized (per group of R rows, block after block, each block's parts together, so that a
//   group's tile reads one stream of bytes):
//     q         Q8_0: 8 quads x R rows x 4 signed weights (IQ4_NL too: its levels)
//               Q4_0/Q4_1/Q5_0/Q5_1: 4 pairs x R rows x 4 bytes; the low nibbles are quad
//               2p, the high nibbles quad 2p+1 (the levels' low 4 bits)
//               Q5_0/Q5_1 then: R rows x 4 bytes of fifth bits, bit k for quad k
//     d[R]      f16 scales of the R rows' blocks
//     m[R]      f16 minimums (Q4_1 and Q5_1 only)
//   Unpacked (Q4_0/Q4_1/Q5_0/Q5_1 groups converted per call for long prompts, packed_gemm.h): the
//     same blocks with q as Q8_0's, 8 quads x R rows x 4 levels, one byte each.
//   K-quants: see packed_k_layout.h.
//   F32, F16: per group, per column, the R rows' values in the file's type.
//   BF16: per group, per column pair, the R rows' two values (an odd last column is padded).
//
// Rows past the matrix's last row in the last group are zero.
#pragma once

#include <cstdint>
#include <type_traits>

#include "kernels/cpu/prefetch.h"
#include "kernels/gemm/block_traits.h"
#include "kernels/gemm/matmul.h"

namespace kite::packed {

// The parts of one quantized block for a group of R rows.
struct QuantLayout {
    int64_t rows;         // R
    int64_t quant_bytes;  // per block: 32 R (Q8_0), 16 R (Q4_*) or 20 R (Q5_*)
    bool has_min;         // Q4_1, Q5_1
    int64_t block_bytes() const { return quant_bytes + rows * 2 * (has_min ? 2 : 1); }
};

// IQ4_NL packs as Q8_0: its weights d * level[q] are a Q8_0 block whose quants are the levels,
// so Q8_0's kernels multiply it exactly (for 34 bytes per block instead of 18).
constexpr bool packs_as_q8_0(TensorType t) {
    return t == TensorType::Q8_0 || t == TensorType::IQ4_NL;
}

constexpr QuantLayout quant_layout(TensorType t, int64_t rows) {
    const int64_t bytes = packs_as_q8_0(t) ? 32 : has_fifth_bit(t) ? 20 : 16;
    return {rows, bytes * rows, has_min(t)};
}

// The layout of groups unpacked to one level per byte (Q4_0, Q4_1, Q5_0 and Q5_1): a tile
// then loads each weight register as it is, with nothing to unpack per token tile.
constexpr QuantLayout unpacked_layout(TensorType t, int64_t rows) {
    return {rows, 32 * rows, has_min(t)};
}

constexpr bool is_float(TensorType t) {
    return t == TensorType::F32 || t == TensorType::F16 || t == TensorType::BF16;
}

// Column pairs of a BF16 matrix.
constexpr int64_t bf16_pairs(int64_t cols) {
    return (cols + 1) / 2;
}

constexpr int64_t n_groups(const WeightMatrix& w, int64_t rows) {
    return (w.rows + rows - 1) / rows;
}

// Packed bytes of one group of `rows` rows of w.
int64_t group_bytes(const WeightMatrix& w, int64_t rows);

// The parts of block b of one group's quantized bytes (Byte: uint8_t to pack, const uint8_t
// to read).
template <typename Byte>
struct GroupParts {
    static constexpr bool kConst = std::is_const_v<Byte>;
    using U16 = std::conditional_t<kConst, const uint16_t, uint16_t>;
    Byte* group;
    QuantLayout l;
    Byte* q(int64_t b) const { return group + b * l.block_bytes(); }
    U16* d(int64_t b) const { return reinterpret_cast<U16*>(q(b) + l.quant_bytes); }
    U16* m(int64_t b) const { return d(b) + l.rows; }  // Q4_1 and Q5_1 only
};

// Tiles prefetch the blocks they will read this many blocks ahead (see prefetch.h):
// 8 blocks of 16 Q5_0 rows are 2.75 KiB per group, about a K-quant super-block's distance.
constexpr int64_t kPrefetchBlocks = 8;

// Prefetches block b + kPrefetchBlocks of each of G groups (and kFar bytes past it into L2).
template <int G, int64_t kFar>
inline void prefetch_blocks_ahead(const GroupParts<const uint8_t> (&parts)[G], int64_t b) {
    for (int g = 0; g < G; ++g)
        prefetch_bytes<kFar>(parts[g].q(b + kPrefetchBlocks), parts[g].l.block_bytes());
}

// Writes w packed in groups of `rows` rows to out (n_groups * group_bytes bytes, zeroed).
// w.type is F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL or a K-quant
// (packed_k_layout.h).
void pack_into(const WeightMatrix& w, int64_t rows, uint8_t* out);

}  // namespace kite::packed
