// The 256-bit kernels for packed weights (packed_layout.h with 8 rows per group): tiles of
// groups times tokens with a 256-bit register per 8 rows, for AVX2 (+ FMA, F16C) and, for
// the quantized types, AVX-VNNI. The AVX2 functions use only AVX2, FMA and F16C, so that
// KITE_ISA=avx2 on an AVX-512 machine runs what an AVX2-only CPU runs.
//
// AVX2 has 16 vector registers: a tile's accumulators, its weight registers and a broadcast
// must fit in them, so tiles are smaller than the AVX-512 ones.
//
// Integer products without VNNI: vpmaddubsw (u8 x s8, adjacent pairs summed to saturating
// i16) then vpmaddwd with ones (to i32).
//   Q4_0, Q4_1, Q5_0, Q5_1: the weights' levels (u8, at most 15 or 31) times the activations
//     (s8, at most 127 in magnitude). A pair sums to at most 2 * 15 * 127 = 3810 (Q4_*), so the
//     8 quads of a block sum in i16 (30480) before one vpmaddwd; Q5_* pairs reach 7874, so 4
//     quads (31496) at most. Each block sum then adds -level_offset *
//     sum(quants) of its token.
//   Q8_0: levels of 255 would overflow (2 * 255 * 127 > 32767), so the product is |w| (u8)
//     times sign(x, w) (s8), at most 2 * 128 * 127 = 32512 per pair: one vpmaddwd per quad,
//     and nothing to take off.
// With VNNI, vpdpbusd takes the levels times the activations for every plain type, as on
// AVX-512 (Q8_0's levels are its weights with the top bit flipped).
#include <immintrin.h>

#include <cstring>
#include <utility>

#include "kernels/cpu/cpu_features.h"
#include "kernels/gemm/packed_gemm.h"
#include "kernels/gemm/packed_k_layout.h"
#include "kernels/gemm/packed_layout.h"
#include "quant/blocks.h"
#include "quant/blocks_k.h"
#include "quant/fp16.h"

#define KITE_AVX2 __attribute__((target("avx2,fma,f16c")))

namespace kite::packed {

namespace {

constexpr int64_t kRows = 8;
// How far ahead the streaming tiles also prefetch into L2 (prefetch.h): 6 to 24 Q4_K
// super-blocks (7 to 28 KiB) measured the same on Zen 1; 4 KiB ahead was slower.
constexpr int64_t kFarAhead = 12 * 1024;

// Most tokens per tile. A quantized tile keeps per (group, token) an int32 (or i16) sum and a
// float accumulator: 2 groups x 3 tokens, measured against 1 x 2..6 and 2 x 2 (AVX2 and
// AVX-VNNI, Q4_0, Q4_1, Q8_0), was as fast as the best for each type and the fastest for Q8_0.
// Tiles of unpacked groups (unpacked_layout) too: on Qwen2.5-Coder-0.5B (Q5_0) and the default
// model (Q4_1) 1 x 4 measured the same, 1 x 6 and 2 x 4 0.9-0.95x, and Q5_0 alone at 1 x 4
// 0.93x.
// A float tile keeps an accumulator only: 2 x 6 (12 accumulators, 2 weights, a broadcast).
constexpr int kQuantTokens = 3;
constexpr int kFloatTokens = 6;

// K-quant tiles keep an int32 sum, a partial sum and a float accumulator per (group, token):
// 1 group x 4 tokens, and 2 x 1 for decode (k_tile_groups).
constexpr int kKTokens = 4;

// F16 (and BF16) groups run as F32 from this many tokens (see run_tiles).
constexpr int64_t kConvertTokens = 64;

// Q4_0, Q4_1, Q5_0 and K-quant groups are unpacked to one level per byte from this many
// tokens (see run_tiles): the tiles over the call's tokens then only load their weights.
// Unpacking once per call took Qwen2.5-Coder-0.5B's pp512 from 1.0 to 1.4x (Q5_0, Q4_K and
// Q6_K unpacked each weight register once per 3 or 4 tokens), and its 32x(128+128) batched
// generation 1.17x with 16 here (8, 16 and 32 measured the same; 64 leaves out the 32-token
// decode steps).
constexpr int64_t kUnpackTokens = 16;

KITE_AVX2 inline __m256 load_f16x8(const uint16_t* p) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

KITE_AVX2 inline void store_rows(float* y, int64_t rows_left, __m256 v) {
    if (rows_left >= kRows) return _mm256_storeu_ps(y, v);
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(rows_left)), lane);
    _mm256_maskstore_ps(y, mask, v);
}

// A BF16 pair register as f32: each 32-bit lane holds row r's columns 2k (low half) and
// 2k + 1 (high half), so a shift gives column 2k and a mask column 2k + 1.
KITE_AVX2 inline void widen_bf16_pair(__m256i v, __m256& even, __m256& odd) {
    even = _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
    odd =
        _mm256_castsi256_ps(_mm256_and_si256(v, _mm256_set1_epi32(static_cast<int>(0xffff0000u))));
}

