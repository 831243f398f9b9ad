// The AMX level's packed kernels for the quantized types: the AVX-512 layout (16 rows per
// group) and the AVX-512 kernels for short calls (decode, which is bound by memory
// bandwidth), and int8 tiles for prompt-sized calls (float weights:
// packed_gemm_amx_float.cpp; the K-quants, whose sub-block scales are integers:
// packed_gemm_amx_k.cpp).
//
// A tile product C[16 tokens][16 rows] += A[16 tokens][K bytes] . B[K / 4][16 rows x 4] reads
// B in exactly the packed layout's order: per quad of columns, the 16 rows' 4 bytes. These
// types (Q8_0, Q4_0, Q4_1, Q5_0) scale every block of 32 columns apart, with a float scale,
// so one tile product covers one block, its int32 sums are stored and scaled into float
// accumulators on AVX-512, as the VNNI kernels scale theirs:
//     y += C * (d_w * d_x) + c_w * e_x
// with c_w the weights' offset or minimum and e_x the activations' d_x * sum(quants) (see
// packed_gemm.h). Each thread unpacks a few groups' levels to bytes (a tile multiplies whole
// bytes, the packed layout holds nibbles) with their scales as floats, once per call, and
// runs every 16-token tile over them. The activation rows carry each block's two floats
// after the AVX-512 format, so the AVX-512 kernels read the same rows.
#include <algorithm>
#include <cstddef>

#include "kernels/cpu/amx_tiles.h"
#include "kernels/cpu/prefetch.h"
#include "kernels/cpu/tile_buffer.h"
#include "kernels/gemm/packed_amx_levels.h"
#include "kernels/gemm/packed_amx_split.h"
#include "kernels/gemm/packed_gemm.h"
#include "kernels/gemm/packed_layout.h"
#include "quant/blocks.h"
#include "quant/fp16.h"

