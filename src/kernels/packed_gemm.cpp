// Packing (portable) and the AVX-512 kernels for packed weights. See packed_gemm.h for the
// layout. GCC 12's AVX-512 headers seed results with _mm512_undefined_*(), which its own
// -Wuninitialized then reports wherever they are inlined (GCC bug 105593, fixed in 13).
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include "kernels/packed_gemm.h"

#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/error.h"
#include "kernels/cpu_features.h"
#include "kernels/microbench.h"
#include "quant/blocks.h"
#include "quant/fp16.h"

namespace kite {

void AlignedFree::operator()(uint8_t* p) const {
    std::free(p);
}

namespace {

// ---- Layout ---------------------------------------------------------------------------------

// Per group of 16 rows and 32-column block: the quant bytes, then the f16 scales, (Q4_1) the
// f16 minimums and the int16 negated weight sums. Each part is stored for all blocks of the
// group in turn, so the quant loads stay 64-byte aligned.
struct QuantLayout {
    int64_t quant_bytes;  // per block: 512 (Q8_0) or 256 (Q4_*)
    bool has_min;
    int64_t block_bytes() const { return quant_bytes + 32 + (has_min ? 32 : 0) + 32; }
};

QuantLayout quant_layout(TensorType t) {
    return {t == TensorType::Q8_0 ? 512 : 256, t == TensorType::Q4_1};
}

constexpr bool is_float(TensorType t) {
    return t == TensorType::F32 || t == TensorType::F16 || t == TensorType::BF16;
}

int64_t element_bytes(TensorType t) {
    return t == TensorType::F32 ? 4 : 2;
}

int64_t n_groups(const WeightMatrix& w) {
    return (w.rows + kPackRows - 1) / kPackRows;
}

// BF16 columns go in pairs, the operand of one vdpbf16ps lane (an odd last column is padded).
int64_t bf16_pairs(int64_t cols) {
    return (cols + 1) / 2;
}

int64_t group_bytes(const WeightMatrix& w) {
    if (w.type == TensorType::BF16) return bf16_pairs(w.cols) * kPackRows * 4;
    if (is_float(w.type)) return w.cols * kPackRows * element_bytes(w.type);
    return w.cols / kQK * quant_layout(w.type).block_bytes();
}

// The parts of one group's packed bytes (Byte: uint8_t to pack, const uint8_t to read).
template <typename Byte>
struct GroupParts {
    static constexpr bool kConst = std::is_const_v<Byte>;
    using U16 = std::conditional_t<kConst, const uint16_t, uint16_t>;
    using I16 = std::conditional_t<kConst, const int16_t, int16_t>;
    Byte* q;
    U16* d;
    U16* m;  // Q4_1 only
    I16* nsum;
};

template <typename Byte>
GroupParts<Byte> group_parts(Byte* group, int64_t nb, const QuantLayout& l) {
    using P = GroupParts<Byte>;
    P p;
    p.q = group;
    p.d = reinterpret_cast<typename P::U16*>(group + nb * l.quant_bytes);
    p.m = l.has_min ? p.d + nb * kPackRows : nullptr;
    p.nsum = reinterpret_cast<typename P::I16*>((l.has_min ? p.m : p.d) + nb * kPackRows);
    return p;
}

// Signed weight j of a block (its value before the scale), for Q4_0 the nibble minus 8.
template <typename Block>
int signed_weight(const Block& b, int j) {
    if constexpr (std::is_same_v<Block, BlockQ8_0>) {
        return b.qs[j];
    } else {
        const int nibble = j < 16 ? b.qs[j] & 0x0f : b.qs[j - 16] >> 4;
        return std::is_same_v<Block, BlockQ4_0> ? nibble - 8 : nibble;
    }
}

template <typename Block>
void pack_quant_row(const Block* src, int64_t nb, const GroupParts<uint8_t>& p, int r) {
    constexpr bool kQ8 = std::is_same_v<Block, BlockQ8_0>;
    for (int64_t b = 0; b < nb; ++b) {
        const Block& blk = src[b];
        p.d[b * kPackRows + r] = blk.d;
        if constexpr (std::is_same_v<Block, BlockQ4_1>) p.m[b * kPackRows + r] = blk.m;
        int sum = 0;
        for (int j = 0; j < kQK; ++j) sum += signed_weight(blk, j);
        p.nsum[b * kPackRows + r] = static_cast<int16_t>(-sum);
        uint8_t* q = p.q + b * (kQ8 ? 512 : 256);
        for (int j = 0; j < kQK; ++j) {
            const int quad = j / 4, i = j % 4, w = signed_weight(blk, j);
            if constexpr (kQ8) {
                q[(quad * kPackRows + r) * 4 + i] = static_cast<uint8_t>(w);
            } else {
                // The kernel gets the signed weight back: Q4_0 subtracts 8, Q4_1 is unsigned.
                const int nibble = std::is_same_v<Block, BlockQ4_0> ? w + 8 : w;
                q[((quad / 2) * kPackRows + r) * 4 + i] |=
                    static_cast<uint8_t>(nibble << (quad % 2 ? 4 : 0));
            }
        }
    }
}

template <typename Block>
void pack_quant(const WeightMatrix& w, uint8_t* out) {
    const int64_t nb = w.cols / kQK;
    const QuantLayout l = quant_layout(w.type);
    for (int64_t g = 0; g < n_groups(w); ++g) {
        const GroupParts<uint8_t> p = group_parts(out + g * group_bytes(w), nb, l);
        for (int r = 0; r < kPackRows && g * kPackRows + r < w.rows; ++r)
            pack_quant_row(
                reinterpret_cast<const Block*>(w.data + (g * kPackRows + r) * w.row_bytes), nb, p,
                r);
    }
}

void pack_float(const WeightMatrix& w, uint8_t* out) {
    const int64_t es = element_bytes(w.type);
    for (int64_t g = 0; g < n_groups(w); ++g) {
        uint8_t* group = out + g * group_bytes(w);
        for (int r = 0; r < kPackRows && g * kPackRows + r < w.rows; ++r) {
            const uint8_t* row = w.data + (g * kPackRows + r) * w.row_bytes;
            for (int64_t k = 0; k < w.cols; ++k)
                std::memcpy(group + (k * kPackRows + r) * es, row + k * es, es);
        }
    }
}

// Per group, per column pair: row r's two bf16 values at bytes 4r..4r+3.
void pack_bf16(const WeightMatrix& w, uint8_t* out) {
    for (int64_t g = 0; g < n_groups(w); ++g) {
        uint8_t* group = out + g * group_bytes(w);
        for (int r = 0; r < kPackRows && g * kPackRows + r < w.rows; ++r) {
            const uint8_t* row = w.data + (g * kPackRows + r) * w.row_bytes;
            for (int64_t k = 0; k < w.cols; ++k)
                std::memcpy(group + ((k / 2) * kPackRows + r) * 4 + (k % 2) * 2, row + 2 * k, 2);
        }
    }
}

// ---- Kernels --------------------------------------------------------------------------------

#define KITE_AVX512 \
    __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx512dq,f16c,fma")))

KITE_AVX512 inline float h2f(uint16_t h) {
    return _cvtsh_ss(h);
}

KITE_AVX512 inline __m512 load_f16x16(const uint16_t* p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}

// The two quads (8 columns) of pair p of a block for 16 rows, as signed bytes.
template <TensorType T>
KITE_AVX512 inline void load_quads(const uint8_t* q, int p, __m512i& lo, __m512i& hi) {
    if constexpr (T == TensorType::Q8_0) {
        lo = _mm512_loadu_si512(q + 128 * p);
        hi = _mm512_loadu_si512(q + 128 * p + 64);
    } else {
        const __m512i v = _mm512_loadu_si512(q + 64 * p);
        const __m512i mask = _mm512_set1_epi8(0x0f);
        lo = _mm512_and_si512(v, mask);
        hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), mask);
        if constexpr (T == TensorType::Q4_0) {
            lo = _mm512_sub_epi8(lo, _mm512_set1_epi8(8));
            hi = _mm512_sub_epi8(hi, _mm512_set1_epi8(8));
        }
    }
}