// The register width of this level, for the float tiles (8 floats).
struct FloatWidth {
    using Vec = __m256;
    KITE_AVX2 static Vec zero() { return _mm256_setzero_ps(); }
    KITE_AVX2 static Vec set1(float x) { return _mm256_set1_ps(x); }
    KITE_AVX2 static Vec fmadd(Vec a, Vec b, Vec c) { return _mm256_fmadd_ps(a, b, c); }
    template <TensorType T>
    KITE_AVX2 static Vec load_rows(const uint8_t* p) {
        if constexpr (T == TensorType::F32)
            return _mm256_loadu_ps(reinterpret_cast<const float*>(p));
        return load_f16x8(reinterpret_cast<const uint16_t*>(p));
    }
    // Column pair k of a BF16 group: kRows rows of columns 2k and 2k + 1, as floats.
    KITE_AVX2 static void load_bf16_pair(const uint8_t* p, Vec& even, Vec& odd) {
        widen_bf16_pair(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)), even, odd);
    }
};

#define KITE_TILE_TARGET KITE_AVX2
#include "kernels/gemm/packed_float_tile.inc"
#undef KITE_TILE_TARGET

// GCC treats integer vector adds as plain additions and rebalances a chain of them into a
// tree: a tile computes all products of a fold first and most spill to the stack. An empty
// asm statement that "changes" the running sum keeps the chain in program order, so only one
// sum per (group, token) is live.
KITE_AVX2 inline void keep_order(__m256i& sum) {
    asm("" : "+x"(sum));
}

// The 4 activation quants of quad `quad` of token block x, broadcast.
KITE_AVX2 inline __m256i broadcast_quad(const int8_t* qs, int quad) {
    int32_t word;
    std::memcpy(&word, qs + 4 * quad, 4);
    return _mm256_set1_epi32(word);
}

// The levels of quads 2p and 2p+1 of a block for 8 rows (u8); kUnpacked: of an unpacked
// block (unpacked_layout), stored as they are.
template <TensorType T, bool kUnpacked = false>
KITE_AVX2 inline void load_quads(const uint8_t* q, int p, __m256i& lo, __m256i& hi) {
    if constexpr (kUnpacked) {
        lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + 64 * p));
        hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + 64 * p + 32));
    } else if constexpr (T == TensorType::Q8_0) {
        const __m256i flip = _mm256_set1_epi8(static_cast<char>(0x80));
        lo = _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + 64 * p)),
                              flip);
        hi = _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + 64 * p + 32)),
                              flip);
    } else {
        const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + 32 * p));
        const __m256i mask = _mm256_set1_epi8(0x0f);
        lo = _mm256_and_si256(v, mask);
        hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), mask);
        if constexpr (has_fifth_bit(T)) {
            const __m256i high =
                _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + 16 * kRows));
            // 16 goes on where the fifth bit is set. (Shifting each bit to bit 4 takes one
            // instruction less, but GCC then keeps `high` live across the pairs and spills.)
            const __m256i lo_bit = _mm256_set1_epi8(static_cast<char>(1 << (2 * p)));
            const __m256i hi_bit = _mm256_set1_epi8(static_cast<char>(2 << (2 * p)));
            const __m256i sixteen = _mm256_set1_epi8(16);
            lo = _mm256_or_si256(
                lo, _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(high, lo_bit), lo_bit),
                                     sixteen));
            hi = _mm256_or_si256(
                hi, _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(high, hi_bit), hi_bit),
                                     sixteen));
        }
    }
}

// The 4 bytes at p, broadcast.
KITE_AVX2 inline __m256i broadcast_word(const void* p) {
    int32_t word;
    std::memcpy(&word, p, 4);
    return _mm256_set1_epi32(word);
}

// The bits above the low ones of quad `slot` of a high register, moved to bit kLow and up. The
// 16-bit shifts move no bit of the neighbouring byte into the kept bits (a slot's bits lie in
// its byte).
template <int kLow, int kHigh>
KITE_AVX2 inline __m256i high_levels(__m256i high, int slot) {
    const int from = kHigh * slot;
    const __m256i moved =
        from <= kLow ? _mm256_slli_epi16(high, kLow - from) : _mm256_srli_epi16(high, from - kLow);
    return _mm256_and_si256(moved, _mm256_set1_epi8(static_cast<char>(((1 << kHigh) - 1) << kLow)));
}

int64_t k_tile_groups(int64_t n_tokens) {
    return n_tokens == 1 ? 2 : 1;
}

// -level_offset * sum(quants) of a token's block (its terms), where a block sum of T starts.
template <TensorType T>
KITE_AVX2 inline __m256i offset_seed(const BlockTerms<T>& terms) {
    if constexpr (level_offset(T) == 0)
        return _mm256_setzero_si256();
    else
        return _mm256_set1_epi32(terms.term);
}

