// The AMX level's kernels for the K-quants (Q4_K, Q5_K, Q6_K): int8 tiles for prompt-sized
// calls, the AVX-512 kernels for the rest (decode, and the last tokens of a call that do not
// fill a 16-token tile).
//
// Each weight is w = d * sc_j * q - dmin * m_j: levels q (4, 5 or 6 bits, unsigned), integer
// scales sc_j and minimums m_j per sub-block j (32 columns; Q6_K: 16, with m_j = sc_j and
// dmin = 32 d), under one f16 d and dmin per row and 256-column super-block. The Q8_K
// activations have one float scale d_x per super-block, so a super-block's sums
//     S = x . W (W = sc_j * q),   M = sum_j m_j * (sum of x over sub-block j)
// are integers, and the AVX-512 kernels sum them so. A tile cannot scale its sums per
// sub-block, but W fits two bytes (|W| <= 128 * 63), W = 256 * h + l with l unsigned and h
// signed, so two full-depth tile products per 64 columns give
//     S = x . l + 256 * x . h
// exactly in int32. M comes from the activations' sub-block sums by vpdpwssd, and a
// super-block is scaled once, as on AVX-512 and in the same order:
//     y += S * (d * d_x) - M * (dmin * d_x)
// so this level's numbers are the AVX-512 level's, bit for bit. This takes twice the tile
// products of one product per sub-block, but an eighth (Q6_K: a sixteenth) of the tile stores
// and of the vector work that bound that form (packed_gemm_amx.cpp). Each thread converts a
// few groups of its rows once per call, and runs 64 tokens at a time over them while they sit
// in L2.
#include <algorithm>
#include <cstddef>
#include <cstring>

#include "kernels/cpu/amx_tiles.h"
#include "kernels/cpu/tile_buffer.h"
#include "kernels/gemm/packed_amx_levels.h"
#include "kernels/gemm/packed_amx_split.h"
#include "kernels/gemm/packed_gemm.h"
#include "kernels/gemm/packed_k_layout.h"
#include "kernels/gemm/packed_k_mins_avx512.h"
#include "kernels/gemm/packed_layout.h"
#include "quant/blocks_k.h"

