// The AVX-512 kernels for packed weights (packed_layout.h with 16 rows per group): tiles of
// groups times tokens, a 512-bit register per 16 rows. GCC 12's AVX-512 headers seed results
// with _mm512_undefined_*(), which its own -Wuninitialized then reports wherever they are
// inlined (GCC bug 105593, fixed in 13).
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "kernels/cpu/prefetch.h"
#include "kernels/gemm/packed_gemm.h"
#include "kernels/gemm/packed_k_layout.h"
#include "kernels/gemm/packed_k_mins_avx512.h"
#include "kernels/gemm/packed_layout.h"
#include "quant/blocks.h"
#include "quant/blocks_k.h"
#include "quant/fp16.h"

namespace kite::packed::avx512 {

namespace {

constexpr int64_t kRows = 16;
// How far ahead the streaming tiles also prefetch into L2 (prefetch.h). On a Xeon (Emerald
// Rapids) 24 KiB decoded the 1.5B Q4_K_M model 12% faster on one core than none, 6% on two;
// 12 KiB and 48 KiB measured between. A 512-bit tile eats twice the bytes of a 256-bit one
// per step, so this is the AVX2 tiles' 12 KiB in steps.
constexpr int64_t kFarAhead = 24 * 1024;

#define KITE_AVX512 \
    __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx512dq,f16c,fma")))

KITE_AVX512 inline __m512 load_f16x16(const uint16_t* p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}

// GCC treats integer vector adds as plain additions and may rebalance a chain of them into a
// tree, computing every term first and spilling them. An empty asm statement that "changes"
// the running sum keeps the chain in program order.
KITE_AVX512 inline void keep_order(__m512i& sum) {
    asm("" : "+v"(sum));
}

// The levels (u8) of the two quads (8 columns) of pair p of a block for 16 rows; kUnpacked:
// of an unpacked block (unpacked_layout), stored as they are.
template <TensorType T, bool kUnpacked = false>
KITE_AVX512 inline void load_quads(const uint8_t* q, int p, __m512i& lo, __m512i& hi) {
    if constexpr (kUnpacked) {
        lo = _mm512_loadu_si512(q + 128 * p);
        hi = _mm512_loadu_si512(q + 128 * p + 64);
    } else if constexpr (T == TensorType::Q8_0) {  // the weights, top bit flipped
        const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
        lo = _mm512_xor_si512(_mm512_loadu_si512(q + 128 * p), flip);
        hi = _mm512_xor_si512(_mm512_loadu_si512(q + 128 * p + 64), flip);
    } else {
        const __m512i v = _mm512_loadu_si512(q + 64 * p);
        const __m512i mask = _mm512_set1_epi8(0x0f);
        lo = _mm512_and_si512(v, mask);
        hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), mask);
        if constexpr (has_fifth_bit(T)) {
            // 16 goes on where the fifth bit is set.
            const __m512i high = _mm512_loadu_si512(q + 16 * kRows);
            const __m512i sixteen = _mm512_set1_epi8(16);
            const __mmask64 lo_set = _mm512_test_epi8_mask(high, _mm512_set1_epi8(1 << (2 * p)));
            const __mmask64 hi_set =
                _mm512_test_epi8_mask(high, _mm512_set1_epi8(static_cast<char>(2 << (2 * p))));
            lo = _mm512_mask_add_epi8(lo, lo_set, lo, sixteen);
            hi = _mm512_mask_add_epi8(hi, hi_set, hi, sixteen);
        }
    }
}

KITE_AVX512 inline void store_rows(float* y, int64_t rows_left, __m512 v) {
    if (rows_left >= kRows)
        _mm512_storeu_ps(y, v);
    else
        _mm512_mask_storeu_ps(y, static_cast<__mmask16>((1u << rows_left) - 1), v);
}

// A BF16 pair register as f32: each 32-bit lane holds row r's columns 2k (low half) and
// 2k + 1 (high half), so a shift gives column 2k and a mask column 2k + 1.
KITE_AVX512 inline void widen_bf16_pair(__m512i v, __m512& even, __m512& odd) {
    even = _mm512_castsi512_ps(_mm512_slli_epi32(v, 16));
    odd =
        _mm512_castsi512_ps(_mm512_and_si512(v, _mm512_set1_epi32(static_cast<int>(0xffff0000u))));
}

