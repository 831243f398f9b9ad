#include "tools/roofline.h"

#include <algorithm>
#include <map>

#include "kernels/gemm/packed_gemm.h"

namespace kite {

double MachinePeaks::gflops(ComputeKind kind) const {
    return best_of_kind(compute, kind).ops_per_second / 1e9;
}

const char* MachinePeaks::isa(ComputeKind kind) const {
    return best_of_kind(compute, kind).isa;
}

MachinePeaks measure_machine_peaks(ThreadPool& pool, const PeakOptions& o) {
    MachinePeaks p;
    p.bandwidth = measure_read_bandwidth(pool, o.bandwidth_bytes, o.bandwidth_runs);
    p.read_gbs = p.bandwidth.bytes_per_second / 1e9;
    p.compute = measure_compute_peaks(pool, o.seconds_per_kernel);
    return p;
}

ComputeUse compute_use_for(TensorType t, Isa isa) {
    const bool tiles = isa >= Isa::Amx && amx_float_tiles();
    switch (t) {
        case TensorType::F32:
        case TensorType::F16:
            return tiles ? ComputeUse{ComputeKind::Bf16Dot, 3} : ComputeUse{ComputeKind::Fp32Fma};
        case TensorType::BF16:
            return {tiles || (isa >= Isa::Avx512 && bf16_kernel() == Bf16Kernel::Dot)
                        ? ComputeKind::Bf16Dot
                        : ComputeKind::Fp32Fma};
        case TensorType::Q4_K:
        case TensorType::Q5_K:
        case TensorType::Q6_K:  // on int8 tiles, two products: W's low and high bytes
            return {isa >= Isa::Avx2 ? ComputeKind::Int8Dot : ComputeKind::Fp32Fma,
                    isa >= Isa::Amx ? 2 : 1};
        default:
            return {isa >= Isa::Avx2 ? ComputeKind::Int8Dot : ComputeKind::Fp32Fma};
    }
}

TensorType main_weight_type(const GgufFile& file) {
    std::map<uint32_t, uint64_t> bytes;
    for (const GgufTensor& t : file.tensors())
        if (t.n_dims >= 2) bytes[t.type_id] += t.n_bytes;
    if (bytes.empty()) return TensorType::F32;
    auto best = std::max_element(bytes.begin(), bytes.end(),
                                 [](const auto& a, const auto& b) { return a.second < b.second; });
    return static_cast<TensorType>(best->first);
}

const char* bound_name(double intensity, double threshold) {
    return intensity < threshold ? "memory-bound" : "compute-bound";
}

double roofline_fraction(double achieved_gflops, double intensity, double peak_gflops,
                         double peak_gbs) {
    const double attainable = std::min(peak_gflops, intensity * peak_gbs);
    return attainable > 0 ? achieved_gflops / attainable : 0;
}

}  // namespace kite
