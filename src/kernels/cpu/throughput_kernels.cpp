#include "kernels/cpu/throughput_kernels.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <cstring>

#include "kernels/cpu/amx_tiles.h"
#include "kernels/cpu/isa.h"

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

namespace kite {

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::atomic<uint64_t> g_sink{0};

#if defined(__x86_64__)
#define KITE_AVX2 __attribute__((target("avx2,fma")))
#define KITE_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl")))
#define KITE_AVX512_BF16 __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))
#define KITE_AVX512_VNNI __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni")))
#define KITE_AVX_VNNI __attribute__((target("avx2,avxvnni")))
#define KITE_AVX512VL_VNNI __attribute__((target("avx512vl,avx512vnni")))
#define KITE_AMX __attribute__((target("amx-tile,amx-int8,amx-bf16")))

// Horizontal sums through memory (GCC 12's _mm512_reduce_* trip -Wuninitialized).
KITE_AVX512 float lane_sum(__m512 v) {
    alignas(64) float lanes[16];
    _mm512_store_ps(lanes, v);
    float s = 0;
    for (float x : lanes) s += x;
    return s;
}

KITE_AVX512 uint64_t lane_sum(__m512i v) {
    alignas(64) uint64_t lanes[8];
    _mm512_store_si512(lanes, v);
    uint64_t s = 0;
    for (uint64_t x : lanes) s += x;
    return s;
}

// ---- read bandwidth: xor every 64-byte line into a few independent accumulators ----

KITE_AVX512 uint64_t read_avx512(const uint8_t* p, size_t n) {
    __m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0;
    for (size_t i = 0; i + 256 <= n; i += 256) {
        a0 = _mm512_xor_si512(a0, _mm512_load_si512(p + i));
        a1 = _mm512_xor_si512(a1, _mm512_load_si512(p + i + 64));
        a2 = _mm512_xor_si512(a2, _mm512_load_si512(p + i + 128));
        a3 = _mm512_xor_si512(a3, _mm512_load_si512(p + i + 192));
    }
    a0 = _mm512_xor_si512(_mm512_xor_si512(a0, a1), _mm512_xor_si512(a2, a3));
    return lane_sum(a0);
}

KITE_AVX2 uint64_t read_avx2(const uint8_t* p, size_t n) {
    __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
    for (size_t i = 0; i + 128 <= n; i += 128) {
        a0 = _mm256_xor_si256(a0, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + i)));
        a1 = _mm256_xor_si256(a1, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + i + 32)));
        a2 = _mm256_xor_si256(a2, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + i + 64)));
        a3 = _mm256_xor_si256(a3, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + i + 96)));
    }
    a0 = _mm256_xor_si256(_mm256_xor_si256(a0, a1), _mm256_xor_si256(a2, a3));
    return static_cast<uint64_t>(_mm256_extract_epi64(a0, 0) ^ _mm256_extract_epi64(a0, 3));
}

// ---- compute: independent accumulator chains, enough to cover each instruction's latency ----
// (2 FMA ports x 4 cycles needs 8 chains; 16 leaves room for 5-6 cycle dot instructions.)

KITE_AVX512 void fp32_avx512(int64_t iters, float seed, float* out) {
    constexpr int kChains = 16;
    __m512 acc[kChains];
    for (int i = 0; i < kChains; ++i) acc[i] = _mm512_set1_ps(seed * static_cast<float>(i));
    const __m512 mul = _mm512_set1_ps(0.999f), add = _mm512_set1_ps(seed);
    for (int64_t n = 0; n < iters; ++n)
        for (int i = 0; i < kChains; ++i) acc[i] = _mm512_fmadd_ps(acc[i], mul, add);
    for (int i = 1; i < kChains; ++i) acc[0] = _mm512_add_ps(acc[0], acc[i]);
    *out = lane_sum(acc[0]);
}