// The register width of this level, for the float tiles (16 floats).
struct FloatWidth {
    using Vec = __m512;
    KITE_AVX512 static Vec zero() { return _mm512_setzero_ps(); }
    KITE_AVX512 static Vec set1(float x) { return _mm512_set1_ps(x); }
    KITE_AVX512 static Vec fmadd(Vec a, Vec b, Vec c) { return _mm512_fmadd_ps(a, b, c); }
    template <TensorType T>
    KITE_AVX512 static Vec load_rows(const uint8_t* p) {
        if constexpr (T == TensorType::F32) return _mm512_loadu_ps(p);
        return load_f16x16(reinterpret_cast<const uint16_t*>(p));
    }
    // Column pair k of a BF16 group: kRows rows of columns 2k and 2k + 1, as floats.
    KITE_AVX512 static void load_bf16_pair(const uint8_t* p, Vec& even, Vec& odd) {
        widen_bf16_pair(_mm512_loadu_si512(p), even, odd);
    }
};

#define KITE_TILE_TARGET KITE_AVX512
#include "kernels/gemm/packed_float_tile.inc"
#undef KITE_TILE_TARGET

// G groups (16 G rows) times C tokens. Per block, each (group, token) gathers an int32 sum
// for 16 rows from 8 VNNI steps (the weights' levels times the activation quants, from
// -level_offset * sum(quants)), then one FMA scales it by the row and token scales.
// kUnpacked: the groups are unpacked (unpacked_layout).
template <TensorType T, int G, int C, bool kStream, bool kUnpacked = false>
KITE_AVX512 void quant_tile(const WeightMatrix& w, const uint8_t* groups, const uint8_t* act,
                            size_t act_bytes, int64_t g0, int64_t t0, float* y) {
    const int64_t nb = w.cols / kQK;
    constexpr QuantLayout l = kUnpacked ? unpacked_layout(T, kRows) : quant_layout(T, kRows);
    GroupParts<const uint8_t> parts[G];
    for (int g = 0; g < G; ++g) parts[g] = {groups + g * nb * l.block_bytes(), l};
    const PackedActivation<T>* x[C];
    const BlockTerms<T>* terms[C];
    for (int c = 0; c < C; ++c) {
        const uint8_t* row = act + (t0 + c) * act_bytes;
        x[c] = reinterpret_cast<const PackedActivation<T>*>(row);
        terms[c] = block_terms<T>(row, w.cols);
    }

    __m512 acc[G][C];
    zero_tile(acc);

    for (int64_t b = 0; b < nb; ++b) {
        if constexpr (kStream) prefetch_blocks_ahead<G, kFarAhead>(parts, b);
        __m512i sum[G][C];
        for (int c = 0; c < C; ++c)
            for (int g = 0; g < G; ++g)
                sum[g][c] = has_min(T) ? _mm512_setzero_si512()
                                       : _mm512_set1_epi32(static_cast<int32_t>(terms[c][b].term));
        for (int p = 0; p < 4; ++p) {
            __m512i lo[G], hi[G];
            for (int g = 0; g < G; ++g) load_quads<T, kUnpacked>(parts[g].q(b), p, lo[g], hi[g]);
            for (int c = 0; c < C; ++c) {
                int32_t xa, xb;
                std::memcpy(&xa, x[c][b].qs + 8 * p, 4);
                std::memcpy(&xb, x[c][b].qs + 8 * p + 4, 4);
                const __m512i va = _mm512_set1_epi32(xa), vb = _mm512_set1_epi32(xb);
                for (int g = 0; g < G; ++g) {
                    sum[g][c] = _mm512_dpbusd_epi32(sum[g][c], lo[g], va);
                    sum[g][c] = _mm512_dpbusd_epi32(sum[g][c], hi[g], vb);
                }
            }
        }
        for (int g = 0; g < G; ++g) {
            const __m512 dw = load_f16x16(parts[g].d(b));
            for (int c = 0; c < C; ++c) {
                const __m512 scale = _mm512_mul_ps(dw, _mm512_set1_ps(terms[c][b].d));
                acc[g][c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum[g][c]), scale, acc[g][c]);
            }
            if constexpr (has_min(T)) {
                const __m512 mw = load_f16x16(parts[g].m(b));
                for (int c = 0; c < C; ++c)
                    acc[g][c] = _mm512_fmadd_ps(mw, _mm512_set1_ps(terms[c][b].term), acc[g][c]);
            }
        }
    }
    store_tile(acc, w, g0, t0, y);
}

