// The AMX level's kernels for float weights (F32, F16, BF16): bf16 tiles (tdpbf16ps) for
// prompt-sized calls, the AVX-512 kernels for the rest (decode, and the last tokens of a
// call that do not fill a 16-token tile).
//
// A tile product C[16 tokens][16 rows] += A[16 tokens][32 columns] . B[16 column pairs][16
// rows x 2] multiplies bf16 and sums in f32. bf16 keeps 8 significant bits, so each factor
// that needs more is split into two bf16 parts, x = x_hi + x_lo, and a product takes three
// tile products, x_hi.w_hi + x_lo.w_hi + x_hi.w_lo (leaving out x_lo.w_lo, at most 2^-16 of
// each term):
//   - F16 weights split exactly (11 significant bits: 8 in w_hi, the rest in w_lo);
//   - F32 weights keep 16 of their 24 bits, and activations 16 bits, as the AMX attention
//     tiles do (tiled_attention_amx.cpp);
//   - BF16 weights are exact, and meet activations rounded to bf16 as on AVX-512 (and as
//     llama.cpp's): one product.
// Each thread converts a few groups of its rows to tile layout once per call, zero-padded to
// a multiple of 32 columns, and runs every 32 tokens over them while they sit in L2.
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "kernels/cpu/amx_tiles.h"
#include "kernels/cpu/bf16_split.h"
#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/tile_buffer.h"
#include "kernels/gemm/packed_amx_split.h"
#include "kernels/gemm/packed_gemm.h"
#include "kernels/gemm/packed_layout.h"

namespace kite::packed::amx {

namespace {

#define KITE_AMX_BF16                                                  \
    __attribute__((                                                    \
        target("amx-tile,amx-bf16,avx512f,avx512bw,avx512vl,avx512dq," \
               "avx512bf16,f16c,fma")))

constexpr int64_t kRows = 16;
constexpr int64_t kStepCols = 32;             // columns per tile product
constexpr int64_t kTileBytes = 1024;          // one 16 x 64-byte tile
constexpr int64_t kChunkBytes = 1024 * 1024;  // converted groups kept in L2 at once

template <TensorType T>
constexpr bool kSplit = T != TensorType::BF16;  // three products, or one

// Bytes of one group's weight tiles (w_hi, and w_lo where split) per 32-column step.
template <TensorType T>
constexpr int64_t kWStep = kTileBytes*(kSplit<T> ? 2 : 1);

template <TensorType T>
const PackedKernels& base() {
    if constexpr (T == TensorType::F32) return avx512::f32;
    if constexpr (T == TensorType::F16) return avx512::f16;
    return avx512::bf16;
}

int64_t padded_cols(int64_t cols) {
    return (cols + kStepCols - 1) / kStepCols * kStepCols;
}

// ---- Activations: the AVX-512 row, then x_hi (and x_lo) as bf16 rows of padded_cols ---------

template <TensorType T>
size_t base_activation_bytes(int64_t cols) {
    const size_t b = base<T>().activation_bytes(cols);
    return b == 0 ? cols * sizeof(float) : b;  // 0: the float kernels read x as it is
}

template <TensorType T>
size_t activation_bytes(int64_t cols) {
    if (!amx_float_tiles()) return base<T>().activation_bytes(cols);
    return base_activation_bytes<T>(cols) + (kSplit<T> ? 4 : 2) * padded_cols(cols);
}

template <TensorType T>
KITE_AMX_BF16 void prepare_activation(const float* x, uint8_t* dst, int64_t cols) {
    if (base<T>().activation_bytes(cols) == 0)
        std::memcpy(dst, x, cols * sizeof(float));
    else
        base<T>().prepare_activation(x, dst, cols);
    if (!amx_float_tiles()) return;
    const int64_t padded = padded_cols(cols);
    auto* hi = reinterpret_cast<uint16_t*>(dst + base_activation_bytes<T>(cols));
    uint16_t* lo = hi + padded;
    for (int64_t k = 0; k < padded; k += 16) {
        const int64_t n = std::min<int64_t>(16, std::max<int64_t>(0, cols - k));
        const __mmask16 in = static_cast<__mmask16>((1u << n) - 1);
        const __m512 v = _mm512_maskz_loadu_ps(in, x + k);
        const __m256bh h = _mm512_cvtneps_pbh(v);  // zero past cols
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(hi + k),
                            reinterpret_cast<const __m256i&>(h));
        if constexpr (kSplit<T>) {
            const __m256bh l = _mm512_cvtneps_pbh(bf16_residue(v));
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(lo + k),
                                reinterpret_cast<const __m256i&>(l));
        }
    }
}

// ---- Weights: a group as B tiles, per 32-column step its w_hi tile (and w_lo tile) ---------