namespace kite::packed::amx {

namespace {

constexpr int64_t kRows = 16;
constexpr int64_t kTileBytes = kQK * kRows;  // one block of a group's levels, unpacked
// Levels unpacked at once (up to a call's groups): they stay in L2 while every token tile
// passes over them.
constexpr int64_t kChunkBytes = 768 * 1024;

// Per weight type: the AVX-512 kernels it extends, whether its weights are unpacked to signed
// bytes and whether it has an offset term.
template <TensorType T>
struct Type;
template <>
struct Type<TensorType::Q8_0> {
    static constexpr bool kSigned = true, kMin = false;
    static const PackedKernels& base() { return avx512::q8_0; }
};
template <>
struct Type<TensorType::Q4_0> {  // unpacked to its signed weights, level - 8
    static constexpr bool kSigned = true, kMin = false;
    static const PackedKernels& base() { return avx512::q4_0; }
};
template <>
struct Type<TensorType::Q5_0> {  // unpacked to its signed weights, level - 16
    static constexpr bool kSigned = true, kMin = false;
    static const PackedKernels& base() { return avx512::q5_0; }
};
template <>
struct Type<TensorType::Q4_1> {
    static constexpr bool kSigned = false, kMin = true;
    static const PackedKernels& base() { return avx512::q4_1; }
};

// ---- Activations: the AVX-512 rows, then (d_x, e_x) per block ------------------------------

template <TensorType T>
size_t activation_bytes(int64_t cols) {
    return Type<T>::base().activation_bytes(cols) + (cols / kQK) * 2 * sizeof(float);
}

// Where block i's quants start in an activation row.
template <TensorType T>
int64_t quants_offset(int64_t i) {
    return i * static_cast<int64_t>(sizeof(PackedActivation<T>)) +
           offsetof(PackedActivation<T>, qs);
}

template <TensorType T>
void prepare_activation(const float* x, uint8_t* dst, int64_t cols) {
    Type<T>::base().prepare_activation(x, dst, cols);
    auto* f = reinterpret_cast<float*>(dst + Type<T>::base().activation_bytes(cols));
    const int64_t n = cols / kQK;
    for (int64_t i = 0; i < n; ++i) {
        float d, e;
        if constexpr (has_min(T)) {
            const auto& b = reinterpret_cast<const BlockQ8_1*>(dst)[i];
            d = f16_to_f32(b.d), e = f16_to_f32(b.s);
        } else {
            const auto& b = reinterpret_cast<const BlockQ8Sum*>(dst)[i];
            d = f16_to_f32(b.d), e = d * static_cast<float>(b.sum);
        }
        f[2 * i] = d, f[2 * i + 1] = e;
    }
}

// ---- Weights: a group's levels as tile bytes, its scales and offsets as floats ------------

// One group unpacked: per block, kQK / 4 tile rows of 64 bytes (block i's at levels + i *
// stride), then per block 16 scales d_w and 16 offsets c_w. Q8_0's blocks hold their signed
// weights in the tile's order already: its tiles read them where they are packed, so a call
// of few token tiles (a batch of decode steps) does not copy every weight byte it reads.
struct Unpacked {
    const uint8_t* levels;
    int64_t stride;
    float* scale;
    float* offset;
};

constexpr bool kReadInPlace(TensorType t) {
    return t == TensorType::Q8_0;
}
// Levels read in place are prefetched kBlocksAhead blocks ahead into L1 and kFarAhead bytes
// past those into L2: the first token tile over a group reads them from memory.
constexpr int64_t kBlocksAhead = 4;
constexpr int64_t kFarAhead = 16 * 1024;

// A group's levels into `levels` (unused where they are read in place), its scales and
// offsets into u's.
template <TensorType T>
KITE_AMX void unpack_blocks(const WeightMatrix& w, const uint8_t* group, uint8_t* levels,
                            Unpacked u) {
    const GroupParts<const uint8_t> parts{group, quant_layout(T, kRows)};
    for (int64_t b = 0; b < w.cols / kQK; ++b) {
        uint8_t* dst = levels + b * kTileBytes;
        if constexpr (!kReadInPlace(T))
            for (int p = 0; p < 4; ++p) unpack_pair(parts.q(b) + 64 * p, dst + 128 * p);
        if constexpr (has_fifth_bit(T)) {  // 16 more where quad i's fifth bit (bit i) is set
            const __m512i high = _mm512_loadu_si512(parts.q(b) + 16 * kRows);
            for (int i = 0; i < 8; ++i) {
                const __mmask64 set =
                    _mm512_test_epi8_mask(high, _mm512_set1_epi8(static_cast<char>(1 << i)));
                const __m512i level = _mm512_loadu_si512(dst + 64 * i);
                _mm512_storeu_si512(dst + 64 * i,
                                    _mm512_mask_add_epi8(level, set, level, _mm512_set1_epi8(16)));
            }
        }
        if constexpr (level_offset(T) != 0 && T != TensorType::Q8_0)  // signed weights: no
            for (int i = 0; i < 8; ++i)                               // offset term to scale
                _mm512_storeu_si512(dst + 64 * i,
                                    _mm512_sub_epi8(_mm512_loadu_si512(dst + 64 * i),
                                                    _mm512_set1_epi8(level_offset(T))));
        const __m512 d =
            _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(parts.d(b))));
        _mm512_storeu_ps(u.scale + 16 * b, d);
        if constexpr (has_min(T))
            _mm512_storeu_ps(
                u.offset + 16 * b,
                _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(parts.m(b)))));
    }
}

// ---- The tile loop -------------------------------------------------------------------------

// Starts block i's product into sum tile S (amx_tiles.h): its operands into operand set S.
template <TensorType T, int S>
KITE_AMX inline void start(const uint8_t* a, long stride, const uint8_t* b) {
    if constexpr (S == 0) {
        _tile_loadd(2, a, stride);
        _tile_loadd(3, b, 64);
        _tile_zero(0);
    } else {
        _tile_loadd(4, a, stride);
        _tile_loadd(5, b, 64);
        _tile_zero(1);
    }
    if constexpr (Type<T>::kSigned && S == 0)
        _tile_dpbssd(0, 2, 3);
    else if constexpr (Type<T>::kSigned)
        _tile_dpbssd(1, 4, 5);
    else if constexpr (S == 0)
        _tile_dpbsud(0, 2, 3);
    else
        _tile_dpbsud(1, 4, 5);
}