// `groups` Q4_0, Q4_1, Q5_0 or Q5_1 groups unpacked to one level per byte (unpacked_layout).
template <TensorType T>
KITE_AVX2 void unpack_groups(const WeightMatrix& w, const uint8_t* src, uint8_t* dst,
                             int64_t groups) {
    constexpr QuantLayout from = quant_layout(T, kRows), to = unpacked_layout(T, kRows);
    const int64_t n = groups * (w.cols / kQK);
    const int64_t scale_bytes = to.block_bytes() - to.quant_bytes;
    for (int64_t b = 0; b < n; ++b, src += from.block_bytes(), dst += to.block_bytes()) {
        for (int p = 0; p < 4; ++p) {
            __m256i lo, hi;
            load_quads<T>(src, p, lo, hi);
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + 64 * p), lo);
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + 64 * p + 32), hi);
        }
        std::memcpy(dst + to.quant_bytes, src + from.quant_bytes, scale_bytes);
    }
}

template <TensorType T>
int64_t unpacked_group_bytes(const WeightMatrix& w) {
    return w.cols / kQK * unpacked_layout(T, kRows).block_bytes();
}

}  // namespace

// ---- AVX2 -----------------------------------------------------------------------------------

namespace avx2 {

namespace {

// Q8_0 block sums with the sign trick (see the top of the file).
template <int G, int C>
KITE_AVX2 inline void q8_0_block_sums(const GroupParts<const uint8_t> (&parts)[G], int64_t b,
                                      const BlockQ8Sum* const (&x)[C], __m256i (&sum)[G][C]) {
    const __m256i ones = _mm256_set1_epi16(1);
    for (int g = 0; g < G; ++g)
        for (int c = 0; c < C; ++c) sum[g][c] = _mm256_setzero_si256();
    for (int quad = 0; quad < 8; ++quad) {
        __m256i wq[G], magnitude[G];
        for (int g = 0; g < G; ++g) {
            wq[g] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(parts[g].q(b) + 32 * quad));
            magnitude[g] = _mm256_abs_epi8(wq[g]);
        }
        for (int c = 0; c < C; ++c) {
            const __m256i xq = broadcast_quad(x[c][b].qs, quad);
            for (int g = 0; g < G; ++g) {
                const __m256i pairs =
                    _mm256_maddubs_epi16(magnitude[g], _mm256_sign_epi8(xq, wq[g]));
                sum[g][c] = _mm256_add_epi32(sum[g][c], _mm256_madd_epi16(pairs, ones));
                keep_order(sum[g][c]);
            }
        }
    }
}

// Q4_0, Q4_1, Q5_0 and Q5_1 block sums: kFold pairs of quads summed in i16, then widened.
template <TensorType T, int G, int C, bool kUnpacked>
KITE_AVX2 inline void q4_block_sums(const GroupParts<const uint8_t> (&parts)[G], int64_t b,
                                    const PackedActivation<T>* const (&x)[C],
                                    const BlockTerms<T>* const (&terms)[C], __m256i (&sum)[G][C]) {
    constexpr int kFold = has_fifth_bit(T) ? 2 : 4;  // see the top of the file
    const __m256i ones = _mm256_set1_epi16(1);
    for (int g = 0; g < G; ++g)
        for (int c = 0; c < C; ++c) sum[g][c] = _mm256_setzero_si256();
    for (int first = 0; first < 4; first += kFold) {
        __m256i pairs[G][C];  // i16
        for (int g = 0; g < G; ++g)
            for (int c = 0; c < C; ++c) pairs[g][c] = _mm256_setzero_si256();
        for (int p = first; p < first + kFold; ++p) {
            __m256i lo[G], hi[G];
            for (int g = 0; g < G; ++g) load_quads<T, kUnpacked>(parts[g].q(b), p, lo[g], hi[g]);
            for (int c = 0; c < C; ++c) {
                const __m256i xa = broadcast_quad(x[c][b].qs, 2 * p);
                const __m256i xb = broadcast_quad(x[c][b].qs, 2 * p + 1);
                for (int g = 0; g < G; ++g) {
                    const __m256i two = _mm256_add_epi16(_mm256_maddubs_epi16(lo[g], xa),
                                                         _mm256_maddubs_epi16(hi[g], xb));
                    pairs[g][c] = _mm256_add_epi16(pairs[g][c], two);
                    keep_order(pairs[g][c]);
                }
            }
        }
        for (int g = 0; g < G; ++g)
            for (int c = 0; c < C; ++c)
                sum[g][c] = _mm256_add_epi32(sum[g][c], _mm256_madd_epi16(pairs[g][c], ones));
    }
    // The offset's correction last, so that only the i16 sums stay live through the products.
    if constexpr (level_offset(T) != 0)
        for (int c = 0; c < C; ++c) {
            const __m256i seed = offset_seed<T>(terms[c][b]);
            for (int g = 0; g < G; ++g) sum[g][c] = _mm256_add_epi32(sum[g][c], seed);
        }
}

template <TensorType T, int G, int C, bool kUnpacked>
KITE_AVX2 inline void block_sums(const GroupParts<const uint8_t> (&parts)[G], int64_t b,
                                 const PackedActivation<T>* const (&x)[C],
                                 const BlockTerms<T>* const (&terms)[C], __m256i (&sum)[G][C]) {
    if constexpr (T == TensorType::Q8_0)
        q8_0_block_sums(parts, b, x, sum);  // the sign trick: no offset
    else
        q4_block_sums<T, G, C, kUnpacked>(parts, b, x, terms, sum);
}

// K-quant products without VNNI: the levels (u8) times the activations (s8) with vpmaddubsw,
// kFoldPairs pairs of quads summed in i16, then vpmaddwd with the scale in both halves of each
// row's 32 bits. A product is at most 127 * 15 (Q4_K), 127 * 31 (Q5_K) or 127 * 63 (Q6_K), so
// 16, 8 or 4 of them sum in i16 (30480, 31496, 32004); Q2_K's and Q3_K's sub-blocks of 16
// values (2 pairs) sum whole.
template <TensorType T>
constexpr int kFoldPairs() {
    constexpr KLayout l = k_layout(T, kRows);
    return std::min(l.pairs_per_sub_block(), l.bits <= 4 ? 4 : l.bits == 5 ? 2 : 1);
}

KITE_AVX2 inline __m256i add_pair(__m256i part, __m256i lo, __m256i hi, __m256i xa, __m256i xb) {
    __m256i sum = _mm256_add_epi16(
        part, _mm256_add_epi16(_mm256_maddubs_epi16(lo, xa), _mm256_maddubs_epi16(hi, xb)));
    keep_order(sum);
    return sum;
}

KITE_AVX2 inline __m256i load_scale(const uint8_t* p) {
    const __m256i s = _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
    return _mm256_or_si256(_mm256_and_si256(s, _mm256_set1_epi32(0xffff)),
                           _mm256_slli_epi32(s, 16));
}

KITE_AVX2 inline __m256i apply_scale(__m256i part, __m256i scale) {
    return _mm256_madd_epi16(part, scale);
}

#define KITE_TILE_TARGET KITE_AVX2
#include "kernels/gemm/packed_k_tile_256.inc"
#include "kernels/gemm/packed_quant_tile_256.inc"
#undef KITE_TILE_TARGET

// `groups` K-quant groups unpacked to one level per byte (unpacked_k_layout).
template <TensorType T>
KITE_AVX2 void unpack_k_groups(const WeightMatrix& w, const uint8_t* src, uint8_t* dst,
                               int64_t groups) {
    constexpr KLayout from = k_layout(T, kRows), to = unpacked_k_layout(T, kRows);
    const int64_t n = groups * (w.cols / kQK_K);
    const int64_t scale_bytes = from.super_block_bytes() - from.scale_offset();
    for (int64_t b = 0; b < n;
         ++b, src += from.super_block_bytes(), dst += to.super_block_bytes()) {
        for (int p = 0; p < 32; ++p) {
            __m256i lo, hi;
            load_levels<T, false>(src, p, lo, hi);
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + 64 * p), lo);
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + 64 * p + 32), hi);
        }
        std::memcpy(dst + to.scale_offset(), src + from.scale_offset(), scale_bytes);
    }
}