// Column k of a group (its 16 rows) as floats; zero past the last column.
template <TensorType T>
KITE_AMX_BF16 inline __m512 load_column(const uint8_t* group, int64_t k, int64_t cols) {
    if (k >= cols) return _mm512_setzero_ps();
    if constexpr (T == TensorType::F32)
        return _mm512_loadu_ps(group + k * kRows * 4);
    else
        return _mm512_cvtph_ps(
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(group + k * kRows * 2)));
}

template <TensorType T>
KITE_AMX_BF16 void convert_group(const uint8_t* group, int64_t cols, uint8_t* dst) {
    const int64_t steps = padded_cols(cols) / kStepCols;
    if constexpr (T == TensorType::BF16) {  // the packed pairs are the tile rows already
        const int64_t bytes = (cols + 1) / 2 * kRows * 4;
        std::memcpy(dst, group, bytes);
        std::memset(dst + bytes, 0, steps * kTileBytes - bytes);
        return;
    }
    for (int64_t s = 0; s < steps; ++s) {
        uint8_t* hi = dst + s * kWStep<T>;
        uint8_t* lo = hi + kTileBytes;
        for (int64_t p = 0; p < kStepCols / 2; ++p) {
            const int64_t k = s * kStepCols + 2 * p;
            const __m512 even = load_column<T>(group, k, cols),
                         odd = load_column<T>(group, k + 1, cols);
            // w - w_hi is exact in f32 (and in bf16 for F16: at most 3 significant bits).
            _mm512_storeu_si512(hi + 64 * p, interleaved_bf16(even, odd));
            _mm512_storeu_si512(lo + 64 * p,
                                interleaved_bf16(bf16_residue(even), bf16_residue(odd)));
        }
    }
}

template <TensorType T>
int64_t converted_group_bytes(int64_t cols) {
    return padded_cols(cols) / kStepCols * kWStep<T>;
}

// ---- The tile loop -------------------------------------------------------------------------
// Two token tiles by two groups: each tile loaded serves two products. Loads, not products,
// bound this loop (a tile from L2 takes about two products' time), so a split step loads
// each part once: x_lo and w_hi, then x_hi beside the w_hi kept, then w_lo beside the x_hi
// kept (8 loads for 12 products).
//   tmm0..3  sums (token tile i, group j) in tmm(2i + j): 16 tokens x 16 rows, f32
//   tmm4, 5  x parts of the two token tiles for one step
//   tmm6, 7  w parts of the two groups for one step

// Sums of tokens [16 TT) times groups [G) from b (group_bytes apart): (token tile i, group j)
// to the 16 x 16 floats at c + (2j + i) * 256. Token m's x_hi is at a + m * act_bytes, its
// x_lo lo_offset bytes on.
template <TensorType T, int TT, int G>
KITE_AMX_BF16 void tile_block(const uint8_t* a, long act_bytes, int64_t lo_offset, int64_t steps,
                              const uint8_t* b, int64_t group_bytes, float* c) {
    constexpr int64_t w_step = kWStep<T>;
    constexpr int64_t kSums = kTileTokens * kRows;
    _tile_zero(0);
    if constexpr (G > 1) _tile_zero(1);
    if constexpr (TT > 1) _tile_zero(2);
    if constexpr (TT > 1 && G > 1) _tile_zero(3);
    const uint8_t* b1 = b + group_bytes;
// Macros, not lambdas: a lambda would not carry the function's target attribute.
#define KITE_LOAD_X(offset)                  \
    _tile_loadd(4, a + (offset), act_bytes); \
    if constexpr (TT > 1) _tile_loadd(5, a + (offset) + kTileTokens * act_bytes, act_bytes);
#define KITE_LOAD_W(offset)           \
    _tile_loadd(6, b + (offset), 64); \
    if constexpr (G > 1) _tile_loadd(7, b1 + (offset), 64);
#define KITE_PRODUCTS()                            \
    _tile_dpbf16ps(0, 4, 6);                       \
    if constexpr (G > 1) _tile_dpbf16ps(1, 4, 7);  \
    if constexpr (TT > 1) _tile_dpbf16ps(2, 5, 6); \
    if constexpr (TT > 1 && G > 1) _tile_dpbf16ps(3, 5, 7);
    for (int64_t s = 0; s < steps; ++s) {
        if constexpr (kSplit<T>) {
            KITE_LOAD_X(s * 64 + lo_offset)
            KITE_LOAD_W(s * w_step)
            KITE_PRODUCTS()
            KITE_LOAD_X(s * 64)
            KITE_PRODUCTS()
            KITE_LOAD_W(s * w_step + kTileBytes)
            KITE_PRODUCTS()
        } else {
            KITE_LOAD_X(s * 64)
            KITE_LOAD_W(s * w_step)
            KITE_PRODUCTS()
        }
    }
#undef KITE_LOAD_X
#undef KITE_LOAD_W
#undef KITE_PRODUCTS
    _tile_stored(0, c, 64);
    if constexpr (G > 1) _tile_stored(1, c + 2 * kSums, 64);
    if constexpr (TT > 1) _tile_stored(2, c + kSums, 64);
    if constexpr (TT > 1 && G > 1) _tile_stored(3, c + 3 * kSums, 64);
}

