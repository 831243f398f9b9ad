// This machine's roofline peaks: read bandwidth (all threads streaming a buffer much larger
// than the caches) and the arithmetic throughput of the instructions a kernel would use
// (fp32 FMA, bf16 dot, int8 dot), each per instruction set the CPU has, up to the active
// level (kernels/cpu/isa.h): capped at avx2, the peaks are an AVX2 CPU's.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "core/thread_pool.h"
#include "kernels/cpu/throughput_kernels.h"

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

// The fastest result of each kind (ops_per_second 0 when the CPU has no kernel for it).
ComputeResult best_of_kind(const std::vector<ComputeResult>& results, ComputeKind kind);

}  // namespace kite