template <TensorType T>
int64_t unpacked_k_group_bytes(const WeightMatrix& w) {
    return w.cols / kQK_K * unpacked_k_layout(T, kRows).super_block_bytes();
}

template <TensorType T, int G, int... C>
constexpr void fill_float_row(TileFn* row, std::integer_sequence<int, C...>) {
    if constexpr (T == TensorType::BF16)
        ((row[C] = bf16_widen_tile<G, C + 1>), ...);
    else
        ((row[C] = float_tile<T, G, C + 1>), ...);
}

template <TensorType T>
constexpr TileTable make_float_table() {
    TileTable t{kFloatTokens, {}, {}};
    constexpr auto tokens = std::make_integer_sequence<int, kFloatTokens>{};
    fill_float_row<T, 1>(t.fn[0], tokens);
    fill_float_row<T, 2>(t.fn[1], tokens);
    fill_float_row<T, 4>(t.fn[2], tokens);
    return t;
}

constexpr TileTable kF32 = make_float_table<TensorType::F32>(),
                    kF16 = make_float_table<TensorType::F16>(),
                    kBf16 = make_float_table<TensorType::BF16>();

// `groups` F16 groups to F32.
KITE_AVX2 void f16_to_f32(const WeightMatrix& w, const uint8_t* src, uint8_t* bytes,
                          int64_t groups) {
    auto* dst = reinterpret_cast<float*>(bytes);
    const auto* h = reinterpret_cast<const uint16_t*>(src);
    for (int64_t i = 0; i < groups * kRows * w.cols; i += 8)
        _mm256_storeu_ps(dst + i, load_f16x8(h + i));
}