KITE_AVX512 inline void store_rows(float* y, int64_t rows_left, __m512 v) {
    if (rows_left >= kPackRows)
        _mm512_storeu_ps(y, v);
    else
        _mm512_mask_storeu_ps(y, static_cast<__mmask16>((1u << rows_left) - 1), v);
}

// A tile's accumulators: (group g, token c) holds 16 rows of token t0 + c.
template <int G, int C>
KITE_AVX512 inline void zero_tile(__m512 (&acc)[G][C]) {
    for (int g = 0; g < G; ++g)
        for (int c = 0; c < C; ++c) acc[g][c] = _mm512_setzero_ps();
}

template <int G, int C>
KITE_AVX512 inline void store_tile(const __m512 (&acc)[G][C], const WeightMatrix& w, int64_t g0,
                                   int64_t t0, float* y) {
    for (int g = 0; g < G; ++g)
        for (int c = 0; c < C; ++c)
            store_rows(y + (t0 + c) * w.rows + (g0 + g) * kPackRows, w.rows - (g0 + g) * kPackRows,
                       acc[g][c]);
}

// G groups (16 G rows) times C tokens. Per block, each (group, token) gathers an int32 sum
// for 16 rows from 8 VNNI steps, then one FMA scales it by the row and token scales.
template <TensorType T, int G, int C>
KITE_AVX512 void quant_tile(const WeightMatrix& w, const uint8_t* groups, const uint8_t* act,
                            size_t act_bytes, int64_t g0, int64_t t0, float* y) {
    const int64_t nb = w.cols / kQK;
    const QuantLayout l = quant_layout(T);
    GroupParts<const uint8_t> parts[G];
    for (int g = 0; g < G; ++g) parts[g] = group_parts(groups + g * group_bytes(w), nb, l);
    const BlockQ8Biased* x[C];
    for (int c = 0; c < C; ++c)
        x[c] = reinterpret_cast<const BlockQ8Biased*>(act + (t0 + c) * act_bytes);

    __m512 acc[G][C];
    zero_tile(acc);

    for (int64_t b = 0; b < nb; ++b) {
        __m512i sum[G][C];
        for (int g = 0; g < G; ++g) {
            // Start from -128 * sum(w): the activations carry +128 each.
            const __m512i seed = _mm512_slli_epi32(
                _mm512_cvtepi16_epi32(_mm256_loadu_si256(
                    reinterpret_cast<const __m256i*>(parts[g].nsum + b * kPackRows))),
                7);
            for (int c = 0; c < C; ++c) sum[g][c] = seed;
        }
        for (int p = 0; p < 4; ++p) {
            __m512i lo[G], hi[G];
            for (int g = 0; g < G; ++g)
                load_quads<T>(parts[g].q + b * l.quant_bytes, p, lo[g], hi[g]);
            for (int c = 0; c < C; ++c) {
                int32_t xa, xb;
                std::memcpy(&xa, x[c][b].qs + 8 * p, 4);
                std::memcpy(&xb, x[c][b].qs + 8 * p + 4, 4);
                const __m512i va = _mm512_set1_epi32(xa), vb = _mm512_set1_epi32(xb);
                for (int g = 0; g < G; ++g) {
                    sum[g][c] = _mm512_dpbusd_epi32(sum[g][c], va, lo[g]);
                    sum[g][c] = _mm512_dpbusd_epi32(sum[g][c], vb, hi[g]);
                }
            }
        }
        float dx[C], sx[C];  // the tokens' block scales (and scaled sums), once per block
        for (int c = 0; c < C; ++c) {
            dx[c] = h2f(x[c][b].d);
            if constexpr (T == TensorType::Q4_1) sx[c] = h2f(x[c][b].s);
        }
        for (int g = 0; g < G; ++g) {
            const __m512 dw = load_f16x16(parts[g].d + b * kPackRows);
            for (int c = 0; c < C; ++c) {
                const __m512 scale = _mm512_mul_ps(dw, _mm512_set1_ps(dx[c]));
                acc[g][c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum[g][c]), scale, acc[g][c]);
            }
            if constexpr (T == TensorType::Q4_1) {
                const __m512 mw = load_f16x16(parts[g].m + b * kPackRows);
                for (int c = 0; c < C; ++c)
                    acc[g][c] = _mm512_fmadd_ps(mw, _mm512_set1_ps(sx[c]), acc[g][c]);
            }
        }
    }
    store_tile(acc, w, g0, t0, y);
}

