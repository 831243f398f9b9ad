// Packed matrix products one at a time, through the kernel table as the engine runs them:
// where a prompt's time goes per weight type, matrix shape, token count and instruction-set
// level (bench/RESULTS.md). One thread. Weights are random rows quantized with Kite's own
// quantizers (their values do not change the time), activations random floats; the rate "ops"
// counts a multiply-add as 2.
//
//   build/bin/kite_gemm_bench --benchmark_filter='Q5_0/avx512/.*/512$'
//       --benchmark_repetitions=10 --benchmark_report_aggregates_only=true
//
// Names read matmul/TYPE/LEVEL/ROWSxCOLS/TOKENS. The shapes are those of Qwen2.5-Coder-0.5B
// (896 wide, 4864 in the MLP) and SmolLM2-135M (576, 1536); levels this CPU lacks are left out.
// Timings on shared machines are noisy: compare levels or builds in alternated runs, with
// repetitions, by their medians.
#include <benchmark/benchmark.h>

#include <map>
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "core/thread_pool.h"
#include "kernels/cpu/isa.h"
#include "kernels/gemm/matmul.h"
#include "kernels/gemm/packed_gemm.h"
#include "kernels/gemm/packed_k_layout.h"
#include "kernels/gemm/weight_kernels.h"
#include "quant/convert.h"

namespace kite {
namespace {

// A matrix of random weights of one type, packed for one level.
struct PackedMatrix {
    std::vector<uint8_t> rows;
    PackedBytes packed;
    WeightMatrix w;
};

const PackedMatrix& packed_matrix(TensorType type, Isa isa, int64_t rows, int64_t cols) {
    static std::map<std::tuple<TensorType, Isa, int64_t, int64_t>, std::unique_ptr<PackedMatrix>>
        cache;  // repetitions reuse it
    auto& m = cache[{type, isa, rows, cols}];
    if (m) return *m;
    m = std::make_unique<PackedMatrix>();
    const size_t row_bytes = kite::row_bytes(type, static_cast<size_t>(cols));
    m->rows.resize(rows * row_bytes);
    std::mt19937 rng(7);
    std::normal_distribution<float> normal(0.0f, 0.02f);
    std::vector<float> row(cols);
    for (int64_t r = 0; r < rows; ++r) {
        for (float& v : row) v = normal(rng);
        quantize_row(type, row.data(), m->rows.data() + r * row_bytes, cols);
    }
    const PackedKernels& k = *packed_kernels(type, isa);
    m->w = {type, m->rows.data(), rows, cols, row_bytes, nullptr, nullptr};
    m->packed = pack_weights(m->w, k);
    m->w.packed = m->packed.get();
    m->w.kernels = &k;
    return *m;
}

void run_matmul(benchmark::State& state, TensorType type, Isa isa, int64_t rows, int64_t cols,
                int64_t tokens) {
    const PackedMatrix& m = packed_matrix(type, isa, rows, cols);
    std::mt19937 rng(11);
    std::normal_distribution<float> normal;
    std::vector<float> x(tokens * cols), y(tokens * rows);
    for (float& v : x) v = normal(rng);
    std::vector<uint8_t> scratch(matmul_scratch_bytes(type, cols, tokens));
    ThreadPool pool(1);
    for (auto _ : state) {
        matmul(m.w, x.data(), tokens, y.data(), scratch.data(), pool);
        benchmark::DoNotOptimize(y.data());
    }
    state.counters["ops"] = benchmark::Counter(2.0 * static_cast<double>(rows * cols * tokens),
                                               benchmark::Counter::kIsIterationInvariantRate,
                                               benchmark::Counter::kIs1000);
}

void register_all() {
    const TensorType types[] = {TensorType::Q8_0, TensorType::Q4_0, TensorType::Q4_1,
                                TensorType::Q5_0, TensorType::Q5_1, TensorType::Q4_K,
                                TensorType::Q5_K, TensorType::Q6_K, TensorType::F16};
    const Isa levels[] = {Isa::Avx2, Isa::AvxVnni, Isa::Avx512, Isa::Amx};
    struct Shape {
        int64_t rows, cols;
    };
    const Shape shapes[] = {{4864, 896}, {896, 4864}, {896, 896}, {1536, 576}, {576, 1536}};
    for (TensorType type : types)
        for (Isa isa : levels) {
            if (isa > detected_isa() || !packed_kernels(type, isa)) continue;
            for (const Shape& s : shapes) {
                // K-quant rows are whole 256-value super-blocks.
                if (packed::is_k_quant(type) && s.cols % 256 != 0) continue;
                for (int64_t tokens : {1, 16, 512}) {
                    const std::string name = std::string("matmul/") +
                                             tensor_type_name(static_cast<uint32_t>(type)) + "/" +
                                             isa_name(isa) + "/" + std::to_string(s.rows) + "x" +
                                             std::to_string(s.cols) + "/" + std::to_string(tokens);
                    benchmark::RegisterBenchmark(name.c_str(), run_matmul, type, isa, s.rows,
                                                 s.cols, tokens)
                        ->Unit(benchmark::kMillisecond);
                }
            }
        }
}

}  // namespace
}  // namespace kite

int main(int argc, char** argv) {
    kite::register_all();
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