// `groups` BF16 groups (column pairs) to F32 groups of w.cols columns.
KITE_AVX2 void bf16_to_f32(const WeightMatrix& w, const uint8_t* src, uint8_t* bytes,
                           int64_t groups) {
    auto* dst = reinterpret_cast<float*>(bytes);
    for (int64_t g = 0; g < groups; ++g, src += group_bytes(w, kRows), dst += kRows * w.cols)
        for (int64_t k = 0; k < w.cols; k += 2) {
            __m256 even, odd;
            widen_bf16_pair(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + k * 16)),
                            even, odd);
            _mm256_storeu_ps(dst + k * kRows, even);
            if (k + 1 < w.cols) _mm256_storeu_ps(dst + (k + 1) * kRows, odd);
        }
}

int64_t f32_group_bytes(const WeightMatrix& w) {
    return kRows * w.cols * static_cast<int64_t>(sizeof(float));
}

// One token (decode) streams weights: 4 groups give independent sums. Several tokens reuse
// each weight register across a tile's tokens (see kQuantTokens).
int64_t quant_tile_groups(int64_t n_tokens) {
    return n_tokens == 1 ? 4 : 2;
}

int64_t float_tile_groups(int64_t n_tokens) {
    return n_tokens == 1 ? 4 : 2;
}

constexpr TilePlan quant_plan(const TileTable& tiles) {
    return {kRows, quant_tile_groups, &tiles, nullptr, nullptr, nullptr, 0};
}

template <TensorType T>
constexpr TilePlan unpacking_plan(const TileTable& tiles, const TileTable& unpacked) {
    return {kRows,     quant_tile_groups, &tiles, unpack_groups<T>, unpacked_group_bytes<T>,
            &unpacked, kUnpackTokens};
}

template <TensorType T>
constexpr TilePlan k_plan(const TileTable& tiles, const TileTable& unpacked) {
    return {kRows,     k_tile_groups, &tiles, unpack_k_groups<T>, unpacked_k_group_bytes<T>,
            &unpacked, kUnpackTokens};
}

constexpr TilePlan float_plan(const TileTable& tiles, ConvertFn to_f32) {
    return {kRows, float_tile_groups, &tiles, to_f32, f32_group_bytes, &kF32, kConvertTokens};
}

constexpr TilePlan kPlanQ8_0 = quant_plan(kQ8_0),
                   kPlanQ4_0 = unpacking_plan<TensorType::Q4_0>(kQ4_0, kUnpackedQ4_0),
                   kPlanQ4_1 = unpacking_plan<TensorType::Q4_1>(kQ4_1, kUnpackedQ4_1),
                   kPlanQ5_0 = unpacking_plan<TensorType::Q5_0>(kQ5_0, kUnpackedQ5_0),
                   kPlanQ5_1 = unpacking_plan<TensorType::Q5_1>(kQ5_1, kUnpackedQ5_1),
                   kPlanQ2_K = k_plan<TensorType::Q2_K>(kQ2_K, kUnpackedQ2_K),
                   kPlanQ3_K = k_plan<TensorType::Q3_K>(kQ3_K, kUnpackedQ3_K),
                   kPlanQ4_K = k_plan<TensorType::Q4_K>(kQ4_K, kUnpackedQ4_K),
                   kPlanQ5_K = k_plan<TensorType::Q5_K>(kQ5_K, kUnpackedQ5_K),
                   kPlanQ6_K = k_plan<TensorType::Q6_K>(kQ6_K, kUnpackedQ6_K),
                   kPlanF32 = float_plan(kF32, nullptr), kPlanF16 = float_plan(kF16, f16_to_f32),
                   kPlanBf16 = float_plan(kBf16, bf16_to_f32);

template <const TilePlan& P>
void gemm(const WeightMatrix& w, const uint8_t* act, size_t act_bytes, int64_t n_tokens, float* y,
          int64_t group_begin, int64_t group_end) {
    run_tiles(P, w, act, act_bytes, n_tokens, y, group_begin, group_end);
}

}  // namespace

}  // namespace avx2

// ---- AVX-VNNI -------------------------------------------------------------------------------