KITE_AVX2 void fp32_avx2(int64_t iters, float seed, float* out) {
    constexpr int kChains = 12;  // 16 ymm registers: 12 chains and 2 operands
    __m256 acc[kChains];
    for (int i = 0; i < kChains; ++i) acc[i] = _mm256_set1_ps(seed * static_cast<float>(i));
    const __m256 mul = _mm256_set1_ps(0.999f), add = _mm256_set1_ps(seed);
    for (int64_t n = 0; n < iters; ++n)
        for (int i = 0; i < kChains; ++i) acc[i] = _mm256_fmadd_ps(acc[i], mul, add);
    for (int i = 1; i < kChains; ++i) acc[0] = _mm256_add_ps(acc[0], acc[i]);
    float lanes[8];
    _mm256_storeu_ps(lanes, acc[0]);
    *out = lanes[0] + lanes[7];
}

KITE_AVX512_BF16 void bf16_avx512(int64_t iters, float seed, float* out) {
    constexpr int kChains = 16;
    __m512 acc[kChains];
    for (int i = 0; i < kChains; ++i) acc[i] = _mm512_setzero_ps();
    const __m512bh x = _mm512_cvtne2ps_pbh(_mm512_set1_ps(seed), _mm512_set1_ps(0.5f * seed));
    const __m512bh y = _mm512_cvtne2ps_pbh(_mm512_set1_ps(0.25f), _mm512_set1_ps(0.125f));
    for (int64_t n = 0; n < iters; ++n)
        for (int i = 0; i < kChains; ++i) acc[i] = _mm512_dpbf16_ps(acc[i], x, y);
    for (int i = 1; i < kChains; ++i) acc[0] = _mm512_add_ps(acc[0], acc[i]);
    *out = lane_sum(acc[0]);
}

KITE_AVX512_VNNI void int8_avx512_vnni(int64_t iters, float seed, float* out) {
    constexpr int kChains = 16;
    __m512i acc[kChains];
    for (int i = 0; i < kChains; ++i) acc[i] = _mm512_setzero_si512();
    const __m512i u = _mm512_set1_epi8(static_cast<char>(static_cast<int>(seed) | 1));
    const __m512i s = _mm512_set1_epi8(-3);
    for (int64_t n = 0; n < iters; ++n)
        for (int i = 0; i < kChains; ++i) acc[i] = _mm512_dpbusd_epi32(acc[i], u, s);
    for (int i = 1; i < kChains; ++i) acc[0] = _mm512_add_epi32(acc[0], acc[i]);
    *out = static_cast<float>(lane_sum(acc[0]));
}

KITE_AVX_VNNI void int8_avx_vnni(int64_t iters, float seed, float* out) {
    constexpr int kChains = 12;
    __m256i acc[kChains];
    for (int i = 0; i < kChains; ++i) acc[i] = _mm256_setzero_si256();
    const __m256i u = _mm256_set1_epi8(static_cast<char>(static_cast<int>(seed) | 1));
    const __m256i s = _mm256_set1_epi8(-3);
    for (int64_t n = 0; n < iters; ++n)
        for (int i = 0; i < kChains; ++i) acc[i] = _mm256_dpbusd_avx_epi32(acc[i], u, s);
    for (int i = 1; i < kChains; ++i) acc[0] = _mm256_add_epi32(acc[0], acc[i]);
    *out = static_cast<float>(_mm256_extract_epi32(acc[0], 0));
}

// The same 256-bit dot in its EVEX form: what Isa::AvxVnni runs on CPUs with AVX-512 VNNI
// (and no AVX-VNNI), where it is the int8 peak of the 256-bit kernels.
KITE_AVX512VL_VNNI void int8_avx512vl_vnni(int64_t iters, float seed, float* out) {
    constexpr int kChains = 12;
    __m256i acc[kChains];
    for (int i = 0; i < kChains; ++i) acc[i] = _mm256_setzero_si256();
    const __m256i u = _mm256_set1_epi8(static_cast<char>(static_cast<int>(seed) | 1));
    const __m256i s = _mm256_set1_epi8(-3);
    for (int64_t n = 0; n < iters; ++n)
        for (int i = 0; i < kChains; ++i) acc[i] = _mm256_dpbusd_epi32(acc[i], u, s);
    for (int i = 1; i < kChains; ++i) acc[0] = _mm256_add_epi32(acc[0], acc[i]);
    *out = static_cast<float>(_mm256_extract_epi32(acc[0], 0));
}