template <TensorType T>
KITE_AVX512 inline __m512 load_float_rows(const uint8_t* p) {
    if constexpr (T == TensorType::F32) return _mm512_loadu_ps(p);
    return load_f16x16(reinterpret_cast<const uint16_t*>(p));
}

// G groups times C tokens for F32 and F16 weights: per column, one FMA per (group, token).
template <TensorType T, int G, int C>
KITE_AVX512 void float_tile(const WeightMatrix& w, const uint8_t* groups, const uint8_t* act,
                            size_t act_bytes, int64_t g0, int64_t t0, float* y) {
    constexpr int64_t kColBytes = kPackRows * (T == TensorType::F32 ? 4 : 2);
    const uint8_t* wg[G];  // T, not w.type: F16 groups may come converted to F32
    for (int g = 0; g < G; ++g) wg[g] = groups + g * w.cols * kColBytes;
    const float* x[C];
    for (int c = 0; c < C; ++c) x[c] = reinterpret_cast<const float*>(act + (t0 + c) * act_bytes);

    __m512 acc[G][C];
    zero_tile(acc);
    for (int64_t k = 0; k < w.cols; ++k) {
        __m512 wv[G];
        for (int g = 0; g < G; ++g) wv[g] = load_float_rows<T>(wg[g] + k * kColBytes);
        for (int c = 0; c < C; ++c) {
            const __m512 xv = _mm512_set1_ps(x[c][k]);
            for (int g = 0; g < G; ++g) acc[g][c] = _mm512_fmadd_ps(wv[g], xv, acc[g][c]);
        }
    }
    store_tile(acc, w, g0, t0, y);
}

