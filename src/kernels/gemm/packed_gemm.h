// Matrix kernels for weights repacked at load (packed_layout.h), one set per instruction set
// and weight type: AVX-512 VNNI (16 rows per group), AVX-VNNI and AVX2 (8 rows per group).
//
// Activations for packed quantized weights are signed 8-bit blocks with the sum of their
// quants. The weights are stored as unsigned levels, w plus a type's offset (VNNI multiplies
// unsigned by signed bytes), so each block sum carries offset * sum(quants), which the tiles
// take off once per token and block (Q4_1's and Q5_1's levels are their weights: their blocks
// carry d * sum instead, for the minimums, as the reference dot product's). BF16 weights take
// bf16 activation pairs (vdpbf16ps) or f32 values rounded to bf16 (widened to f32 for FMA);
// F32 and F16 weights read x as it is.
//
// BF16 weights meet activations rounded to bf16, as llama.cpp's do. vdpbf16ps multiplies
// 32 pairs per instruction; where that multiplies fewer pairs per second than f32 FMAs do
// (0.45x on an Intel Xeon we measured, 2x on AMD Zen 4), the pairs are widened to f32.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <type_traits>

#include "core/huge_pages.h"
#include "kernels/cpu/isa.h"
#include "kernels/gemm/block_traits.h"
#include "kernels/gemm/matmul.h"
#include "quant/blocks.h"
#include "quant/fp16.h"