using TileBlockFn = void (*)(const uint8_t*, long, int64_t, int64_t, const uint8_t*, int64_t,
                             float*);

template <TensorType T>
constexpr TileBlockFn kTileBlocks[2][2] = {{tile_block<T, 1, 1>, tile_block<T, 1, 2>},
                                           {tile_block<T, 2, 1>, tile_block<T, 2, 2>}};

// Buffers of one thread, grown to the largest call and kept.
struct Scratch {
    TileBuffer groups, sums;
};

template <TensorType T>
KITE_AMX_BF16 void tiled_gemm(const WeightMatrix& w, const uint8_t* act, size_t act_bytes,
                              int64_t tiled, float* y, int64_t group_begin, int64_t group_end) {
    configure_full_amx_tiles();
    const int64_t padded = padded_cols(w.cols), converted = converted_group_bytes<T>(w.cols);
    const int64_t steps = padded / kStepCols;
    const int64_t chunk = std::max<int64_t>(2, kChunkBytes / converted / 2 * 2);
    thread_local Scratch s;
    uint8_t* groups = s.groups.bytes(chunk * converted);
    float* sums_of_chunk = s.sums.items<float>(chunk * 2 * kTileTokens * kRows);
    const int64_t packed_bytes = group_bytes(w, kRows);
    const uint8_t* a = act + base_activation_bytes<T>(w.cols);
    for (int64_t g0 = group_begin; g0 < group_end; g0 += chunk) {
        const int64_t g1 = std::min(group_end, g0 + chunk);
        for (int64_t g = g0; g < g1; ++g)
            convert_group<T>(w.packed + g * packed_bytes, w.cols, groups + (g - g0) * converted);
        asm volatile("" ::: "memory");  // the tile loads read these bytes (their asm says not)
        for (int64_t t = 0; t < tiled; t += 2 * kTileTokens) {
            const int64_t tt = std::min<int64_t>(2, (tiled - t) / kTileTokens);
            for (int64_t g = g0; g < g1; g += 2)
                kTileBlocks<T>[tt - 1][std::min<int64_t>(2, g1 - g) - 1](
                    a + t * act_bytes, static_cast<long>(act_bytes), padded * 2, steps,
                    groups + (g - g0) * converted, converted,
                    sums_of_chunk + (g - g0) * 2 * kTileTokens * kRows);
            asm volatile("" ::: "memory");  // the tile stores wrote the sums
            for (int64_t g = g0; g < g1; ++g) {
                const int64_t rows = std::min(kRows, w.rows - g * kRows);
                const __mmask16 keep = static_cast<__mmask16>((1u << rows) - 1);
                const float* sums = sums_of_chunk + (g - g0) * 2 * kTileTokens * kRows;
                for (int64_t m = 0; m < tt * kTileTokens; ++m)
                    _mm512_mask_storeu_ps(y + (t + m) * w.rows + g * kRows, keep,
                                          _mm512_loadu_ps(sums + m * kRows));
            }
        }
    }
}

template <TensorType T>
void gemm(const WeightMatrix& w, const uint8_t* act, size_t act_bytes, int64_t n_tokens, float* y,
          int64_t group_begin, int64_t group_end) {
    split_tiles_and_rest(
        base<T>(), amx_float_tiles(), w, act, act_bytes, n_tokens, y, group_begin, group_end,
        [&](int64_t tiled) { tiled_gemm<T>(w, act, act_bytes, tiled, y, group_begin, group_end); });
}

template <TensorType T>
int64_t tile_groups(int64_t n_tokens) {
    return base<T>().tile_groups(n_tokens);
}

template <TensorType T>
constexpr PackedKernels tiled() {
    return {Isa::Amx, kRows, activation_bytes<T>, prepare_activation<T>, tile_groups<T>, gemm<T>};
}

}  // namespace

const PackedKernels f32 = tiled<TensorType::F32>();
const PackedKernels f16 = tiled<TensorType::F16>();
const PackedKernels bf16 = tiled<TensorType::BF16>();

}  // namespace kite::packed::amx

namespace kite {

bool amx_float_tiles() {
    static const bool yes = cpu_features().amx_bf16 && cpu_features().avx512_bf16;
    return yes;
}

}  // namespace kite