// AVX2 has no int8 dot: u8 x s8 pairs to i16 (maddubs), pairs of those to i32 (madd), add.
// The products do not depend on the accumulators, so each chain gets its own operand, and an
// empty asm makes the operands look new every iteration: the compiler can neither compute
// them once outside the loop nor share one product between chains.
KITE_AVX2 void int8_avx2(int64_t iters, float seed, float* out) {
    constexpr int kChains = 8;  // 8 operands + 2 accumulators + 2 constants of 16 registers
    __m256i u[kChains];
    for (int i = 0; i < kChains; ++i)
        u[i] = _mm256_set1_epi8(static_cast<char>((static_cast<int>(seed) + i) | 1));
    __m256i acc0 = _mm256_setzero_si256(), acc1 = acc0;
    const __m256i s = _mm256_set1_epi8(-3), ones = _mm256_set1_epi16(1);
    for (int64_t n = 0; n < iters; ++n) {
        __asm__ volatile(""
                         : "+x"(u[0]), "+x"(u[1]), "+x"(u[2]), "+x"(u[3]), "+x"(u[4]), "+x"(u[5]),
                           "+x"(u[6]), "+x"(u[7]));
        for (int i = 0; i < kChains; i += 2) {
            acc0 = _mm256_add_epi32(acc0, _mm256_madd_epi16(_mm256_maddubs_epi16(u[i], s), ones));
            acc1 =
                _mm256_add_epi32(acc1, _mm256_madd_epi16(_mm256_maddubs_epi16(u[i + 1], s), ones));
        }
    }
    *out = static_cast<float>(_mm256_extract_epi32(_mm256_add_epi32(acc0, acc1), 0));
}

#endif

#if defined(__x86_64__)
// AMX: six independent 16 x 16 sum tiles, each += a 16 x 64 byte tile times a 64 x 16 one:
// int32 sums of bytes (16,384 multiply-adds per tdpbusd) or f32 sums of bf16 pairs (8,192 per
// tdpbf16ps); six chains cover the product's latency. The operands are ones (bf16 1.0 or
// 1.5 from the seed, or bytes of the seed): their values do not change the rate.
template <bool kBf16>
KITE_AMX void tiles_amx(int64_t iters, float seed, float* out) {
    configure_full_amx_tiles();
    alignas(64) uint16_t operand[16 * 32];
    std::fill(std::begin(operand), std::end(operand),
              kBf16 ? static_cast<uint16_t>(0x3f80 + 0x40 * (seed > 1))
                    : static_cast<uint16_t>(0x0101 * (static_cast<int>(seed) | 1)));
    _tile_loadd(6, operand, 64);
    _tile_loadd(7, operand, 64);
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    _tile_zero(4);
    _tile_zero(5);
#define KITE_PRODUCT(sum)          \
    if constexpr (kBf16)           \
        _tile_dpbf16ps(sum, 6, 7); \
    else                           \
        _tile_dpbusd(sum, 6, 7);
    for (int64_t n = 0; n < iters; ++n) {
        KITE_PRODUCT(0)
        KITE_PRODUCT(1)
        KITE_PRODUCT(2)
        KITE_PRODUCT(3)
        KITE_PRODUCT(4)
        KITE_PRODUCT(5)
    }
#undef KITE_PRODUCT
    alignas(64) uint32_t sums[16 * 16];
    _tile_stored(0, sums, 64);
    *out = kBf16 ? std::bit_cast<float>(sums[0]) : static_cast<float>(sums[0]);
}

#endif

uint64_t read_scalar(const uint8_t* p, size_t n) {
    uint64_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
    for (size_t i = 0; i + 32 <= n; i += 64) {  // one word per 64-byte line is enough
        uint64_t w[4];
        std::memcpy(w, p + i, sizeof(w));
        a0 ^= w[0], a1 ^= w[1], a2 ^= w[2], a3 ^= w[3];
    }
    return a0 ^ a1 ^ a2 ^ a3;
}

void fp32_scalar(int64_t iters, float seed, float* out) {
    float acc[8];
    for (int i = 0; i < 8; ++i) acc[i] = seed * static_cast<float>(i);
    for (int64_t n = 0; n < iters; ++n)
        for (float& a : acc) a = a * 0.999f + seed;
    *out = acc[0] + acc[7];
}

}  // namespace

void keep_result(uint64_t v) {
    g_sink.fetch_xor(v, std::memory_order_relaxed);
}