namespace kite::packed::amx {

namespace {

constexpr int64_t kRows = 16;
constexpr int64_t kTileBytes = 1024;          // one 16 x 64-byte tile
constexpr int64_t kChunkBytes = 1024 * 1024;  // converted groups kept in L2 at once

template <TensorType T>
const PackedKernels& base() {
    if constexpr (T == TensorType::Q4_K) return avx512::q4_k;
    if constexpr (T == TensorType::Q5_K) return avx512::q5_k;
    return avx512::q6_k;
}

// Pairs of minimums (sub-blocks / 2) in M's vpdpwssd.
template <TensorType T>
constexpr int kMinPairs = k_layout(T, 16).sub_blocks / 2;

// ---- Activations ----------------------------------------------------------------------------
// A row: the AVX-512 kernels' (Q8_K blocks), then from the next 64-byte boundary the quants
// again, one super-block's 256 after another (each tile row is then one cache line, not two),
// then per super-block d_x and M's pair sums; rows a multiple of 64 bytes.

struct SuperBlockSums {
    float d;
    int32_t min_pairs[8];  // min_pair_sums (packed_k_layout.h): 4 (Q6_K: 8) of them
};
static_assert(sizeof(SuperBlockSums) == 36);

constexpr size_t round_up_64(size_t n) {
    return (n + 63) / 64 * 64;
}

template <TensorType T>
size_t quants_offset(int64_t cols) {
    return round_up_64(base<T>().activation_bytes(cols));
}

template <TensorType T>
size_t sums_offset(int64_t cols) {
    return quants_offset<T>(cols) + cols;
}

template <TensorType T>
size_t activation_bytes(int64_t cols) {
    return round_up_64(sums_offset<T>(cols) + (cols / kQK_K) * sizeof(SuperBlockSums));
}

template <TensorType T>
void prepare_activation(const float* x, uint8_t* dst, int64_t cols) {
    base<T>().prepare_activation(x, dst, cols);
    constexpr KLayout l = k_layout(T, kRows);
    const auto* blocks = reinterpret_cast<const BlockQ8_K*>(dst);
    uint8_t* quants = dst + quants_offset<T>(cols);
    uint8_t* sums = dst + sums_offset<T>(cols);
    for (int64_t s = 0; s < cols / kQK_K; ++s) {
        std::memcpy(quants + s * kQK_K, blocks[s].qs, kQK_K);
        SuperBlockSums e{blocks[s].d, {}};
        for (int k = 0; k < kMinPairs<T>; ++k) e.min_pairs[k] = min_pair_sums(blocks[s], l, k);
        std::memcpy(sums + s * sizeof(SuperBlockSums), &e, sizeof(e));
    }
}

// ---- Weights: per super-block, the tiles of l and h, then M's and the scaling's factors ----

constexpr int64_t kLoOffset = 0;                   // 4 column steps of one tile each
constexpr int64_t kHiOffset = 4 * kTileBytes;      // the same for h
constexpr int64_t kMinOffset = 8 * kTileBytes;     // up to 8 x 16 rows x (m_2k, m_2k+1), int16
constexpr int64_t kDOffset = kMinOffset + 8 * 64;  // 16 floats
constexpr int64_t kDminOffset = kDOffset + 64;     // 16 floats
constexpr int64_t kSuperBlockBytes = kDminOffset + 64;

int64_t converted_group_bytes(int64_t cols) {
    return cols / kQK_K * kSuperBlockBytes;
}

// 16 rows' int8 scales as the factors split() takes: each row's in the even bytes (`even`) or
// the odd bytes (`odd`) of its 4, the other bytes zero.
struct RowScales {
    __m512i even, odd;
};

KITE_AMX inline RowScales row_scales(__m128i scales) {
    const __m512i spread = _mm512_shuffle_epi8(  // row r's scale in bytes 4r..4r+3
        _mm512_cvtepi8_epi32(scales),
        _mm512_broadcast_i32x4(_mm_setr_epi32(0, 0x04040404, 0x08080808, 0x0c0c0c0c)));
    const __m512i low = _mm512_set1_epi16(0xff);
    return {_mm512_and_si512(spread, low), _mm512_andnot_si512(low, spread)};
}

// The low and high bytes l and h of W = sc * q for one line of levels q (16 rows x 4 bytes):
// vpmaddubsw with one factor of each pair zero gives the even and the odd bytes' W as 16-bit
// words (|W| <= 63 * 128: no saturation), and their bytes are blended into place.
KITE_AMX inline void split(__m512i q, const RowScales& sc, __m512i& l, __m512i& h) {
    const __m512i even = _mm512_maddubs_epi16(q, sc.even);
    const __m512i odd = _mm512_maddubs_epi16(q, sc.odd);
    constexpr __mmask64 kOddBytes = 0xaaaaaaaaaaaaaaaaull;
    l = _mm512_mask_blend_epi8(kOddBytes, even, _mm512_slli_epi16(odd, 8));
    h = _mm512_mask_blend_epi8(kOddBytes, _mm512_srli_epi16(even, 8), odd);
}

template <TensorType T>
KITE_AMX void convert_group(const uint8_t* group, int64_t cols, uint8_t* dst) {
    constexpr KLayout l = k_layout(T, kRows);
    constexpr int kLines = 64 / l.sub_blocks;  // of 4 columns, per sub-block
    for (int64_t s = 0; s < cols / kQK_K; ++s, dst += kSuperBlockBytes) {
        const uint8_t* sb = group + s * l.super_block_bytes();
        unpack_k_levels<T>(sb, dst + kLoOffset);
        for (int j = 0; j < l.sub_blocks; ++j) {
            const RowScales sc = row_scales(
                _mm_loadu_si128(reinterpret_cast<const __m128i*>(sb + l.scale_offset() + j * 16)));
            for (int line = kLines * j; line < kLines * (j + 1); ++line) {
                __m512i lo, hi;
                split(_mm512_loadu_si512(dst + kLoOffset + 64 * line), sc, lo, hi);
                _mm512_storeu_si512(dst + kLoOffset + 64 * line, lo);
                _mm512_storeu_si512(dst + kHiOffset + 64 * line, hi);
            }
        }
        for (int k = 0; k < kMinPairs<T>; ++k)
            _mm512_storeu_si512(dst + kMinOffset + 64 * k, min_pair<l>(sb, k));
        _mm512_storeu_ps(dst + kDOffset, _mm512_cvtph_ps(_mm256_loadu_si256(
                                             reinterpret_cast<const __m256i*>(sb + l.d_offset()))));
        _mm512_storeu_ps(dst + kDminOffset,
                         _mm512_cvtph_ps(_mm256_loadu_si256(
                             reinterpret_cast<const __m256i*>(sb + l.dmin_offset()))));
    }
}

// ---- The tile loop --------------------------------------------------------------------------
//   tmm0, 1  S's two parts (x . l, x . h) of token tile 0; tmm2, 3 those of token tile 1
//   tmm4, 5  the activations of the two token tiles for one 64-column step
//   tmm6, 7  the weights' l and h for that step

// Column step k (of 4) of one unit's products: a holds the unit's first token's quants of the
// super-block (act_bytes apart), b the converted super-block.
template <int TT>
KITE_AMX inline __attribute__((always_inline)) void products(const uint8_t* a, long act_bytes,
                                                             const uint8_t* b, int k) {
    if (k == 0) {
        _tile_zero(0);
        _tile_zero(1);
        if constexpr (TT > 1) {
            _tile_zero(2);
            _tile_zero(3);
        }
    }
    _tile_loadd(4, a + 64 * k, act_bytes);
    if constexpr (TT > 1) _tile_loadd(5, a + 64 * k + kTileTokens * act_bytes, act_bytes);
    _tile_loadd(6, b + kLoOffset + kTileBytes * k, 64);
    _tile_dpbsud(0, 4, 6);
    if constexpr (TT > 1) _tile_dpbsud(2, 5, 6);
    _tile_loadd(7, b + kHiOffset + kTileBytes * k, 64);
    _tile_dpbssd(1, 4, 7);
    if constexpr (TT > 1) _tile_dpbssd(3, 5, 7);
}

template <int TT>
KITE_AMX inline __attribute__((always_inline)) void store(int32_t (*sums)[kTileTokens][kRows]) {
    _tile_stored(0, sums[0], 64);
    _tile_stored(1, sums[1], 64);
    if constexpr (TT > 1) {
        _tile_stored(2, sums[2], 64);
        _tile_stored(3, sums[3], 64);
    }
}

// A converted super-block's factors of the scaling.
struct Factors {
    __m512 d, dmin;
    __m512i mins[8];
};

template <TensorType T>
KITE_AMX inline __attribute__((always_inline)) Factors factors(const uint8_t* b) {
    Factors f{_mm512_loadu_ps(b + kDOffset), _mm512_loadu_ps(b + kDminOffset), {}};
    for (int k = 0; k < kMinPairs<T>; ++k) f.mins[k] = _mm512_loadu_si512(b + kMinOffset + 64 * k);
    return f;
}

// acc[m] += S * (d * d_x) - M * (dmin * d_x) for tokens [m0, m1) of one stored unit, in the
// AVX-512 kernels' order (kFirst: from acc[m] = 0); token m's SuperBlockSums at
// e + m * act_bytes.
template <TensorType T, bool kFirst>
KITE_AMX inline __attribute__((always_inline)) void scale(const int32_t (*sums)[kTileTokens][kRows],
                                                          const uint8_t* e, size_t act_bytes,
                                                          const Factors& f, float* acc, int m0,
                                                          int m1) {
    for (int m = m0; m < m1; ++m) {
        const int i = m / kTileTokens, t = m % kTileTokens;
        const __m512i s =
            _mm512_add_epi32(_mm512_load_si512(sums[2 * i][t]),
                             _mm512_slli_epi32(_mm512_load_si512(sums[2 * i + 1][t]), 8));
        SuperBlockSums x;
        std::memcpy(&x, e + m * act_bytes, sizeof(x));
        __m512i mins = _mm512_dpwssd_epi32(_mm512_setzero_si512(), f.mins[0],
                                           _mm512_set1_epi32(x.min_pairs[0]));
        for (int k = 1; k < kMinPairs<T>; ++k)
            mins = _mm512_dpwssd_epi32(mins, f.mins[k], _mm512_set1_epi32(x.min_pairs[k]));
        const __m512 dx = _mm512_set1_ps(x.d), scaled = _mm512_cvtepi32_ps(s);
        const __m512 a = kFirst ? _mm512_mul_ps(scaled, _mm512_mul_ps(f.d, dx))
                                : _mm512_fmadd_ps(scaled, _mm512_mul_ps(f.d, dx),
                                                  _mm512_load_ps(acc + kRows * m));
        _mm512_store_ps(acc + kRows * m,
                        _mm512_fnmadd_ps(_mm512_cvtepi32_ps(mins), _mm512_mul_ps(f.dmin, dx), a));
    }
}

// acc (n_units x TT * 16 tokens x 16 rows) = the tokens at a times one converted group g.
// Super-block by super-block, so that its weights stay in L1 while every unit of tokens
// passes over them. A unit's sums are scaled a quarter at a time between the next unit's
// column steps: the tile registers are not renamed, so a tile load waits in order for the
// products before it, and vector work placed behind it would wait with it.
template <TensorType T, int TT>
KITE_AMX void group_tokens(const uint8_t* a, size_t act_bytes, int64_t quants_offset,
                           int64_t sums_offset, int64_t n_units, int64_t n_super, const uint8_t* g,
                           float* acc) {
    constexpr int kUnitTokens = TT * kTileTokens, kQuarter = kUnitTokens / 4;
    alignas(64) int32_t sums[4][kTileTokens][kRows];
    const long stride = static_cast<long>(act_bytes);
    auto tokens = [&](int64_t u) { return a + u * kUnitTokens * act_bytes; };
    auto quants = [&](int64_t s, int64_t u) { return tokens(u) + quants_offset + s * kQK_K; };
    auto weights = [&](int64_t s) { return g + s * kSuperBlockBytes; };
    for (int k = 0; k < 4; ++k) products<TT>(quants(0, 0), stride, weights(0), k);
    for (int64_t s = 0; s < n_super; ++s) {
        const Factors f = factors<T>(weights(s));
        for (int64_t u = 0; u < n_units; ++u) {
            store<TT>(sums);
            asm volatile("" ::: "memory");  // the tile stores wrote the sums (their asm says not)
            // The next unit: the next tokens, or the first ones on the next super-block.
            const bool last_unit = u + 1 == n_units, next = !last_unit || s + 1 < n_super;
            const uint8_t* next_a = last_unit ? quants(s + 1, 0) : quants(s, u + 1);
            const uint8_t* next_b = weights(last_unit ? s + 1 : s);
            const uint8_t* e =
                tokens(u) + sums_offset + s * static_cast<int64_t>(sizeof(SuperBlockSums));
            float* unit_acc = acc + u * kUnitTokens * kRows;
            for (int k = 0; k < 4; ++k) {
                if (next) products<TT>(next_a, stride, next_b, k);
                if (s == 0)
                    scale<T, true>(sums, e, act_bytes, f, unit_acc, k * kQuarter,
                                   (k + 1) * kQuarter);
                else
                    scale<T, false>(sums, e, act_bytes, f, unit_acc, k * kQuarter,
                                    (k + 1) * kQuarter);
            }
        }
    }
}

// Buffers of one thread, grown to the largest call and kept.
struct Scratch {
    TileBuffer groups;
};

// Tokens per pass over a group: their activations stay in L2 (a 4,864-column row is 5 KB).
constexpr int64_t kTokenBlock = 64;

template <TensorType T>
KITE_AMX void tiled_gemm(const WeightMatrix& w, const uint8_t* act, size_t act_bytes, int64_t tiled,
                         float* y, int64_t group_begin, int64_t group_end) {
    configure_full_amx_tiles();
    const int64_t n_super = w.cols / kQK_K, converted = converted_group_bytes(w.cols);
    const int64_t chunk = std::max<int64_t>(1, kChunkBytes / converted);
    thread_local Scratch s;
    uint8_t* groups = s.groups.bytes(chunk * converted);
    alignas(64) float acc[kTokenBlock * kRows];
    const int64_t packed_bytes = group_bytes(w, kRows);
    const auto quants = static_cast<int64_t>(quants_offset<T>(w.cols));
    const auto sums = static_cast<int64_t>(sums_offset<T>(w.cols));
    for (int64_t g0 = group_begin; g0 < group_end; g0 += chunk) {
        const int64_t g1 = std::min(group_end, g0 + chunk);
        for (int64_t g = g0; g < g1; ++g)
            convert_group<T>(w.packed + g * packed_bytes, w.cols, groups + (g - g0) * converted);
        asm volatile("" ::: "memory");  // the tile loads read these bytes (their asm says not)
        for (int64_t t = 0; t < tiled; t += kTokenBlock) {
            const int64_t tokens = std::min(kTokenBlock, tiled - t);
            const int64_t pairs = tokens / (2 * kTileTokens);  // then one 16-token tile, or none
            const uint8_t* a = act + t * act_bytes;
            for (int64_t g = g0; g < g1; ++g) {
                const uint8_t* group = groups + (g - g0) * converted;
                if (pairs > 0)
                    group_tokens<T, 2>(a, act_bytes, quants, sums, pairs, n_super, group, acc);
                if (tokens % (2 * kTileTokens) != 0)
                    group_tokens<T, 1>(a + pairs * 2 * kTileTokens * act_bytes, act_bytes, quants,
                                       sums, 1, n_super, group,
                                       acc + pairs * 2 * kTileTokens * kRows);
                const int64_t rows = std::min(kRows, w.rows - g * kRows);
                const __mmask16 keep = static_cast<__mmask16>((1u << rows) - 1);
                for (int64_t m = 0; m < tokens; ++m)
                    _mm512_mask_storeu_ps(y + (t + m) * w.rows + g * kRows, keep,
                                          _mm512_load_ps(acc + m * kRows));
            }
        }
    }
}

template <TensorType T>
void gemm(const WeightMatrix& w, const uint8_t* act, size_t act_bytes, int64_t n_tokens, float* y,
          int64_t group_begin, int64_t group_end) {
    split_tiles_and_rest(
        base<T>(), true, w, act, act_bytes, n_tokens, y, group_begin, group_end,
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

const PackedKernels q4_k = tiled<TensorType::Q4_K>();
const PackedKernels q5_k = tiled<TensorType::Q5_K>();
const PackedKernels q6_k = tiled<TensorType::Q6_K>();

}  // namespace kite::packed::amx
