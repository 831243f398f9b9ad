#include "kernels/microbench.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>

#include "core/error.h"
#include "kernels/isa.h"

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

namespace kite {

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Keeps results alive so the compiler cannot drop the loops that produce them.
std::atomic<uint64_t> g_sink{0};

void sink(uint64_t v) {
    g_sink.fetch_xor(v, std::memory_order_relaxed);
}

// A kernel's float result kept by its bits: the value itself may be far outside any integer
// type (converting it would be undefined behaviour).
void sink(float v) {
    sink(uint64_t{std::bit_cast<uint32_t>(v)});
}

#if defined(__x86_64__)
#define KITE_AVX2 __attribute__((target("avx2,fma")))
#define KITE_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl")))
#define KITE_AVX512_BF16 __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))
#define KITE_AVX512_VNNI __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni")))
#define KITE_AVX_VNNI __attribute__((target("avx2,avxvnni")))
#define KITE_AVX512VL_VNNI __attribute__((target("avx512vl,avx512vnni")))

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

using KernelFn = void (*)(int64_t iters, float seed, float* out);

struct Kernel {
    ComputeKind kind;
    Isa level;     // the lowest instruction-set level whose kernels use this instruction
    bool cpu_has;  // beyond the level: its own CPU feature, where it needs one
    const char* isa;
    const char* instruction;
    double ops_per_iter;  // multiply + add = 2 operations
    KernelFn fn;
};

// The kernels of the active instruction-set level and the levels below it that this CPU
// runs: with KITE_ISA=avx2 the peaks are those an AVX2-only CPU's kernels could reach.
std::vector<Kernel> available_kernels() {
    std::vector<Kernel> candidates;
#if defined(__x86_64__)
    const CpuFeatures& f = cpu_features();
    candidates = {
        {ComputeKind::Fp32Fma, Isa::Avx512, true, "avx512", "vfmadd zmm", 16 * 16 * 2, fp32_avx512},
        {ComputeKind::Fp32Fma, Isa::Avx2, true, "avx2", "vfmadd ymm", 12 * 8 * 2, fp32_avx2},
        {ComputeKind::Bf16Dot, Isa::Avx512, f.avx512_bf16, "avx512-bf16", "vdpbf16ps zmm",
         16 * 32 * 2, bf16_avx512},
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
    std::vector<Kernel> k;
    for (const Kernel& c : candidates)
        if (c.level <= active_isa() && c.cpu_has) k.push_back(c);
    if (k.empty())
        k.push_back(
            {ComputeKind::Fp32Fma, Isa::Scalar, true, "scalar", "mulss+addss", 8 * 2, fp32_scalar});
    return k;
}

// Seconds for every thread of the pool to run `iters` iterations of the kernel.
double time_kernel(ThreadPool& pool, KernelFn fn, int64_t iters) {
    std::vector<float> out(pool.size());
    const auto start = std::chrono::steady_clock::now();
    pool.parallel_for(pool.size(), [&](int64_t begin, int64_t end, int) {
        for (int64_t t = begin; t < end; ++t) fn(iters, 1.0f + static_cast<float>(t), &out[t]);
    });
    const double s = seconds_since(start);
    for (float v : out) sink(v);
    return s;
}

}  // namespace

std::string cpu_model_name() {
    std::ifstream in("/proc/cpuinfo");
    std::string line;
    while (std::getline(in, line))
        if (line.rfind("model name", 0) == 0) {
            std::string name = line.substr(line.find(':') + 1);
            const size_t first = name.find_first_not_of(" \t");
            return first == std::string::npos ? "unknown CPU" : name.substr(first);
        }
    return "unknown CPU";
}

BandwidthResult measure_read_bandwidth(ThreadPool& pool, size_t buffer_bytes, int runs) {
    constexpr size_t kChunk = size_t{1} << 20;  // work unit: 1 MiB
    constexpr size_t kAlign = 4096;             // (MADV_HUGEPAGE made the set-up 5x slower)
    const size_t n_chunks = std::max<size_t>(1, buffer_bytes / kChunk);
    const size_t bytes = n_chunks * kChunk;
    const size_t alloc = (bytes + kAlign - 1) / kAlign * kAlign;
    std::unique_ptr<uint8_t, decltype(&std::free)> buf(
        static_cast<uint8_t*>(std::aligned_alloc(kAlign, alloc)), &std::free);
    if (!buf) fail("cannot allocate {} bytes for the bandwidth test", alloc);
    uint8_t* base = buf.get();
    // Each thread first touches the pages it later reads.
    pool.parallel_for(static_cast<int64_t>(n_chunks), [&](int64_t begin, int64_t end, int) {
        for (int64_t c = begin; c < end; ++c)
            std::memset(base + c * kChunk, static_cast<int>(c & 0x7f) + 1, kChunk);
    });

    using ReadFn = uint64_t (*)(const uint8_t*, size_t);
    ReadFn read = read_scalar;
    const char* isa = "scalar";
#if defined(__x86_64__)
    if (active_isa() >= Isa::Avx512)
        read = read_avx512, isa = "avx512";
    else if (active_isa() >= Isa::Avx2)
        read = read_avx2, isa = "avx2";
#endif
    BandwidthResult r;
    r.buffer_bytes = bytes;
    r.runs = std::max(1, runs);
    r.isa = isa;
    std::vector<uint64_t> out(pool.size());
    for (int run = 0; run < r.runs; ++run) {
        const auto start = std::chrono::steady_clock::now();
        pool.parallel_for(static_cast<int64_t>(n_chunks), [&](int64_t begin, int64_t end, int t) {
            out[t] ^= read(base + begin * kChunk, (end - begin) * kChunk);
        });
        r.bytes_per_second = std::max(r.bytes_per_second, bytes / seconds_since(start));
    }
    for (uint64_t v : out) sink(v);
    return r;
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

std::vector<ComputeResult> measure_compute_peaks(ThreadPool& pool, double seconds) {
    std::vector<ComputeResult> results;
    for (const Kernel& k : available_kernels()) {
        // Grow the run until one takes ~1/40 of the time, then keep the best of the rest:
        // on a shared machine, short runs are the ones that can catch the cores alone.
        int64_t iters = 1 << 10;
        double t = time_kernel(pool, k.fn, iters);
        while (t < seconds / 40 && iters < (int64_t{1} << 40)) {
            iters *= 2;
            t = time_kernel(pool, k.fn, iters);
        }
        double best = t;
        const auto start = std::chrono::steady_clock::now();
        while (seconds_since(start) < seconds * 0.75)
            best = std::min(best, time_kernel(pool, k.fn, iters));
        ComputeResult r;
        r.kind = k.kind;
        r.isa = k.isa;
        r.instruction = k.instruction;
        r.ops_per_second = k.ops_per_iter * static_cast<double>(iters) * pool.size() / best;
        results.push_back(r);
    }
    return results;
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
        sink(out[0] + out[1]);
    }
    // An iteration is 16 FMAs of 16 products, or 16 dots of 32.
    return 32 / dot > 16 / fma;
#else
    return false;
#endif
}

ComputeResult best_of_kind(const std::vector<ComputeResult>& results, ComputeKind kind) {
    ComputeResult best;
    best.kind = kind;
    for (const ComputeResult& r : results)
        if (r.kind == kind && r.ops_per_second > best.ops_per_second) best = r;
    return best;
}

}  // namespace kite