namespace avxvnni {

namespace {

// The VEX encoding (Alder Lake and later without AVX-512).
namespace vex {
#define KITE_TILE_TARGET __attribute__((target("avx2,fma,f16c,avxvnni")))
KITE_TILE_TARGET inline __m256i dpbusd(__m256i sum, __m256i u8, __m256i s8) {
    return _mm256_dpbusd_avx_epi32(sum, u8, s8);
}
#include "kernels/gemm/packed_vnni_sums_256.inc"
// The tiles, after the block sums they call.
#include "kernels/gemm/packed_k_tile_256.inc"
#include "kernels/gemm/packed_quant_tile_256.inc"
#undef KITE_TILE_TARGET
}  // namespace vex

// The EVEX encoding (AVX-512 VNNI's 256-bit form).
namespace evex {
#define KITE_TILE_TARGET __attribute__((target("avx2,fma,f16c,avx512vl,avx512vnni")))
KITE_TILE_TARGET inline __m256i dpbusd(__m256i sum, __m256i u8, __m256i s8) {
    return _mm256_dpbusd_epi32(sum, u8, s8);
}
#include "kernels/gemm/packed_vnni_sums_256.inc"
// The tiles, after the block sums they call.
#include "kernels/gemm/packed_k_tile_256.inc"
#include "kernels/gemm/packed_quant_tile_256.inc"
#undef KITE_TILE_TARGET
}  // namespace evex

struct VnniPlans {
    TilePlan q8_0, q4_0, q4_1, q5_0, q5_1, q2_k, q3_k, q4_k, q5_k, q6_k;
};

// The plans of one encoding's tiles: as AVX2's (int32 sums and accumulators of 2 x 3, plus
// the weights, fit the 16 registers of the VEX encoding too).
#define KITE_VNNI_PLANS(E)                                                      \
    {                                                                           \
        avx2::quant_plan(E::kQ8_0),                                             \
            avx2::unpacking_plan<TensorType::Q4_0>(E::kQ4_0, E::kUnpackedQ4_0), \
            avx2::unpacking_plan<TensorType::Q4_1>(E::kQ4_1, E::kUnpackedQ4_1), \
            avx2::unpacking_plan<TensorType::Q5_0>(E::kQ5_0, E::kUnpackedQ5_0), \
            avx2::unpacking_plan<TensorType::Q5_1>(E::kQ5_1, E::kUnpackedQ5_1), \
            avx2::k_plan<TensorType::Q2_K>(E::kQ2_K, E::kUnpackedQ2_K),         \
            avx2::k_plan<TensorType::Q3_K>(E::kQ3_K, E::kUnpackedQ3_K),         \
            avx2::k_plan<TensorType::Q4_K>(E::kQ4_K, E::kUnpackedQ4_K),         \
            avx2::k_plan<TensorType::Q5_K>(E::kQ5_K, E::kUnpackedQ5_K),         \
            avx2::k_plan<TensorType::Q6_K>(E::kQ6_K, E::kUnpackedQ6_K)          \
    }
constexpr VnniPlans kVex = KITE_VNNI_PLANS(vex), kEvex = KITE_VNNI_PLANS(evex);
#undef KITE_VNNI_PLANS

// VEX where the CPU has AVX-VNNI, else the EVEX form of AVX-512 VNNI.
const VnniPlans& cpu_plans() {
    static const VnniPlans& chosen = cpu_features().avx_vnni ? kVex : kEvex;
    return chosen;
}

template <TilePlan VnniPlans::*P>
void gemm(const WeightMatrix& w, const uint8_t* act, size_t act_bytes, int64_t n_tokens, float* y,
          int64_t group_begin, int64_t group_end) {
    run_tiles(cpu_plans().*P, w, act, act_bytes, n_tokens, y, group_begin, group_end);
}

}  // namespace

}  // namespace avxvnni

// ---- Activations and the kernel sets -------------------------------------------------------

namespace {

// The sum of 32 signed bytes: of the stored quants, so that it holds whatever the input (the
// int32 quants of NaN are INT_MIN, and their sum would overflow).
KITE_AVX2 inline int sum_of_bytes(__m256i bytes) {
    const __m256i wide =
        _mm256_sad_epu8(_mm256_xor_si256(bytes, _mm256_set1_epi8(-128)), _mm256_setzero_si256());
    const __m128i half =
        _mm_add_epi64(_mm256_castsi256_si128(wide), _mm256_extracti128_si256(wide, 1));
    return static_cast<int>(
               _mm_cvtsi128_si64(_mm_add_epi64(half, _mm_unpackhi_epi64(half, half)))) -
           32 * 128;
}

// As the reference activation quantizer: 127 / amax, round half to even; the blocks of
// weights of type T, then their terms (BlockTerms).
template <TensorType T>
KITE_AVX2 void quantize_packed(const float* x, uint8_t* dst, int64_t cols) {
    auto* out = reinterpret_cast<PackedActivation<T>*>(dst);
    auto* terms = reinterpret_cast<BlockTerms<T>*>(dst + q8_activation_bytes(cols));
    const __m256 sign = _mm256_set1_ps(-0.0f);
    for (int64_t b = 0; b < cols / kQK; ++b, x += kQK) {
        __m256 v[4];
        for (int i = 0; i < 4; ++i) v[i] = _mm256_loadu_ps(x + 8 * i);
        __m256 m = _mm256_max_ps(
            _mm256_max_ps(_mm256_andnot_ps(sign, v[0]), _mm256_andnot_ps(sign, v[1])),
            _mm256_max_ps(_mm256_andnot_ps(sign, v[2]), _mm256_andnot_ps(sign, v[3])));
        __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
        m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
        m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
        const float amax = _mm_cvtss_f32(m4);
        const float d = amax / 127.0f;
        const __m256 id = _mm256_set1_ps(amax != 0.0f ? 127.0f / amax : 0.0f);
        __m256i q[4];
        for (int i = 0; i < 4; ++i) q[i] = _mm256_cvtps_epi32(_mm256_mul_ps(v[i], id));
        // Narrow to bytes: the packs interleave 128-bit lanes, the permute restores the order.
        const __m256i bytes =
            _mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]), _mm256_packs_epi32(q[2], q[3]));
        const __m256i ordered =
            _mm256_permutevar8x32_epi32(bytes, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(out[b].qs), ordered);
        const int sum = sum_of_bytes(ordered);
        set_scale_and_sum(out[b], d, sum);
        set_terms<T>(terms[b], out[b], sum);
    }
}

