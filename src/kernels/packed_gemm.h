// Weight matrices repacked at load for the AVX-512 matrix kernels.
//
// In the file, each weight row is contiguous, so a SIMD dot product must sum its lanes at the
// end and convert every block's integer sum to float for one (row, token) pair. Packed, the
// rows come in groups of 16 and a 512-bit register holds the same 4 columns of 16 rows: one
// broadcast activation word times one register advances 16 rows at once, the lanes never
// need summing, and each block's int32 sums are scaled for 16 rows with one float FMA.
//
//   quantized (per group of 16 rows, per 32-column block):
//     d[16]     f16 scales of the 16 rows' blocks
//     m[16]     f16 minimums (Q4_1 only)
//     nsum[16]  int16: -(sum of the block's signed weights), to undo the activation bias
//     q         Q8_0: 8 quads x 16 rows x 4 int8 weights
//               Q4_0/Q4_1: 4 pairs x 16 rows x 4 bytes; the low nibbles are quad 2p, the
//               high nibbles quad 2p+1 (Q4_0 nibbles hold w + 8, Q4_1 nibbles w)
//   F32, F16: per group, per column, the 16 rows' values in the file's type.
//   BF16: per group, per column pair, the 16 rows' two values (vdpbf16ps's operand).
//
// BF16 weights meet activations rounded to bf16, as llama.cpp's do. vdpbf16ps multiplies
// 32 pairs per instruction; where that multiplies fewer pairs per second than f32 FMAs do
// (0.45x on an Intel Xeon we measured, 2x on AMD Zen 4), the pairs are widened to f32.
//
// Activations for packed quantized weights are 8-bit blocks with 128 added (VNNI multiplies
// unsigned by signed bytes), so each block sum carries +128 * sum(weights), which nsum
// removes. BF16 weights take bf16 activation pairs; F32 and F16 weights read x as it is.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "kernels/matmul.h"

namespace kite {

// How packed BF16 weights are multiplied: chosen once per process by timing both on this
// CPU (bf16_dot_outruns_fp32_fma). Both read the same packed bytes.
enum class Bf16Kernel { Dot, Widen };
Bf16Kernel bf16_kernel();
// Tests run both (Dot needs AVX-512 BF16). Changes activation sizes: not while matmuls run.
void set_bf16_kernel(Bf16Kernel kernel);

// Rows per packed group.
constexpr int64_t kPackRows = 16;

// Activations of packed quantized matmuls: a Q8_1 block with 128 added to each quant.
struct BlockQ8Biased {
    uint16_t d;  // f16 scale
    uint16_t s;  // f16 of d * sum(signed quants), for Q4_1's minimums
    uint8_t qs[32];
};
static_assert(sizeof(BlockQ8Biased) == 36);

// 64-byte aligned bytes owned by a ModelWeights.
struct AlignedFree {
    void operator()(uint8_t* p) const;
};
using PackedBytes = std::unique_ptr<uint8_t[], AlignedFree>;

// True when this CPU has a packed kernel for the weight type (AVX-512 with VNNI).
bool can_pack(TensorType type);

// Repacks w (see the layout above); can_pack(w.type) must hold. Rows past w.rows in the last
// group are zero.
PackedBytes pack_weights(const WeightMatrix& w);

// Bytes of one activation row prepared for a packed matmul of w.type (0 for F32 and F16:
// they read x directly).
size_t packed_activation_bytes(TensorType type, int64_t cols);

// Prepares activation row x (cols values) for a packed matmul of w.type.
void prepare_packed_activation(TensorType type, const float* x, uint8_t* dst, int64_t cols);

// Groups per tile for n_tokens: callers split work on multiples of it.
int64_t packed_tile_groups(int64_t n_tokens);

// y[t * w.rows + r] for the rows of groups [group_begin, group_end) and all n_tokens.
// `act` holds the prepared rows (act_bytes apart), or x itself for float weights.
void packed_gemm(const WeightMatrix& w, const uint8_t* act, size_t act_bytes, int64_t n_tokens,
                 float* y, int64_t group_begin, int64_t group_end);

}  // namespace kite