// ---- K-quants (packed_k_layout.h) ----------------------------------------------------------

// The bits above the low ones of quad `slot` of a high register, moved to bit kLow and up. The
// 16-bit shifts move no bit of the neighbouring byte into the kept bits (a slot's bits lie in
// its byte).
template <int kLow, int kHigh>
KITE_AVX512 inline __m512i high_levels(__m512i high, int slot) {
    const int from = kHigh * slot;
    const __m512i moved =
        from <= kLow ? _mm512_slli_epi16(high, kLow - from) : _mm512_srli_epi16(high, from - kLow);
    return _mm512_and_si512(moved, _mm512_set1_epi8(static_cast<char>(((1 << kHigh) - 1) << kLow)));
}

// The layout of T's groups, unpacked or not.
template <TensorType T, bool kUnpacked>
constexpr KLayout k_tile_layout() {
    return kUnpacked ? unpacked_k_layout(T, kRows) : k_layout(T, kRows);
}

// The unsigned levels of quads 2p (lo) and 2p+1 (hi) of a super-block for 16 rows.
template <TensorType T, bool kUnpacked>
KITE_AVX512 inline void load_levels(const uint8_t* sb, int p, __m512i& lo, __m512i& hi) {
    if constexpr (kUnpacked) {
        lo = _mm512_loadu_si512(sb + 128 * p);
        hi = _mm512_loadu_si512(sb + 128 * p + 64);
        return;
    }
    constexpr KLayout l = k_layout(T, kRows);
    const __m512i mask = _mm512_set1_epi8((1 << l.low_bits) - 1);
    if constexpr (l.low_bits == 4) {
        const __m512i v = _mm512_loadu_si512(sb + 64 * p);
        lo = _mm512_and_si512(v, mask);
        hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), mask);
    } else {  // 2 bits: quad pairs 2e and 2e + 1 share register e
        const __m512i v = _mm512_loadu_si512(sb + 64 * (p / 2));
        const int shift = 4 * (p % 2);
        lo = _mm512_and_si512(_mm512_srli_epi16(v, shift), mask);
        hi = _mm512_and_si512(_mm512_srli_epi16(v, shift + 2), mask);
    }
    if constexpr (l.high_regs > 0) {
        const int quad = 2 * p, slot = quad % l.quads_per_high();
        const __m512i high =
            _mm512_loadu_si512(sb + l.high_offset() + 64 * (quad / l.quads_per_high()));
        lo = _mm512_or_si512(lo, high_levels<l.low_bits, l.high_bits()>(high, slot));
        hi = _mm512_or_si512(hi, high_levels<l.low_bits, l.high_bits()>(high, slot + 1));
    }
}