// The 16 int32 sums of 8 vectors' pairs (v[2k] + v[2k+1] for k < 8), in order.
KITE_AVX2 inline __m256i sums_of_pairs(const __m256i* v) {
    __m256i a[8];
    for (int k = 0; k < 8; ++k) a[k] = _mm256_add_epi32(v[2 * k], v[2 * k + 1]);
    const __m256i lo =
        _mm256_hadd_epi32(_mm256_hadd_epi32(a[0], a[1]), _mm256_hadd_epi32(a[2], a[3]));
    const __m256i hi =
        _mm256_hadd_epi32(_mm256_hadd_epi32(a[4], a[5]), _mm256_hadd_epi32(a[6], a[7]));
    // lo holds sums 0..3 of the low 128-bit halves, then of the high halves (hi: 4..7).
    return _mm256_add_epi32(_mm256_permute2x128_si256(lo, hi, 0x20),
                            _mm256_permute2x128_si256(lo, hi, 0x31));
}

// The kernels of a plain quantized type at avx2 or avx-vnni: its activations with their
// BlockTerms, multiplied by the level's tiles (kGemm).
template <Isa kIsa, TensorType T, decltype(PackedKernels::gemm) kGemm>
constexpr PackedKernels quant_kernels() {
    return {kIsa, kRows, quant_activation_bytes<T>, quantize_packed<T>, avx2::quant_tile_groups,
            kGemm};
}

// The kernels of a K-quant at avx2 or avx-vnni: Q8_K activations, the level's tiles (kGemm).
template <Isa kIsa, decltype(PackedKernels::gemm) kGemm>
constexpr PackedKernels k_kernels() {
    return {kIsa, kRows, k_activation_bytes, quantize_q8_k, k_tile_groups, kGemm};
}

size_t no_activation(int64_t) {
    return 0;
}

// Float weights read x as it is.
void keep_activation(const float*, uint8_t*, int64_t) {}

}  // namespace

