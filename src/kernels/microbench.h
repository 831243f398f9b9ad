// Microbenchmarks of this machine's roofline: peak read bandwidth (all threads streaming a
// buffer much larger than the caches) and peak arithmetic throughput of the instructions a
// kernel would use (fp32 FMA, bf16 dot, int8 dot), each per instruction set the CPU has, up
// to the active level (kernels/isa.h): capped at avx2, the peaks are an AVX2 CPU's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/thread_pool.h"
#include "kernels/cpu_features.h"

namespace kite {

// "model name" of /proc/cpuinfo, or "unknown CPU".
std::string cpu_model_name();

struct BandwidthResult {
    double bytes_per_second = 0;  // best run
    size_t buffer_bytes = 0;
    int runs = 0;
    const char* isa = "";  // the loads used
};

// Every thread of `pool` reads its share of one `buffer_bytes` buffer, with the widest loads
// of the active level; best of `runs`.
BandwidthResult measure_read_bandwidth(ThreadPool& pool, size_t buffer_bytes, int runs);

enum class ComputeKind { Fp32Fma, Bf16Dot, Int8Dot };
const char* compute_kind_name(ComputeKind kind);  // "fp32 FMA", "bf16 dot", "int8 dot"

struct ComputeResult {
    ComputeKind kind = ComputeKind::Fp32Fma;
    const char* isa = "";          // e.g. "avx512-vnni"
    const char* instruction = "";  // e.g. "vpdpbusd zmm"
    double ops_per_second = 0;     // multiply and add counted as 2 operations
};

// Every kernel this CPU runs at the active level or below, all threads of `pool`, each for about
// `seconds` (best of several timed runs). A dot product of n pairs counts 2n operations, like n
// FMAs.
std::vector<ComputeResult> measure_compute_peaks(ThreadPool& pool, double seconds = 0.2);

// Whether vdpbf16ps multiplies faster than f32 FMA on one core of this CPU, in products
// per second (it does twice the products per instruction, but some CPUs issue it at a
// fraction of FMA's rate). About 2 ms, timed on the calling thread; false without AVX-512 BF16
// or below the avx512 level.
bool bf16_dot_outruns_fp32_fma();

// The fastest result of each kind (ops_per_second 0 when the CPU has no kernel for it).
ComputeResult best_of_kind(const std::vector<ComputeResult>& results, ComputeKind kind);

}  // namespace kite