#define KITE_AVX512_BF16                                                        \
    __attribute__((                                                             \
        target("avx512f,avx512bw,avx512vl,avx512vnni,avx512dq,avx512bf16,f16c," \
               "fma")))

// G groups times C tokens for BF16 weights and bf16 activation pairs: one vdpbf16ps per
// (group, token) and column pair multiplies 2 columns of 16 rows, no conversion needed.
template <int G, int C>
KITE_AVX512_BF16 void bf16_tile(const WeightMatrix& w, const uint8_t* groups, const uint8_t* act,
                                size_t act_bytes, int64_t g0, int64_t t0, float* y) {
    const uint8_t* wg[G];
    for (int g = 0; g < G; ++g) wg[g] = groups + g * group_bytes(w);
    const uint8_t* x[C];
    for (int c = 0; c < C; ++c) x[c] = act + (t0 + c) * act_bytes;

    __m512 acc[G][C];
    zero_tile(acc);
    for (int64_t k = 0; k < bf16_pairs(w.cols); ++k) {
        __m512bh wv[G];
        for (int g = 0; g < G; ++g) wv[g] = (__m512bh)_mm512_loadu_si512(wg[g] + k * 64);
        for (int c = 0; c < C; ++c) {
            int32_t pair;
            std::memcpy(&pair, x[c] + 4 * k, 4);
            const __m512bh xv = (__m512bh)_mm512_set1_epi32(pair);
            for (int g = 0; g < G; ++g) acc[g][c] = _mm512_dpbf16_ps(acc[g][c], wv[g], xv);
        }
    }
    store_tile(acc, w, g0, t0, y);
}

// A BF16 pair register as f32: each 32-bit lane holds row r's columns 2k (low half) and
// 2k + 1 (high half), so a shift gives column 2k and a mask column 2k + 1.
KITE_AVX512 inline void widen_bf16_pair(__m512i v, __m512& even, __m512& odd) {
    even = _mm512_castsi512_ps(_mm512_slli_epi32(v, 16));
    odd =
        _mm512_castsi512_ps(_mm512_and_si512(v, _mm512_set1_epi32(static_cast<int>(0xffff0000u))));
}

// n (a multiple of 16) f16 values to f32.
KITE_AVX512 void convert_f16_to_f32(const uint16_t* src, float* dst, int64_t n) {
    for (int64_t i = 0; i < n; i += 16) _mm512_storeu_ps(dst + i, load_f16x16(src + i));
}

