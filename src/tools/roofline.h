// The roofline of a machine: peak read bandwidth W and peak compute C per kind of arithmetic.
// Work with arithmetic intensity AI (FLOPs per byte) below C / W is memory-bound (it can
// reach at most AI * W FLOP/s), above it compute-bound (at most C).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "core/thread_pool.h"
#include "gguf/gguf_file.h"
#include "kernels/cpu/isa.h"
#include "tools/peaks.h"

namespace kite {

struct MachinePeaks {
    double read_gbs = 0;                 // W, GB/s (10^9 bytes)
    std::vector<ComputeResult> compute;  // every kernel measured
    BandwidthResult bandwidth;           // how W was measured

    // Best GFLOP/s of a kind (0 when the CPU has no kernel for it).
    double gflops(ComputeKind kind) const;
    const char* isa(ComputeKind kind) const;
};

struct PeakOptions {
    size_t bandwidth_bytes = size_t{1} << 30;  // read buffer: well beyond the caches
    int bandwidth_runs = 5;
    double seconds_per_kernel = 0.2;
};

// Runs the microbenchmarks of tools/peaks.h on every thread of `pool`.
MachinePeaks measure_machine_peaks(ThreadPool& pool, const PeakOptions& options = {});

// The arithmetic a prompt's matmuls of this weight type run at on instruction-set level `isa`
// (kernels/cpu/isa.h): int8 dot for quantized blocks (activations quantized to 8 bits) from avx2
// up, bf16 dot for BF16 on AMX tiles or at avx512 where the packed kernels chose vdpbf16ps
// (see bf16_kernel), bf16 dot for F32 and F16 on AMX tiles with three products per
// multiply-add (each factor in two bf16 parts), else fp32 FMA; K-quants on AMX tiles take two
// int8 products per multiply-add (packed_gemm_amx_k.cpp).
struct ComputeUse {
    ComputeKind kind;
    int products = 1;  // of `kind` per multiply-add of the matmul
};
ComputeUse compute_use_for(TensorType weight_type, Isa isa);

// The type holding most of a model file's matrix bytes, e.g. Q4_1 for the default model.
TensorType main_weight_type(const GgufFile& file);

struct Accelerator {
    const char* name;
    double tflops;  // dense bf16
    double tbs;     // memory bandwidth, TB/s
    double threshold() const { return tflops * 1e12 / (tbs * 1e12); }
};
inline constexpr Accelerator kAccelerators[] = {
    {"H100 SXM", 989.5, 3.35},
    {"H200", 989.5, 4.8},
};

// "memory-bound" or "compute-bound".
const char* bound_name(double intensity, double threshold);

// Achieved FLOP/s over what the roofline allows at this intensity: min(C, AI * W).
double roofline_fraction(double achieved_gflops, double intensity, double peak_gflops,
                         double peak_gbs);

}  // namespace kite