// G groups times C tokens of K-quant weights against Q8_K activations. Per sub-block, VNNI
// sums of levels times activations, multiplied by the rows' scales into one int32 per (group,
// token); per super-block, the minimums times the activations' sums of 16 or 32 values
// (vpdpwssd), then both scaled to float once. kUnpacked: the groups are unpacked
// (unpacked_k_layout).
template <TensorType T, int G, int C, bool kStream, bool kUnpacked = false>
KITE_AVX512 void k_tile(const WeightMatrix& w, const uint8_t* groups, const uint8_t* act,
                        size_t act_bytes, int64_t g0, int64_t t0, float* y) {
    constexpr KLayout l = k_tile_layout<T, kUnpacked>();
    constexpr int kPairs = l.pairs_per_sub_block();
    const int64_t n_super = w.cols / kQK_K, group_stride = n_super * l.super_block_bytes();
    const BlockQ8_K* x[C];
    for (int c = 0; c < C; ++c)
        x[c] = reinterpret_cast<const BlockQ8_K*>(act + (t0 + c) * act_bytes);

    __m512 acc[G][C];
    zero_tile(acc);
    for (int64_t b = 0; b < n_super; ++b) {
        const uint8_t* sb[G];
        for (int g = 0; g < G; ++g) sb[g] = groups + g * group_stride + b * l.super_block_bytes();
        __m512i scaled[G][C];
        for (int g = 0; g < G; ++g)
            for (int c = 0; c < C; ++c) scaled[g][c] = _mm512_setzero_si512();
        for (int s = 0; s < l.sub_blocks; ++s) {
            // The pair steps are unrolled, so that the sums stay in their registers: as a loop
            // GCC 12 moved each sum to another register and back per step, a vector move per
            // product (Q4_K's prompt tile ran 1.2-1.3x on a Xeon, Ice Lake).
            __m512i part[G][C];
            for (int g = 0; g < G; ++g)
                for (int c = 0; c < C; ++c) part[g][c] = _mm512_setzero_si512();
#pragma GCC unroll 4
            for (int i = 0; i < kPairs; ++i) {
                const int p = s * kPairs + i;
                __m512i lo[G], hi[G];
                for (int g = 0; g < G; ++g) {
                    // The next super-block, spread over this one's pair steps.
                    if constexpr (kStream)
                        prefetch_part<l.super_block_bytes(), l.sub_blocks * kPairs, kFarAhead>(
                            sb[g] + l.super_block_bytes(), p);
                    load_levels<T, kUnpacked>(sb[g], p, lo[g], hi[g]);
                }
                for (int c = 0; c < C; ++c) {
                    int32_t xa, xb;
                    std::memcpy(&xa, x[c][b].qs + 8 * p, 4);
                    std::memcpy(&xb, x[c][b].qs + 8 * p + 4, 4);
                    const __m512i va = _mm512_set1_epi32(xa), vb = _mm512_set1_epi32(xb);
                    for (int g = 0; g < G; ++g) {
                        part[g][c] = _mm512_dpbusd_epi32(part[g][c], lo[g], va);
                        part[g][c] = _mm512_dpbusd_epi32(part[g][c], hi[g], vb);
                    }
                }
            }
            for (int g = 0; g < G; ++g) {
                const __m512i scale = _mm512_cvtepi8_epi32(_mm_loadu_si128(
                    reinterpret_cast<const __m128i*>(sb[g] + l.scale_offset() + s * kRows)));
                for (int c = 0; c < C; ++c) {
                    scaled[g][c] =
                        _mm512_add_epi32(scaled[g][c], _mm512_mullo_epi32(part[g][c], scale));
                    keep_order(scaled[g][c]);
                }
            }
        }
        __m512i mins[G][C];
        for (int g = 0; g < G; ++g)
            for (int c = 0; c < C; ++c) mins[g][c] = _mm512_setzero_si512();
        for (int k = 0; k < l.sub_blocks / 2; ++k) {
            __m512i sums[C];
            for (int c = 0; c < C; ++c) sums[c] = _mm512_set1_epi32(min_pair_sums(x[c][b], l, k));
            for (int g = 0; g < G; ++g) {
                const __m512i m = min_pair<k_tile_layout<T, kUnpacked>()>(sb[g], k);
                for (int c = 0; c < C; ++c)
                    mins[g][c] = _mm512_dpwssd_epi32(mins[g][c], m, sums[c]);
            }
        }
        for (int g = 0; g < G; ++g) {
            const __m512 d = load_f16x16(reinterpret_cast<const uint16_t*>(sb[g] + l.d_offset()));
            const __m512 dmin =
                load_f16x16(reinterpret_cast<const uint16_t*>(sb[g] + l.dmin_offset()));
            for (int c = 0; c < C; ++c) {
                const __m512 dx = _mm512_set1_ps(x[c][b].d);
                acc[g][c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(scaled[g][c]), _mm512_mul_ps(d, dx),
                                            acc[g][c]);
                acc[g][c] = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(mins[g][c]),
                                             _mm512_mul_ps(dmin, dx), acc[g][c]);
            }
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
    for (int g = 0; g < G; ++g) wg[g] = groups + g * group_bytes(w, kRows);
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

// n (a multiple of 16) f16 values to f32.
KITE_AVX512 void convert_f16_to_f32(const uint16_t* src, float* dst, int64_t n) {
    for (int64_t i = 0; i < n; i += 16) _mm512_storeu_ps(dst + i, load_f16x16(src + i));
}

// The column pairs of `groups` BF16 groups to F32 groups of w.cols columns.
KITE_AVX512 void widen_bf16_pairs(const WeightMatrix& w, const uint8_t* src, uint8_t* bytes,
                                  int64_t groups) {
    auto* dst = reinterpret_cast<float*>(bytes);
    for (int64_t g = 0; g < groups; ++g, src += group_bytes(w, kRows), dst += kRows * w.cols)
        for (int64_t k = 0; k < w.cols; k += 2) {
            __m512 even, odd;
            widen_bf16_pair(_mm512_loadu_si512(src + k * 32), even, odd);
            _mm512_storeu_ps(dst + k * kRows, even);
            if (k + 1 < w.cols) _mm512_storeu_ps(dst + (k + 1) * kRows, odd);
        }
}

// Tokens from which F16 (and widened BF16) weights are converted to F32 once per call (see
// packed_gemm).
constexpr int64_t kConvertTokens = 64;

// Tokens from which quantized groups are unpacked to one level per byte once per call
// (unpacked_layout), so that the tiles over the call's tokens unpack nothing.
constexpr int64_t kUnpackTokens = 64;

// ---- Tables ---------------------------------------------------------------------------------

// Most tokens per tile: quantized tiles hold an int32 sum and a float accumulator per
// (group, token), so 2 groups x 6 tokens fill the registers and unpack each weight register
// once for 6 tokens (Q5_0's prompt 1.04-1.16x against 4 tokens); K-quant tiles also hold
// their sub-block scales and spill past 4 tokens (Q4_K_M 0.90-0.97x at 6). Float tiles hold
// only the accumulator, and 2 x 8 converts each f16/bf16 weight register once for 8 tokens.
// The tiles of unpacked groups take as many: K-quants at 5 or 6 and the others at 7 or 8
// measured 0.9-1.0x on Qwen2.5-Coder-0.5B and the Q4_K_M variant.
constexpr int tile_tokens(TensorType t) {
    return is_float(t) ? 8 : is_k_quant(t) ? 4 : 6;
}

// kWiden: BF16 tiles with FMA instead of vdpbf16ps (see bf16_widen_tile); kStream: the
// prefetching quantized tiles (float types have none); kUnpacked: the quantized tiles of
// unpacked groups.
template <TensorType T, bool kWiden, bool kStream, bool kUnpacked, int G, int... C>
constexpr void fill_row(TileFn* row, std::integer_sequence<int, C...>) {
    if constexpr (kStream && is_float(T)) {
        return;
    } else if constexpr (T == TensorType::BF16 && kWiden) {
        ((row[C] = bf16_widen_tile<G, C + 1>), ...);
    } else if constexpr (T == TensorType::BF16) {
        ((row[C] = bf16_tile<G, C + 1>), ...);
    } else if constexpr (is_float(T)) {
        ((row[C] = float_tile<T, G, C + 1>), ...);
    } else if constexpr (is_k_quant(T)) {
        ((row[C] = k_tile<T, G, C + 1, kStream, kUnpacked>), ...);
    } else {
        ((row[C] = quant_tile<T, G, C + 1, kStream, kUnpacked>), ...);
    }
}

// kUnpacked: the quantized tiles of unpacked groups, which have no stream tiles (groups are
// unpacked for long calls only).
template <TensorType T, bool kWiden = false, bool kUnpacked = false>
constexpr TileTable make_table() {
    TileTable t{tile_tokens(T), {}, {}};
    constexpr auto tokens = std::make_integer_sequence<int, tile_tokens(T)>{};
    fill_row<T, kWiden, false, kUnpacked, 1>(t.fn[0], tokens);
    fill_row<T, kWiden, false, kUnpacked, 2>(t.fn[1], tokens);
    fill_row<T, kWiden, false, kUnpacked, 4>(t.fn[2], tokens);
    if constexpr (!kUnpacked) {
        fill_row<T, kWiden, true, false, 1>(t.stream[0], tokens);
        fill_row<T, kWiden, true, false, 2>(t.stream[1], tokens);
        fill_row<T, kWiden, true, false, 4>(t.stream[2], tokens);
    }
    return t;
}

constexpr TileTable kQ8_0 = make_table<TensorType::Q8_0>(), kQ4_0 = make_table<TensorType::Q4_0>(),
                    kQ4_1 = make_table<TensorType::Q4_1>(), kQ5_0 = make_table<TensorType::Q5_0>(),
                    kQ5_1 = make_table<TensorType::Q5_1>(), kQ2_K = make_table<TensorType::Q2_K>(),
                    kQ3_K = make_table<TensorType::Q3_K>(), kQ4_K = make_table<TensorType::Q4_K>(),
                    kQ5_K = make_table<TensorType::Q5_K>(), kQ6_K = make_table<TensorType::Q6_K>(),
                    kF32 = make_table<TensorType::F32>(), kF16 = make_table<TensorType::F16>(),
                    kBf16Dot = make_table<TensorType::BF16>(),
                    kBf16Widen = make_table<TensorType::BF16, true>();

template <TensorType T>
constexpr TileTable kUnpacked = make_table<T, false, true>();

int64_t tile_groups(int64_t n_tokens) {
    // One token (decode) streams weights: 4 groups give enough independent sums. Several
    // tokens reuse each weight register (see tile_tokens).
    return n_tokens == 1 ? 4 : 2;
}

void f16_to_f32(const WeightMatrix& w, const uint8_t* src, uint8_t* dst, int64_t groups) {
    convert_f16_to_f32(reinterpret_cast<const uint16_t*>(src), reinterpret_cast<float*>(dst),
                       groups * kRows * w.cols);
}

int64_t f32_group_bytes(const WeightMatrix& w) {
    return kRows * w.cols * static_cast<int64_t>(sizeof(float));
}

// `groups` groups of a plain quantized type unpacked to one level per byte (unpacked_layout;
// Q8_0's levels are its weights with the top bit flipped).
template <TensorType T>
KITE_AVX512 void unpack_groups(const WeightMatrix& w, const uint8_t* src, uint8_t* dst,
                               int64_t groups) {
    constexpr QuantLayout from = quant_layout(T, kRows), to = unpacked_layout(T, kRows);
    const int64_t n = groups * (w.cols / kQK);
    const int64_t scale_bytes = to.block_bytes() - to.quant_bytes;
    for (int64_t b = 0; b < n; ++b, src += from.block_bytes(), dst += to.block_bytes()) {
        for (int p = 0; p < 4; ++p) {
            __m512i lo, hi;
            load_quads<T>(src, p, lo, hi);
            _mm512_storeu_si512(dst + 128 * p, lo);
            _mm512_storeu_si512(dst + 128 * p + 64, hi);
        }
        std::memcpy(dst + to.quant_bytes, src + from.quant_bytes, scale_bytes);
    }
}

// `groups` K-quant groups unpacked to one level per byte (unpacked_k_layout).
template <TensorType T>
KITE_AVX512 void unpack_k_groups(const WeightMatrix& w, const uint8_t* src, uint8_t* dst,
                                 int64_t groups) {
    constexpr KLayout from = k_layout(T, kRows), to = unpacked_k_layout(T, kRows);
    const int64_t n = groups * (w.cols / kQK_K);
    const int64_t scale_bytes = from.super_block_bytes() - from.scale_offset();
    for (int64_t b = 0; b < n;
         ++b, src += from.super_block_bytes(), dst += to.super_block_bytes()) {
        for (int p = 0; p < 32; ++p) {
            __m512i lo, hi;
            load_levels<T, false>(src, p, lo, hi);
            _mm512_storeu_si512(dst + 128 * p, lo);
            _mm512_storeu_si512(dst + 128 * p + 64, hi);
        }
        std::memcpy(dst + to.scale_offset(), src + from.scale_offset(), scale_bytes);
    }
}

template <TensorType T>
int64_t unpacked_group_bytes(const WeightMatrix& w) {
    if constexpr (is_k_quant(T))
        return w.cols / kQK_K * unpacked_k_layout(T, kRows).super_block_bytes();
    else
        return w.cols / kQK * unpacked_layout(T, kRows).block_bytes();
}

// F16 and widened BF16 groups run as F32 from this many tokens (it converted each weight
// register n_tokens / 8 times).
constexpr TilePlan plan(const TileTable& tiles, ConvertFn to_f32 = nullptr) {
    return {kRows, tile_groups, &tiles, to_f32, f32_group_bytes, &kF32, kConvertTokens};
}

// Quantized groups are unpacked from kUnpackTokens tokens.
template <TensorType T>
constexpr TilePlan unpacking_plan(const TileTable& tiles) {
    constexpr ConvertFn unpack = is_k_quant(T) ? unpack_k_groups<T> : unpack_groups<T>;
    return {kRows,         tile_groups,  &tiles, unpack, unpacked_group_bytes<T>,
            &kUnpacked<T>, kUnpackTokens};
}

constexpr TilePlan kPlanQ8_0 = unpacking_plan<TensorType::Q8_0>(kQ8_0),
                   kPlanQ4_0 = unpacking_plan<TensorType::Q4_0>(kQ4_0),
                   kPlanQ4_1 = unpacking_plan<TensorType::Q4_1>(kQ4_1),
                   kPlanQ5_0 = unpacking_plan<TensorType::Q5_0>(kQ5_0),
                   kPlanQ5_1 = unpacking_plan<TensorType::Q5_1>(kQ5_1),
                   kPlanQ2_K = unpacking_plan<TensorType::Q2_K>(kQ2_K),
                   kPlanQ3_K = unpacking_plan<TensorType::Q3_K>(kQ3_K),
                   kPlanQ4_K = unpacking_plan<TensorType::Q4_K>(kQ4_K),
                   kPlanQ5_K = unpacking_plan<TensorType::Q5_K>(kQ5_K),
                   kPlanQ6_K = unpacking_plan<TensorType::Q6_K>(kQ6_K), kPlanF32 = plan(kF32),
                   kPlanF16 = plan(kF16, f16_to_f32), kPlanBf16Dot = plan(kBf16Dot),
                   kPlanBf16Widen = plan(kBf16Widen, widen_bf16_pairs);

template <const TilePlan& P>
void gemm(const WeightMatrix& w, const uint8_t* act, size_t act_bytes, int64_t n_tokens, float* y,
          int64_t group_begin, int64_t group_end) {
    run_tiles(P, w, act, act_bytes, n_tokens, y, group_begin, group_end);
}

void gemm_bf16(const WeightMatrix& w, const uint8_t* act, size_t act_bytes, int64_t n_tokens,
               float* y, int64_t group_begin, int64_t group_end) {
    run_tiles(bf16_kernel() == Bf16Kernel::Dot ? kPlanBf16Dot : kPlanBf16Widen, w, act, act_bytes,
              n_tokens, y, group_begin, group_end);
}

// ---- Activations ----------------------------------------------------------------------------

// The activation blocks of weights of type T, then their terms (BlockTerms).
template <TensorType T>
KITE_AVX512 void quantize_packed(const float* x, uint8_t* dst, int64_t cols) {
    using Block = PackedActivation<T>;
    auto* out = reinterpret_cast<Block*>(dst);
    auto* terms = reinterpret_cast<BlockTerms<T>*>(dst + q8_activation_bytes(cols));
    for (int64_t b = 0; b < cols / kQK; ++b, x += kQK) {
        const __m512 v0 = _mm512_loadu_ps(x), v1 = _mm512_loadu_ps(x + 16);
        const float amax =
            _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(v0), _mm512_abs_ps(v1)));
        // As the reference activation quantizer: 127 / amax, round half to even.
        const float d = amax / 127.0f;
        const __m512 id = _mm512_set1_ps(amax != 0.0f ? 127.0f / amax : 0.0f);
        const __m128i q0 = _mm512_cvtepi32_epi8(_mm512_cvtps_epi32(_mm512_mul_ps(v0, id)));
        const __m128i q1 = _mm512_cvtepi32_epi8(_mm512_cvtps_epi32(_mm512_mul_ps(v1, id)));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(out[b].qs), q0);
        _mm_storeu_si128(reinterpret_cast<__m128i*>(out[b].qs + 16), q1);
        // The sum of the stored bytes, so that it holds whatever the input (the int32 quants
        // of NaN are INT_MIN, and their sum would overflow).
        const __m128i wide = _mm_add_epi64(
            _mm_sad_epu8(_mm_xor_si128(q0, _mm_set1_epi8(-128)), _mm_setzero_si128()),
            _mm_sad_epu8(_mm_xor_si128(q1, _mm_set1_epi8(-128)), _mm_setzero_si128()));
        const int sum = static_cast<int>(_mm_cvtsi128_si64(
                            _mm_add_epi64(wide, _mm_unpackhi_epi64(wide, wide)))) -
                        32 * 128;
        set_scale_and_sum(out[b], d, sum);
        set_terms<T>(terms[b], out[b], sum);
    }
}