// The column pairs of `groups` BF16 groups to F32 groups of w.cols columns.
KITE_AVX512 void widen_bf16_pairs(const WeightMatrix& w, const uint8_t* src, float* dst,
                                  int64_t groups) {
    for (int64_t g = 0; g < groups; ++g, src += group_bytes(w), dst += kPackRows * w.cols)
        for (int64_t k = 0; k < w.cols; k += 2) {
            __m512 even, odd;
            widen_bf16_pair(_mm512_loadu_si512(src + k * 32), even, odd);
            _mm512_storeu_ps(dst + k * kPackRows, even);
            if (k + 1 < w.cols) _mm512_storeu_ps(dst + (k + 1) * kPackRows, odd);
        }
}

// Tokens from which F16 (and widened BF16) weights are converted to F32 once per call (see
// packed_gemm).
constexpr int64_t kConvertTokens = 64;

// The same product as bf16_tile with f32 FMAs, for CPUs that run vdpbf16ps slowly: the
// pairs are widened (widen_bf16_pair), and the activations come as f32 already rounded to
// bf16.
template <int G, int C>
KITE_AVX512 void bf16_widen_tile(const WeightMatrix& w, const uint8_t* groups, const uint8_t* act,
                                 size_t act_bytes, int64_t g0, int64_t t0, float* y) {
    const uint8_t* wg[G];
    for (int g = 0; g < G; ++g) wg[g] = groups + g * group_bytes(w);
    const float* x[C];
    for (int c = 0; c < C; ++c) x[c] = reinterpret_cast<const float*>(act + (t0 + c) * act_bytes);

    __m512 acc[G][C];
    zero_tile(acc);
    for (int64_t k = 0; k < bf16_pairs(w.cols); ++k) {
        __m512 even[G], odd[G];
        for (int g = 0; g < G; ++g)
            widen_bf16_pair(_mm512_loadu_si512(wg[g] + k * 64), even[g], odd[g]);
        for (int c = 0; c < C; ++c) {
            const __m512 xe = _mm512_set1_ps(x[c][2 * k]), xo = _mm512_set1_ps(x[c][2 * k + 1]);
            for (int g = 0; g < G; ++g) {
                acc[g][c] = _mm512_fmadd_ps(even[g], xe, acc[g][c]);
                acc[g][c] = _mm512_fmadd_ps(odd[g], xo, acc[g][c]);
            }
        }
    }
    store_tile(acc, w, g0, t0, y);
}

// BF16 product per process: vdpbf16ps where it measured faster than FMA on this CPU.
std::atomic<Bf16Kernel>& bf16_kernel_choice() {
    static std::atomic<Bf16Kernel> choice{bf16_dot_outruns_fp32_fma() ? Bf16Kernel::Dot
                                                                      : Bf16Kernel::Widen};
    return choice;
}

// ---- Dispatch -------------------------------------------------------------------------------

using TileFn = void (*)(const WeightMatrix&, const uint8_t*, const uint8_t*, size_t, int64_t,
                        int64_t, float*);

// Most tokens per tile: quantized tiles hold an int32 sum and a float accumulator per
// (group, token), so 2 groups x 4 tokens fill the registers; float tiles hold only the
// accumulator, and 2 x 8 converts each f16/bf16 weight register once for 8 tokens.
constexpr int tile_tokens(TensorType t) {
    return is_float(t) ? 8 : 4;
}

// Tiles of 1, 2 or 4 groups by 1..tile_tokens(T) tokens, for weight type T.
struct TileTable {
    TileFn fn[3][8];  // [log2 groups][tokens - 1]
};

// kWiden: BF16 tiles with FMA instead of vdpbf16ps (see bf16_widen_tile).
template <TensorType T, bool kWiden, int G, int... C>
constexpr void fill_row(TileFn* row, std::integer_sequence<int, C...>) {
    if constexpr (T == TensorType::BF16 && kWiden) {
        ((row[C] = bf16_widen_tile<G, C + 1>), ...);
    } else if constexpr (T == TensorType::BF16) {
        ((row[C] = bf16_tile<G, C + 1>), ...);
    } else if constexpr (is_float(T)) {
        ((row[C] = float_tile<T, G, C + 1>), ...);
    } else {
        ((row[C] = quant_tile<T, G, C + 1>), ...);
    }
}