void keep_result(float v) {
    keep_result(uint64_t{std::bit_cast<uint32_t>(v)});
}

// The kernels of the active instruction-set level and the levels below it that this CPU
// runs: with KITE_ISA=avx2 the peaks are those an AVX2-only CPU's kernels could reach.
std::vector<ThroughputKernel> available_throughput_kernels() {
    std::vector<ThroughputKernel> candidates;
#if defined(__x86_64__)
    const CpuFeatures& f = cpu_features();
    candidates = {
        {ComputeKind::Fp32Fma, Isa::Avx512, true, "avx512", "vfmadd zmm", 16 * 16 * 2, fp32_avx512},
        {ComputeKind::Fp32Fma, Isa::Avx2, true, "avx2", "vfmadd ymm", 12 * 8 * 2, fp32_avx2},
        {ComputeKind::Bf16Dot, Isa::Avx512, f.avx512_bf16, "avx512-bf16", "vdpbf16ps zmm",
         16 * 32 * 2, bf16_avx512},
        {ComputeKind::Bf16Dot, Isa::Amx, f.amx_bf16, "amx-bf16", "tdpbf16ps tmm",
         6 * 16 * 16 * 32 * 2, tiles_amx<true>},
        {ComputeKind::Int8Dot, Isa::Amx, true, "amx-int8", "tdpbusd tmm", 6 * 16 * 16 * 64 * 2,
         tiles_amx<false>},
        {ComputeKind::Int8Dot, Isa::Avx512, true, "avx512-vnni", "vpdpbusd zmm", 16 * 64 * 2,
         int8_avx512_vnni},
        {ComputeKind::Int8Dot, Isa::AvxVnni, f.avx512 && f.avx512_vnni, "avx512vl-vnni",
         "vpdpbusd ymm (evex)", 12 * 32 * 2, int8_avx512vl_vnni},
        {ComputeKind::Int8Dot, Isa::AvxVnni, f.avx_vnni, "avx-vnni", "vpdpbusd ymm (vex)",
         12 * 32 * 2, int8_avx_vnni},
        {ComputeKind::Int8Dot, Isa::Avx2, true, "avx2", "vpmaddubsw+vpmaddwd ymm", 8 * 32 * 2,
         int8_avx2},
    };
#endif
    std::vector<ThroughputKernel> k;
    for (const ThroughputKernel& c : candidates)
        if (c.level <= active_isa() && c.cpu_has) k.push_back(c);
    if (k.empty())
        k.push_back(
            {ComputeKind::Fp32Fma, Isa::Scalar, true, "scalar", "mulss+addss", 8 * 2, fp32_scalar});
    return k;
}

ReadKernel widest_read_kernel() {
#if defined(__x86_64__)
    if (active_isa() >= Isa::Avx512) return {read_avx512, "avx512"};
    if (active_isa() >= Isa::Avx2) return {read_avx2, "avx2"};
#endif
    return {read_scalar, "scalar"};
}

const char* compute_kind_name(ComputeKind kind) {
    switch (kind) {
        case ComputeKind::Fp32Fma:
            return "fp32 FMA";
        case ComputeKind::Bf16Dot:
            return "bf16 dot";
        case ComputeKind::Int8Dot:
            return "int8 dot";
    }
    return "?";
}

bool bf16_dot_outruns_fp32_fma() {
#if defined(__x86_64__)
    if (active_isa() < Isa::Avx512 || !cpu_features().avx512_bf16) return false;
    constexpr int64_t kIters = 1 << 15;  // about 0.1-0.4 ms a run
    double fma = 1e9, dot = 1e9;
    for (int run = 0; run < 5; ++run) {  // alternated, best of each
        float out[2];
        auto start = std::chrono::steady_clock::now();
        fp32_avx512(kIters, 1.0f, &out[0]);
        fma = std::min(fma, seconds_since(start));
        start = std::chrono::steady_clock::now();
        bf16_avx512(kIters, 1.0f, &out[1]);
        dot = std::min(dot, seconds_since(start));
        keep_result(out[0] + out[1]);
    }
    // An iteration is 16 FMAs of 16 products, or 16 dots of 32.
    return 32 / dot > 16 / fma;
#else
    return false;
#endif
}

}  // namespace kite