template <int S>
KITE_AMX inline void store(int32_t (&sums)[kTileTokens][kRows]) {
    if constexpr (S == 0)
        _tile_stored(0, sums, 64);
    else
        _tile_stored(1, sums, 64);
}

// Scales one block's stored sums into the 16 tokens' accumulators (one register of 16 rows
// each): acc += sums * (d_w * d_x) + c_w * e_x, with each token's (d_x, e_x) at f, act_bytes apart.
template <TensorType T>
KITE_AMX inline __attribute__((always_inline)) void scale(const int32_t (&sums)[kTileTokens][kRows],
                                                          __m512 (&acc)[kTileTokens],
                                                          const uint8_t* f, size_t act_bytes,
                                                          const float* scale, const float* offset) {
    const __m512 d = _mm512_loadu_ps(scale);
    const __m512 c = Type<T>::kMin ? _mm512_loadu_ps(offset) : d;
#pragma GCC unroll 16
    for (int t = 0; t < kTileTokens; ++t) {
        const auto* de = reinterpret_cast<const float*>(f);  // this token's d_x, e_x
        const __m512 v = _mm512_cvtepi32_ps(_mm512_load_si512(sums[t]));
        acc[t] = _mm512_fmadd_ps(v, _mm512_mul_ps(d, _mm512_set1_ps(de[0])), acc[t]);
        if constexpr (Type<T>::kMin) acc[t] = _mm512_fmadd_ps(c, _mm512_set1_ps(de[1]), acc[t]);
        f += act_bytes;
    }
}

// 16 tokens' activation rows: a block's quants of the 16 tokens are one tile load, with the
// rows' stride.
struct TokenTile {
    const uint8_t* act;
    size_t act_bytes;
    int64_t floats_offset;  // of the (d_x, e_x) pairs in a row
};

// y[t * y_stride + r] for the 16 tokens of `x` and the `rows` valid rows of one unpacked
// group. Two sum tiles alternate, so that one block's product runs on the tile unit while
// the vector units scale the blocks before.
template <TensorType T>
KITE_AMX inline __attribute__((always_inline)) void tile(TokenTile x, int64_t blocks, Unpacked u,
                                                         float* y, int64_t y_stride, int64_t rows) {
    const long stride = static_cast<long>(x.act_bytes);
    alignas(64) int32_t sums[2][kTileTokens][kRows];
    __m512 acc[kTileTokens];
#pragma GCC unroll 16
    for (auto& a : acc) a = _mm512_setzero_ps();
    auto a = [&](int64_t i) { return x.act + quants_offset<T>(i); };
    auto b = [&](int64_t i) { return u.levels + i * u.stride; };
    auto f = [&](int64_t i) { return x.act + x.floats_offset + 8 * i; };
    auto d = [&](int64_t i) { return u.scale + kRows * i; };
    auto c = [&](int64_t i) { return u.offset + kRows * i; };
    // Block i runs in sum tile i % 2. Its sums are stored while the next block runs, and
    // scaled only after the block before it is: a load right behind a tile store waits.
    start<T, 0>(a(0), stride, b(0));
    for (int64_t i = 0; i < blocks; i += 2) {
        if constexpr (kReadInPlace(T)) prefetch_bytes<kFarAhead>(b(i + kBlocksAhead), 2 * u.stride);
        const bool second = i + 1 < blocks;
        if (second) start<T, 1>(a(i + 1), stride, b(i + 1));
        store<0>(sums[0]);
        if (i > 0) scale<T>(sums[1], acc, f(i - 1), x.act_bytes, d(i - 1), c(i - 1));
        if (i + 2 < blocks) start<T, 0>(a(i + 2), stride, b(i + 2));
        if (second) store<1>(sums[1]);
        scale<T>(sums[0], acc, f(i), x.act_bytes, d(i), c(i));
    }
    if (blocks % 2 == 0)
        scale<T>(sums[1], acc, f(blocks - 1), x.act_bytes, d(blocks - 1), c(blocks - 1));
    const __mmask16 keep = static_cast<__mmask16>((1u << rows) - 1);
#pragma GCC unroll 16
    for (int t = 0; t < kTileTokens; ++t) _mm512_mask_storeu_ps(y + t * y_stride, keep, acc[t]);
}

// Buffers of one thread, grown to the largest call and kept.
struct Scratch {
    TileBuffer levels, scales;
};