// Q8_K activations bit for bit as quantize_row_q8_k: the first value of largest magnitude maps
// to -127, quants round half to even (vcvtps2dq), sums of 16.
KITE_AVX2 void quantize_q8_k(const float* x, uint8_t* dst, int64_t cols) {
    auto* out = reinterpret_cast<BlockQ8_K*>(dst);
    const __m256 sign = _mm256_set1_ps(-0.0f);
    for (int64_t b = 0; b < cols / kQK_K; ++b, x += kQK_K) {
        __m256 m = _mm256_setzero_ps();
        for (int i = 0; i < 32; ++i)
            m = _mm256_max_ps(m, _mm256_andnot_ps(sign, _mm256_loadu_ps(x + 8 * i)));
        __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
        m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
        m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
        const float amax = _mm_cvtss_f32(m4);
        std::memset(&out[b], 0, sizeof out[b]);
        if (amax == 0.0f) continue;
        float max = 0.0f;
        for (int i = 0; i < 32; ++i) {
            const __m256 v = _mm256_loadu_ps(x + 8 * i);
            const int hits = _mm256_movemask_ps(
                _mm256_cmp_ps(_mm256_andnot_ps(sign, v), _mm256_set1_ps(amax), _CMP_EQ_OQ));
            if (hits) {
                max = x[8 * i + __builtin_ctz(static_cast<unsigned>(hits))];
                break;
            }
        }
        const float iscale = -127.0f / max;
        const __m256 scale = _mm256_set1_ps(iscale);
        const __m256i top = _mm256_set1_epi32(127);
        for (int chunk = 0; chunk < 2; ++chunk) {  // 128 values each
            __m256i q[16];
            for (int i = 0; i < 16; ++i)
                q[i] = _mm256_min_epi32(top, _mm256_cvtps_epi32(_mm256_mul_ps(
                                                 _mm256_loadu_ps(x + 128 * chunk + 8 * i), scale)));
            for (int i = 0; i < 16; i += 4) {
                // The packs interleave 128-bit lanes; the permute restores the order.
                const __m256i bytes = _mm256_packs_epi16(_mm256_packs_epi32(q[i], q[i + 1]),
                                                         _mm256_packs_epi32(q[i + 2], q[i + 3]));
                _mm256_storeu_si256(
                    reinterpret_cast<__m256i*>(out[b].qs + 128 * chunk + 8 * i),
                    _mm256_permutevar8x32_epi32(bytes, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
            }
            const __m256i sums = sums_of_pairs(q);
            const __m128i sums16 =
                _mm_packs_epi32(_mm256_castsi256_si128(sums), _mm256_extracti128_si256(sums, 1));
            _mm_storeu_si128(reinterpret_cast<__m128i*>(out[b].bsums + 8 * chunk), sums16);
        }
        out[b].d = 1 / iscale;
    }
}

namespace avx2 {
const PackedKernels f32{Isa::Avx2,         kRows,         no_activation, keep_activation,
                        float_tile_groups, gemm<kPlanF32>};
const PackedKernels f16{Isa::Avx2,         kRows,         no_activation, keep_activation,
                        float_tile_groups, gemm<kPlanF16>};
const PackedKernels bf16{Isa::Avx2,
                         kRows,
                         bf16_widened_activation_bytes,
                         prepare_bf16_widened_activation,
                         float_tile_groups,
                         gemm<kPlanBf16>};
const PackedKernels q8_0 = quant_kernels<Isa::Avx2, TensorType::Q8_0, gemm<kPlanQ8_0>>(),
                    q4_0 = quant_kernels<Isa::Avx2, TensorType::Q4_0, gemm<kPlanQ4_0>>(),
                    q4_1 = quant_kernels<Isa::Avx2, TensorType::Q4_1, gemm<kPlanQ4_1>>(),
                    q5_0 = quant_kernels<Isa::Avx2, TensorType::Q5_0, gemm<kPlanQ5_0>>(),
                    q5_1 = quant_kernels<Isa::Avx2, TensorType::Q5_1, gemm<kPlanQ5_1>>();
const PackedKernels q2_k = k_kernels<Isa::Avx2, gemm<kPlanQ2_K>>(),
                    q3_k = k_kernels<Isa::Avx2, gemm<kPlanQ3_K>>(),
                    q4_k = k_kernels<Isa::Avx2, gemm<kPlanQ4_K>>(),
                    q5_k = k_kernels<Isa::Avx2, gemm<kPlanQ5_K>>(),
                    q6_k = k_kernels<Isa::Avx2, gemm<kPlanQ6_K>>();
}  // namespace avx2

// The float types have no integer product: AVX-VNNI runs the AVX2 float kernels.
namespace avxvnni {
const PackedKernels f32{Isa::AvxVnni,
                        kRows,
                        no_activation,
                        keep_activation,
                        avx2::float_tile_groups,
                        avx2::gemm<avx2::kPlanF32>};
const PackedKernels f16{Isa::AvxVnni,
                        kRows,
                        no_activation,
                        keep_activation,
                        avx2::float_tile_groups,
                        avx2::gemm<avx2::kPlanF16>};
const PackedKernels bf16{Isa::AvxVnni,
                         kRows,
                         bf16_widened_activation_bytes,
                         prepare_bf16_widened_activation,
                         avx2::float_tile_groups,
                         avx2::gemm<avx2::kPlanBf16>};
const PackedKernels q8_0 = quant_kernels<Isa::AvxVnni, TensorType::Q8_0, gemm<&VnniPlans::q8_0>>(),
                    q4_0 = quant_kernels<Isa::AvxVnni, TensorType::Q4_0, gemm<&VnniPlans::q4_0>>(),
                    q4_1 = quant_kernels<Isa::AvxVnni, TensorType::Q4_1, gemm<&VnniPlans::q4_1>>(),
                    q5_0 = quant_kernels<Isa::AvxVnni, TensorType::Q5_0, gemm<&VnniPlans::q5_0>>(),
                    q5_1 = quant_kernels<Isa::AvxVnni, TensorType::Q5_1, gemm<&VnniPlans::q5_1>>();
const PackedKernels q2_k = k_kernels<Isa::AvxVnni, gemm<&VnniPlans::q2_k>>(),
                    q3_k = k_kernels<Isa::AvxVnni, gemm<&VnniPlans::q3_k>>(),
                    q4_k = k_kernels<Isa::AvxVnni, gemm<&VnniPlans::q4_k>>(),
                    q5_k = k_kernels<Isa::AvxVnni, gemm<&VnniPlans::q5_k>>(),
                    q6_k = k_kernels<Isa::AvxVnni, gemm<&VnniPlans::q6_k>>();
}  // namespace avxvnni

}  // namespace kite::packed
