#include "tools/peaks.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>

#include "core/error.h"

namespace kite {

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Seconds for every thread of the pool to run `iters` iterations of the kernel.
double time_kernel(ThreadPool& pool, ThroughputFn fn, int64_t iters) {
    std::vector<float> out(pool.size());
    const auto start = std::chrono::steady_clock::now();
    pool.parallel_for(pool.size(), [&](int64_t begin, int64_t end, int) {
        for (int64_t t = begin; t < end; ++t) fn(iters, 1.0f + static_cast<float>(t), &out[t]);
    });
    const double s = seconds_since(start);
    for (float v : out) keep_result(v);
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

    const ReadKernel read = widest_read_kernel();
    BandwidthResult r;
    r.buffer_bytes = bytes;
    r.runs = std::max(1, runs);
    r.isa = read.isa;
    std::vector<uint64_t> out(pool.size());
    for (int run = 0; run < r.runs; ++run) {
        const auto start = std::chrono::steady_clock::now();
        pool.parallel_for(static_cast<int64_t>(n_chunks), [&](int64_t begin, int64_t end, int t) {
            out[t] ^= read.fn(base + begin * kChunk, (end - begin) * kChunk);
        });
        r.bytes_per_second = std::max(r.bytes_per_second, bytes / seconds_since(start));
    }
    for (uint64_t v : out) keep_result(v);
    return r;
}

std::vector<ComputeResult> measure_compute_peaks(ThreadPool& pool, double seconds) {
    std::vector<ComputeResult> results;
    for (const ThroughputKernel& k : available_throughput_kernels()) {
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

ComputeResult best_of_kind(const std::vector<ComputeResult>& results, ComputeKind kind) {
    ComputeResult best;
    best.kind = kind;
    for (const ComputeResult& r : results)
        if (r.kind == kind && r.ops_per_second > best.ops_per_second) best = r;
    return best;
}

}  // namespace kite