template <TensorType T>
KITE_AMX void tiled_gemm(const WeightMatrix& w, const uint8_t* act, size_t act_bytes, int64_t tiled,
                         float* y, int64_t group_begin, int64_t group_end) {
    using Ty = Type<T>;
    configure_amx_tiles();  // the shapes tile() uses: amx_tiles.h
    const int64_t blocks = w.cols / kQK;
    thread_local Scratch s;
    const int64_t chunk = std::max<int64_t>(1, kChunkBytes / (w.cols * kRows));
    uint8_t* levels = s.levels.bytes(chunk * w.cols * kRows);
    float* scales = s.scales.items<float>(chunk * blocks * kRows * 2);
    const int64_t floats_offset = static_cast<int64_t>(Ty::base().activation_bytes(w.cols));
    const int64_t bytes = group_bytes(w, kRows);
    for (int64_t g0 = group_begin; g0 < group_end; g0 += chunk) {
        const int64_t g1 = std::min(group_end, g0 + chunk);
        auto buffer = [&](int64_t g) { return levels + (g - g0) * w.cols * kRows; };
        auto unpacked = [&](int64_t g) {
            float* sc = scales + (g - g0) * blocks * kRows * 2;
            if constexpr (kReadInPlace(T))
                return Unpacked{w.packed + g * bytes, quant_layout(T, kRows).block_bytes(), sc,
                                sc + blocks * kRows};
            return Unpacked{buffer(g), kTileBytes, sc, sc + blocks * kRows};
        };
        for (int64_t g = g0; g < g1; ++g)
            unpack_blocks<T>(w, w.packed + g * bytes, buffer(g), unpacked(g));
        asm volatile("" ::: "memory");  // the tile loads read these bytes (their asm says not)
        for (int64_t t = 0; t < tiled; t += kTileTokens) {
            for (int64_t g = g0; g < g1; ++g)
                tile<T>({act + t * act_bytes, act_bytes, floats_offset}, blocks, unpacked(g),
                        y + t * w.rows + g * kRows, w.rows, std::min(kRows, w.rows - g * kRows));
        }
    }
}

template <TensorType T>
void gemm(const WeightMatrix& w, const uint8_t* act, size_t act_bytes, int64_t n_tokens, float* y,
          int64_t group_begin, int64_t group_end) {
    split_tiles_and_rest(
        Type<T>::base(), true, w, act, act_bytes, n_tokens, y, group_begin, group_end,
        [&](int64_t tiled) { tiled_gemm<T>(w, act, act_bytes, tiled, y, group_begin, group_end); });
}

template <TensorType T>
int64_t tile_groups(int64_t n_tokens) {
    return Type<T>::base().tile_groups(n_tokens);
}

template <TensorType T>
constexpr PackedKernels tiled() {
    return {Isa::Amx, kRows, activation_bytes<T>, prepare_activation<T>, tile_groups<T>, gemm<T>};
}

// The AVX-512 kernels of a type without tiles, as this level's. They are constant-initialized,
// so this copy of them is safe at any start-up order.
PackedKernels as_amx(const PackedKernels& avx512_kernels) {
    PackedKernels k = avx512_kernels;
    k.isa = Isa::Amx;
    return k;
}

}  // namespace

const PackedKernels q8_0 = tiled<TensorType::Q8_0>();
const PackedKernels q4_0 = tiled<TensorType::Q4_0>();
const PackedKernels q4_1 = tiled<TensorType::Q4_1>();
const PackedKernels q5_0 = tiled<TensorType::Q5_0>();
// Q5_1 has no tiles yet (the unpacking above handles its minimum and fifth bits; what is left
// is its Type row and a test on a CPU with AMX): the AVX-512 kernels.
const PackedKernels q5_1 = as_amx(avx512::q5_1);
// Q2_K and Q3_K have no tiles yet either (their levels unpack as the other K-quants' do, in
// packed_amx_levels.h once it reads 2-bit low registers; their Type rows and a test on a CPU
// with AMX are what is left).
const PackedKernels q2_k = as_amx(avx512::q2_k);
const PackedKernels q3_k = as_amx(avx512::q3_k);

}  // namespace kite::packed::amx