size_t no_activation(int64_t) {
    return 0;
}

// Float weights read x as it is.
void keep_activation(const float*, uint8_t*, int64_t) {}

// BF16 activations for the kernel chosen: bf16 pairs for vdpbf16ps, else widened f32.
size_t bf16_activation_bytes(int64_t cols) {
    return bf16_kernel() == Bf16Kernel::Dot ? static_cast<size_t>(bf16_pairs(cols)) * 4
                                            : bf16_widened_activation_bytes(cols);
}

void prepare_bf16_activation(const float* x, uint8_t* dst, int64_t cols) {
    if (bf16_kernel() == Bf16Kernel::Widen) return prepare_bf16_widened_activation(x, dst, cols);
    auto* out = reinterpret_cast<uint16_t*>(dst);
    std::transform(x, x + cols, out, f32_to_bf16);
    if (cols % 2) out[cols] = 0;  // the padded column's partner
}

// The kernels of a plain quantized type: its activations with their BlockTerms.
template <TensorType T, const TilePlan& P>
constexpr PackedKernels quant_kernels() {
    return {Isa::Avx512,        kRows,       quant_activation_bytes<T>,
            quantize_packed<T>, tile_groups, gemm<P>};
}

// The kernels of a K-quant: Q8_K activations.
template <const TilePlan& P>
constexpr PackedKernels k_kernels() {
    return {Isa::Avx512, kRows, k_activation_bytes, quantize_q8_k, tile_groups, gemm<P>};
}

}  // namespace