template <TensorType T, bool kWiden = false>
constexpr TileTable make_table() {
    TileTable t{};
    constexpr auto tokens = std::make_integer_sequence<int, tile_tokens(T)>{};
    fill_row<T, kWiden, 1>(t.fn[0], tokens);
    fill_row<T, kWiden, 2>(t.fn[1], tokens);
    fill_row<T, kWiden, 4>(t.fn[2], tokens);
    return t;
}

const TileTable& table(TensorType t) {
    static const TileTable q8 = make_table<TensorType::Q8_0>(),
                           q40 = make_table<TensorType::Q4_0>(),
                           q41 = make_table<TensorType::Q4_1>(),
                           f32 = make_table<TensorType::F32>(), f16 = make_table<TensorType::F16>(),
                           bf16 = make_table<TensorType::BF16>(),
                           bf16_widened = make_table<TensorType::BF16, true>();
    switch (t) {
        case TensorType::Q8_0:
            return q8;
        case TensorType::Q4_0:
            return q40;
        case TensorType::Q4_1:
            return q41;
        case TensorType::F32:
            return f32;
        case TensorType::F16:
            return f16;
        default:
            return bf16_kernel() == Bf16Kernel::Dot ? bf16 : bf16_widened;
    }
}

KITE_AVX512 void quantize_biased(const float* x, BlockQ8Biased* out, int64_t cols) {
    for (int64_t b = 0; b < cols / kQK; ++b, x += kQK) {
        const __m512 v0 = _mm512_loadu_ps(x), v1 = _mm512_loadu_ps(x + 16);
        const float amax =
            _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(v0), _mm512_abs_ps(v1)));
        // As the reference activation quantizer: 127 / amax, round half to even.
        const float d = amax / 127.0f;
        const __m512 id = _mm512_set1_ps(amax != 0.0f ? 127.0f / amax : 0.0f);
        const __m512i q0 = _mm512_cvtps_epi32(_mm512_mul_ps(v0, id));
        const __m512i q1 = _mm512_cvtps_epi32(_mm512_mul_ps(v1, id));
        const int sum = _mm512_reduce_add_epi32(_mm512_add_epi32(q0, q1));
        const __m128i bias = _mm_set1_epi8(static_cast<char>(0x80));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(out[b].qs),
                         _mm_xor_si128(_mm512_cvtepi32_epi8(q0), bias));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(out[b].qs + 16),
                         _mm_xor_si128(_mm512_cvtepi32_epi8(q1), bias));
        out[b].d = f32_to_f16(d);
        out[b].s = f32_to_f16(d * static_cast<float>(sum));
    }
}

}  // namespace

bool can_pack(TensorType type) {
    const CpuFeatures& f = cpu_features();
    if (!(f.avx512 && f.avx512_vnni && f.avx512_dq && f.f16c)) return false;
    return is_float(type) || type == TensorType::Q8_0 || type == TensorType::Q4_0 ||
           type == TensorType::Q4_1;
}

PackedBytes pack_weights(const WeightMatrix& w) {
    if (!can_pack(w.type)) fail("pack_weights: no packed kernel for {}", tensor_type_name(w.type));
    const size_t bytes = static_cast<size_t>(n_groups(w) * group_bytes(w));
    const size_t rounded = (bytes + 63) / 64 * 64;
    PackedBytes out(static_cast<uint8_t*>(std::aligned_alloc(64, rounded)));
    if (!out) fail("pack_weights: out of memory ({} bytes)", rounded);
    std::memset(out.get(), 0, rounded);
    switch (w.type) {
        case TensorType::Q8_0:
            pack_quant<BlockQ8_0>(w, out.get());
            break;
        case TensorType::Q4_0:
            pack_quant<BlockQ4_0>(w, out.get());
            break;
        case TensorType::Q4_1:
            pack_quant<BlockQ4_1>(w, out.get());
            break;
        case TensorType::BF16:
            pack_bf16(w, out.get());
            break;
        default:
            pack_float(w, out.get());
    }
    return out;
}

Bf16Kernel bf16_kernel() {
    return bf16_kernel_choice().load(std::memory_order_relaxed);
}