namespace kite {

// One instruction set's packed kernels for one weight type.
struct PackedKernels {
    Isa isa;
    int64_t rows_per_group;                    // 16 or 8
    size_t (*activation_bytes)(int64_t cols);  // 0: the kernels read x as is
    void (*prepare_activation)(const float* x, uint8_t* dst, int64_t cols);
    int64_t (*tile_groups)(int64_t n_tokens);  // callers split work on multiples
    // y[t * w.rows + r] for the rows of groups [group_begin, group_end) and all n_tokens.
    // `act` holds the prepared rows (act_bytes apart), or x itself for float weights.
    void (*gemm)(const WeightMatrix& w, const uint8_t* act, size_t act_bytes, int64_t n_tokens,
                 float* y, int64_t group_begin, int64_t group_end);
};

namespace packed::avx512 {
extern const PackedKernels f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, q2_k, q3_k, q4_k, q5_k,
    q6_k;
}
namespace packed::amx {  // the AVX-512 layout; int8 tiles for prompt-sized calls
extern const PackedKernels f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, q2_k, q3_k, q4_k, q5_k,
    q6_k;
}
namespace packed::avxvnni {
extern const PackedKernels f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, q2_k, q3_k, q4_k, q5_k,
    q6_k;
}
namespace packed::avx2 {
extern const PackedKernels f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, q2_k, q3_k, q4_k, q5_k,
    q6_k;
}

// How packed BF16 weights are multiplied on AVX-512: chosen once per process by timing both
// on this CPU (bf16_dot_outruns_fp32_fma). Both read the same packed bytes.
enum class Bf16Kernel { Dot, Widen };
Bf16Kernel bf16_kernel();
// Tests run both (Dot needs AVX-512 BF16). Changes activation sizes: not while matmuls run.
void set_bf16_kernel(Bf16Kernel kernel);

// Whether the AMX level multiplies float weights (F32, F16, BF16) of prompt-sized calls on
// bf16 tiles on this CPU (it has AMX-BF16 and AVX512-BF16); where not, they run as on AVX-512.
bool amx_float_tiles();

// Activations of packed Q8_0, Q4_0 and Q5_0 matmuls: a Q8_0 block and the sum of its quants.
struct BlockQ8Sum {
    uint16_t d;   // f16 scale
    int16_t sum;  // of qs
    int8_t qs[32];
};
static_assert(sizeof(BlockQ8Sum) == 36);

// The activation block of packed weights of type T (Q4_1 and Q5_1: BlockQ8_1, quant/blocks.h).
template <TensorType T>
using PackedActivation = std::conditional_t<has_min(T), BlockQ8_1, BlockQ8Sum>;

// Sets an activation block's scale d and what it keeps of its quants' sum: BlockQ8Sum the
// sum, BlockQ8_1 d * sum in f16, as the reference quantizer does.
template <typename Block>
inline void set_scale_and_sum(Block& b, float d, int sum) {
    b.d = f32_to_f16(d);
    if constexpr (std::is_same_v<Block, BlockQ8_1>)
        b.s = f32_to_f16(d * static_cast<float>(sum));
    else
        b.sum = static_cast<int16_t>(sum);
}

// What the quantized tiles read of an activation block besides its quants, ready to use: its
// scale in f32 and the term its weights' offset or minimum adds. A row's terms follow its
// blocks (packed::quant_activation_bytes), so that the tiles broadcast them from memory instead
// of converting an f16 and multiplying a sum per block and token on the vector ports that the
// integer products need (AVX-512 Q5_0 and Q4_1 prompt tiles 1.1-1.2x).
template <TensorType T>
struct BlockTerms {
    float d;
    // Q4_1, Q5_1: d * sum(quants) as the reference rounds it; the others: the int32 block
    // sum's start, -level_offset * sum(quants).
    std::conditional_t<has_min(T), float, int32_t> term;
};

template <TensorType T>
inline void set_terms(BlockTerms<T>& t, const PackedActivation<T>& block, int sum) {
    t.d = f16_to_f32(block.d);
    if constexpr (has_min(T))
        t.term = f16_to_f32(block.s);
    else
        t.term = -level_offset(T) * sum;
}

// Packed matrices live in huge pages: decode streams all of them once per token.
using PackedBytes = HugePageBytes;

// The bytes of w packed for k.
size_t packed_bytes(const WeightMatrix& w, const PackedKernels& k);

// Repacks w for k (k must be the kernels for w.type).
PackedBytes pack_weights(const WeightMatrix& w, const PackedKernels& k);

// The same in parts, for packing on several threads: the zeroed bytes of w packed for k,
// then groups [g0, g1) of them (of packed_groups(w, k)). Groups are independent, so threads
// may pack disjoint ranges of one matrix at once.
PackedBytes allocate_packed(const WeightMatrix& w, const PackedKernels& k);
int64_t packed_groups(const WeightMatrix& w, const PackedKernels& k);
void pack_groups(const WeightMatrix& w, const PackedKernels& k, int64_t g0, int64_t g1,
                 uint8_t* packed);
// The same from rows held elsewhere: `rows` are those groups' rows (row g0 * rows_per_group
// first) in w's type, e.g. converted from another type just before.
void pack_groups_from(const WeightMatrix& w, const PackedKernels& k, const uint8_t* rows,
                      int64_t g0, int64_t g1, uint8_t* packed);

// ---- For the kernel files: activation formats and the group loop they share -----------------
namespace packed {

// BlockQ8Sum or BlockQ8_1 rows (the same size).
size_t q8_activation_bytes(int64_t cols);
// A row of T's activation blocks, then their BlockTerms.
template <TensorType T>
size_t quant_activation_bytes(int64_t cols) {
    return q8_activation_bytes(cols) + static_cast<size_t>(cols / kQK) * sizeof(BlockTerms<T>);
}

template <TensorType T>
const BlockTerms<T>* block_terms(const uint8_t* row, int64_t cols) {
    return reinterpret_cast<const BlockTerms<T>*>(row + q8_activation_bytes(cols));
}
// Activations for packed K-quants: BlockQ8_K rows, bit for bit as the reference dot products'
// (quantize_row_q8_k); quantize_q8_k runs AVX2 (every level with packed kernels has it).
size_t k_activation_bytes(int64_t cols);
void quantize_q8_k(const float* x, uint8_t* dst, int64_t cols);
// Activations for widened BF16 weights: f32 values rounded to bf16, an odd count padded.
size_t bf16_widened_activation_bytes(int64_t cols);
void prepare_bf16_widened_activation(const float* x, uint8_t* dst, int64_t cols);

// One tile: G groups from `groups` (the first is group g0) times C tokens from t0.
using TileFn = void (*)(const WeightMatrix& w, const uint8_t* groups, const uint8_t* act,
                        size_t act_bytes, int64_t g0, int64_t t0, float* y);

// Tiles of 1, 2 or 4 groups by 1..tokens tokens.
struct TileTable {
    int64_t tokens;
    TileFn fn[3][8];  // [log2 groups][tokens - 1]
    // The same tiles prefetching the weights they read (prefetch.h), for the first token
    // tile of calls of at most kStreamTokens tokens, which read each weight from memory once;
    // null: use fn.
    TileFn stream[3][8];
};

// Calls of up to this many tokens (decode, speculative verify steps, batched decode) run the
// stream tiles. Up to 64 tokens the weights' first tile still waits on memory: on a Zen 5
// with AVX-512, a pass of Qwen2.5-Coder-1.5B over 9 tokens took 54 ms with them against 96
// without (16: 76 against 102, 32: 125 against 158, 64: 240 against 263). A long prompt's
// tiles reuse each weight from cache: their prefetches (and a branch on them in the inner
// loop) cost 9% of pp512 on Qwen2.5-Coder-0.5B.
constexpr int64_t kStreamTokens = 64;

// Converts `groups` packed groups to the form a plan's converted tiles read (F32 groups of
// rows_per_group x w.cols floats, or quantized groups unpacked to one level per byte).
using ConvertFn = void (*)(const WeightMatrix& w, const uint8_t* src, uint8_t* dst, int64_t groups);

// How one instruction set runs one weight type's packed gemm.
struct TilePlan {
    int64_t rows_per_group;
    int64_t (*tile_groups)(int64_t n_tokens);
    const TileTable* tiles;
    // From convert_tokens tokens on, the groups of each tile row are converted once per call
    // (convert, converted_group_bytes apiece) and run with converted_tiles, which then do
    // no conversion per weight register and token tile (convert nullptr: never).
    ConvertFn convert;
    int64_t (*converted_group_bytes)(const WeightMatrix& w);
    const TileTable* converted_tiles;
    int64_t convert_tokens;
};

// PackedKernels::gemm for the plan.
void run_tiles(const TilePlan& plan, const WeightMatrix& w, const uint8_t* act, size_t act_bytes,
               int64_t n_tokens, float* y, int64_t group_begin, int64_t group_end);

}  // namespace packed

}  // namespace kite