const PackedKernels f32{Isa::Avx512,     kRows,       no_activation,
                        keep_activation, tile_groups, gemm<kPlanF32>};
const PackedKernels f16{Isa::Avx512,     kRows,       no_activation,
                        keep_activation, tile_groups, gemm<kPlanF16>};
const PackedKernels bf16{Isa::Avx512, kRows,    bf16_activation_bytes, prepare_bf16_activation,
                         tile_groups, gemm_bf16};
// constinit: the AMX level copies q5_1, q2_k and q3_k while other files initialise.
constinit const PackedKernels q8_0 = quant_kernels<TensorType::Q8_0, kPlanQ8_0>(),
                              q4_0 = quant_kernels<TensorType::Q4_0, kPlanQ4_0>(),
                              q4_1 = quant_kernels<TensorType::Q4_1, kPlanQ4_1>(),
                              q5_0 = quant_kernels<TensorType::Q5_0, kPlanQ5_0>(),
                              q5_1 = quant_kernels<TensorType::Q5_1, kPlanQ5_1>();
constinit const PackedKernels q2_k = k_kernels<kPlanQ2_K>(), q3_k = k_kernels<kPlanQ3_K>(),
                              q4_k = k_kernels<kPlanQ4_K>(), q5_k = k_kernels<kPlanQ5_K>(),
                              q6_k = k_kernels<kPlanQ6_K>();

}  // namespace kite::packed::avx512