void set_bf16_kernel(Bf16Kernel kernel) {
    if (kernel == Bf16Kernel::Dot && !cpu_features().avx512_bf16)
        fail("set_bf16_kernel: this CPU has no AVX-512 BF16");
    bf16_kernel_choice().store(kernel, std::memory_order_relaxed);
}

size_t packed_activation_bytes(TensorType type, int64_t cols) {
    if (type == TensorType::BF16)  // bf16 pairs, or their f32 values
        return static_cast<size_t>(bf16_pairs(cols)) * (bf16_kernel() == Bf16Kernel::Dot ? 4 : 8);
    return is_float(type) ? 0 : static_cast<size_t>(cols / kQK) * sizeof(BlockQ8Biased);
}

void prepare_packed_activation(TensorType type, const float* x, uint8_t* dst, int64_t cols) {
    if (type == TensorType::BF16 && bf16_kernel() == Bf16Kernel::Dot) {
        auto* out = reinterpret_cast<uint16_t*>(dst);
        std::transform(x, x + cols, out, f32_to_bf16);
        if (cols % 2) out[cols] = 0;  // the padded column's partner
        return;
    }
    if (type == TensorType::BF16) {
        auto* out = reinterpret_cast<float*>(dst);
        std::transform(x, x + cols, out, [](float v) { return bf16_to_f32(f32_to_bf16(v)); });
        if (cols % 2) out[cols] = 0.0f;
        return;
    }
    quantize_biased(x, reinterpret_cast<BlockQ8Biased*>(dst), cols);
}

int64_t packed_tile_groups(int64_t n_tokens) {
    // One token (decode) streams weights: 4 groups give enough independent sums. Several
    // tokens reuse each weight register (see tile_tokens).
    return n_tokens == 1 ? 4 : 2;
}

// F16 or BF16 groups converted to F32 once for all the token tiles of a long prefill: the F32
// tile then runs without a conversion per weight register (it converted each one n_tokens / 8
// times). One buffer per thread, grown at the first long matmul and kept.
static const uint8_t* groups_as_f32(const WeightMatrix& w, int64_t g, int64_t groups) {
    thread_local std::vector<float> buffer;
    const int64_t n = groups * kPackRows * w.cols;
    if (static_cast<int64_t>(buffer.size()) < n) buffer.resize(n);
    const uint8_t* src = w.packed + g * group_bytes(w);
    if (w.type == TensorType::F16)
        convert_f16_to_f32(reinterpret_cast<const uint16_t*>(src), buffer.data(), n);
    else
        widen_bf16_pairs(w, src, buffer.data(), groups);
    return reinterpret_cast<const uint8_t*>(buffer.data());
}

// Whether packed_gemm converts w's groups to F32 first: for float types without a faster
// multiply of their own (vdpbf16ps is one), once enough tokens reuse each group.
static bool converts_to_f32(const WeightMatrix& w, int64_t n_tokens) {
    if (n_tokens < kConvertTokens) return false;
    return w.type == TensorType::F16 ||
           (w.type == TensorType::BF16 && bf16_kernel() == Bf16Kernel::Widen);
}

void packed_gemm(const WeightMatrix& w, const uint8_t* act, size_t act_bytes, int64_t n_tokens,
                 float* y, int64_t group_begin, int64_t group_end) {
    const int64_t per_tile = tile_tokens(w.type);
    const bool convert = converts_to_f32(w, n_tokens);
    const TileTable& t = table(convert ? TensorType::F32 : w.type);
    const int64_t want = packed_tile_groups(n_tokens);
    for (int64_t g = group_begin; g < group_end;) {
        const int64_t left = group_end - g;
        const int64_t groups = left >= want ? want : (left >= 2 ? 2 : 1);
        const int level = groups == 4 ? 2 : static_cast<int>(groups - 1);
        const uint8_t* bytes =
            convert ? groups_as_f32(w, g, groups) : w.packed + g * group_bytes(w);
        for (int64_t tok = 0; tok < n_tokens; tok += per_tile)
            t.fn[level][std::min(per_tile, n_tokens - tok) - 1](w, bytes, act, act_bytes, g, tok,
                                                                y);
        g += groups;
    }
}

}  // namespace kite
