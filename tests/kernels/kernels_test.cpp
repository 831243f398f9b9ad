// GCC 12's AVX-512 headers trip -Wuninitialized where inlined (GCC bug 105593).
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
// SIMD kernels against their scalar references, on random data over many shapes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "isa_cap.h"
#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/isa.h"
#include "kernels/gemm/matmul.h"
#include "kernels/gemm/packed_gemm.h"
#include "kernels/gemm/weight_kernels.h"
#include "kernels/ops/exp_avx2.h"
#include "kernels/ops/exp_avx512.h"
#include "kernels/ops/ops.h"
#include "quant/convert.h"
#include "quant/fp16.h"
#include "random_weights.h"

namespace kite {
namespace {

std::vector<float> random_floats(size_t n, std::mt19937& rng, float scale = 1.0f) {
    std::normal_distribution<float> dist(0.0f, scale);
    std::vector<float> v(n);
    for (float& x : v) x = dist(rng);
    return v;
}

// Every type of the kernel table, and every instruction set this CPU has.
std::vector<TensorType> table_types() {
    std::vector<TensorType> types;
    for (const WeightKernels& k : weight_kernel_table()) types.push_back(k.type);
    return types;
}

class DotTest : public ::testing::TestWithParam<TensorType> {};

TEST_P(DotTest, EveryInstructionSetMatchesReference) {
    const WeightKernels& k = *weight_kernels(GetParam());
    const ActivationFormat& format = *k.activation;
    std::mt19937 rng(42);
    const size_t block = tensor_type_info(static_cast<uint32_t>(k.type))->block_size;
    for (size_t n : {32, 64, 96, 256, 576, 768, 1536, 4096}) {
        if (n % block != 0) continue;
        std::vector<float> x = random_floats(n, rng);
        std::vector<uint8_t> wq = test::random_weight_row(k.type, n, rng);
        std::vector<uint8_t> xa(format.row_bytes(n));
        format.prepare(x.data(), xa.data(), n);
        const float ref = k.dot_reference(wq.data(), xa.data(), n);
        for (Isa isa : test::supported_isas())
            EXPECT_NEAR(dot_for(k, isa)(wq.data(), xa.data(), n), ref,
                        1e-4f * std::sqrt(float(n)) * (1 + std::fabs(ref)))
                << tensor_type_name(k.type) << " " << isa_name(isa) << " n=" << n;
        // And the reference is the mathematical dot of the dequantized operands, up to the
        // rounding of the activations.
        std::vector<float> wd(n);
        dequantize_row(k.type, wq.data(), wd.data(), n);
        double exact = 0;
        for (size_t i = 0; i < n; ++i) exact += double(wd[i]) * x[i];
        EXPECT_NEAR(ref, exact, format.rounding_error * std::sqrt(float(n)))
            << tensor_type_name(k.type);
    }
}

// Float weight rows may have any length; the SIMD loops must handle the tail.
TEST(Dot, FloatTypesHandleOddLengths) {
    std::mt19937 rng(3);
    for (TensorType type : {TensorType::F32, TensorType::F16, TensorType::BF16})
        for (size_t n : {1, 7, 15, 17, 33, 100}) {
            const WeightKernels& k = *weight_kernels(type);
            std::vector<float> w = random_floats(n, rng), x = random_floats(n, rng);
            std::vector<uint8_t> wq(row_bytes(type, n));
            quantize_row(type, w.data(), wq.data(), n);
            std::vector<uint8_t> xa(k.activation->row_bytes(n));
            k.activation->prepare(x.data(), xa.data(), n);
            for (Isa isa : test::supported_isas())
                EXPECT_NEAR(dot_for(k, isa)(wq.data(), xa.data(), n),
                            k.dot_reference(wq.data(), xa.data(), n), 1e-4f)
                    << tensor_type_name(type) << " " << isa_name(isa) << " n=" << n;
        }
}

INSTANTIATE_TEST_SUITE_P(KernelTable, DotTest, ::testing::ValuesIn(table_types()),
                         [](const auto& info) { return tensor_type_name(info.param); });

// The two tables agree: every type the model computes with can be read and written.
TEST(KernelTable, EveryComputeTypeHasARowConversion) {
    for (const WeightKernels& k : weight_kernel_table())
        EXPECT_NE(row_conversion(k.type), nullptr) << tensor_type_name(k.type);
}

TEST(Matmul, ThreadedMatchesReferenceForEveryTokenCount) {
    std::mt19937 rng(9);
    ThreadPool pool(2);
    // 70 rows: the last row tile is partial; 96 columns: an odd number of 32-value blocks;
    // 201 (float types only): an odd column, which BF16 pads to a pair; 512: two K-quant
    // super-blocks. 70 tokens: F16 weights are converted to F32 once per call from 64.
    const int64_t rows = 70;
    for (int64_t cols : {96, 128, 200, 201, 512})
        for (TensorType type : table_types()) {
            if (cols % tensor_type_info(static_cast<uint32_t>(type))->block_size != 0) continue;
            std::vector<uint8_t> wq;
            for (int64_t r = 0; r < rows; ++r) {
                const std::vector<uint8_t> row = test::random_weight_row(type, cols, rng);
                wq.insert(wq.end(), row.begin(), row.end());
            }
            WeightMatrix m{type, wq.data(), rows, cols, row_bytes(type, cols)};
            // The packed kernels where this CPU has them, and the dot-product path.
            WeightMatrix packed = m;
            packed.kernels = packed_kernels(type, active_isa());
            const PackedBytes bytes = packed.kernels ? pack_weights(m, *packed.kernels) : nullptr;
            packed.packed = bytes.get();
            for (int64_t T : {1, 2, 3, 4, 5, 9, 16, 70}) {
                std::vector<float> x = random_floats(T * cols, rng), y(T * rows), yp(T * rows),
                                   yr(T * rows);
                std::vector<uint8_t> scratch(matmul_scratch_bytes(type, cols, T));
                matmul(m, x.data(), T, y.data(), scratch.data(), pool);
                matmul(packed, x.data(), T, yp.data(), scratch.data(), pool);
                matmul_reference(m, x.data(), T, yr.data(), scratch.data());
                for (int64_t i = 0; i < T * rows; ++i) {
                    ASSERT_NEAR(y[i], yr[i], 1e-3f)
                        << tensor_type_name(type) << " cols " << cols << " T " << T << " i " << i;
                    ASSERT_NEAR(yp[i], yr[i], 1e-3f)
                        << "packed " << tensor_type_name(type) << " cols " << cols << " T " << T
                        << " i " << i;
                }
            }
        }
}

// Both BF16 products (vdpbf16ps, and widening to f32 for FMA) on the same packed bytes.
TEST(Matmul, BothBf16KernelsMatchReference) {
    const PackedKernels* avx512_bf16 = packed_kernels(TensorType::BF16, Isa::Avx512);
    if (detected_isa() < Isa::Avx512) GTEST_SKIP() << "no AVX-512 on this CPU";
    std::mt19937 rng(11);
    ThreadPool pool(2);
    const Bf16Kernel chosen = bf16_kernel();
    std::vector<Bf16Kernel> kernels = {Bf16Kernel::Widen};
    if (cpu_features().avx512_bf16) kernels.push_back(Bf16Kernel::Dot);
    const int64_t rows = 40, cols = 97;
    std::vector<float> w = random_floats(rows * cols, rng);
    std::vector<uint8_t> wq(row_bytes(TensorType::BF16, cols) * rows);
    for (int64_t r = 0; r < rows; ++r)
        quantize_row(TensorType::BF16, &w[r * cols], &wq[r * row_bytes(TensorType::BF16, cols)],
                     cols);
    WeightMatrix m{TensorType::BF16, wq.data(), rows, cols, row_bytes(TensorType::BF16, cols)};
    const PackedBytes bytes = pack_weights(m, *avx512_bf16);
    WeightMatrix packed = m;
    packed.packed = bytes.get();
    packed.kernels = avx512_bf16;
    for (Bf16Kernel kernel : kernels) {
        set_bf16_kernel(kernel);
        for (int64_t T : {1, 3, 9, 70}) {  // 70: widened BF16 goes through F32 groups
            std::vector<float> x = random_floats(T * cols, rng), yp(T * rows), yr(T * rows);
            std::vector<uint8_t> scratch(matmul_scratch_bytes(TensorType::BF16, cols, T));
            matmul(packed, x.data(), T, yp.data(), scratch.data(), pool);
            matmul_reference(m, x.data(), T, yr.data(), scratch.data());
            for (int64_t i = 0; i < T * rows; ++i)
                ASSERT_NEAR(yp[i], yr[i], 1e-3f)
                    << (kernel == Bf16Kernel::Dot ? "dot" : "widen") << " T " << T << " i " << i;
        }
    }
    set_bf16_kernel(chosen);
}

TEST(Matmul, SharedInputMatchesSeparateProducts) {
    // Q, K and V shapes: one prepared input, one job over all three matrices' rows.
    std::mt19937 rng(4);
    ThreadPool pool(2);
    const int64_t cols = 128;
    for (TensorType type : {TensorType::F16, TensorType::Q8_0, TensorType::Q4_1}) {
        std::vector<std::vector<uint8_t>> data;
        std::vector<WeightMatrix> mats;
        std::vector<PackedBytes> packed;
        for (int64_t rows : {96, 40, 40}) {
            std::vector<float> w = random_floats(rows * cols, rng);
            data.emplace_back(row_bytes(type, cols) * rows);
            for (int64_t r = 0; r < rows; ++r)
                quantize_row(type, &w[r * cols], &data.back()[r * row_bytes(type, cols)], cols);
            mats.push_back({type, data.back().data(), rows, cols, row_bytes(type, cols)});
            const PackedKernels* kernels = packed_kernels(type, active_isa());
            if (!kernels) continue;
            packed.push_back(pack_weights(mats.back(), *kernels));
            mats.back().packed = packed.back().get();
            mats.back().kernels = kernels;
        }
        for (int64_t T : {1, 6}) {
            std::vector<float> x = random_floats(T * cols, rng);
            std::vector<uint8_t> scratch(matmul_scratch_bytes(type, cols, T));
            std::vector<std::vector<float>> shared(3), alone(3);
            std::vector<MatmulTarget> targets;
            for (int i = 0; i < 3; ++i) {
                shared[i].resize(T * mats[i].rows);
                alone[i].resize(T * mats[i].rows);
                targets.push_back({&mats[i], shared[i].data()});
            }
            matmul_shared_input(targets, x.data(), T, scratch.data(), pool);
            for (int i = 0; i < 3; ++i) {
                matmul(mats[i], x.data(), T, alone[i].data(), scratch.data(), pool);
                EXPECT_EQ(shared[i], alone[i])
                    << tensor_type_name(type) << " T " << T << " m " << i;
            }
        }
    }
}

#if defined(__x86_64__)
__attribute__((target("avx512f"))) static void exp16_row(const float* in, float* out) {
    _mm512_storeu_ps(out, exp16(_mm512_loadu_ps(in)));
    _mm512_storeu_ps(out + 16, exp16(_mm512_loadu_ps(in + 16)));
}

__attribute__((target("avx2,fma"))) static void exp8_row(const float* in, float* out) {
    for (int i = 0; i < 32; i += 8) _mm256_storeu_ps(out + i, exp8(_mm256_loadu_ps(in + i)));
}

using ExpRow = void (*)(const float* in, float* out);  // 32 values

// The largest relative error against expf over the range where exp is a normal float.
float worst_exp_error(ExpRow exp_row) {
    float worst = 0;
    for (float x = -87.3f; x < 88.7f; x += 0.0137f) {
        float in[32], out[32];
        for (int i = 0; i < 32; ++i) in[i] = std::min(x + 0.0004f * static_cast<float>(i), 88.7f);
        exp_row(in, out);
        for (int i = 0; i < 32; ++i) {
            const float ref = std::exp(in[i]);
            worst = std::max(worst, std::fabs(out[i] - ref) / ref);
        }
    }
    return worst;
}

TEST(Ops, VectorExpIsWithinTwoUlpOfExpf) {
    if (detected_isa() < Isa::Avx512) GTEST_SKIP() << "no AVX-512 on this CPU";
    EXPECT_LT(worst_exp_error(exp16_row), 2.5e-7f);  // two ulp of float
    float zero[32] = {}, one[32];
    exp16_row(zero, one);
    EXPECT_EQ(one[0], 1.0f);
}

TEST(Ops, Avx2ExpIsWithinTwoUlpOfExpfAndClampsLikeExp16) {
    if (detected_isa() < Isa::Avx2) GTEST_SKIP() << "no AVX2 on this CPU";
    EXPECT_LT(worst_exp_error(exp8_row), 2.5e-7f);
    // Past the ends exp8 returns its value at the clamp: finite and normal, never inf or 0,
    // which also checks that 2^n by exponent addition neither overflows nor goes subnormal.
    float in[32], out[32], clamp[32];
    for (int i = 0; i < 32; ++i) in[i] = i % 2 ? 88.7f + float(i) * 3 : -87.3f - float(i) * 3;
    exp8_row(in, out);
    for (int i = 0; i < 32; ++i) clamp[i] = i % 2 ? 88.7f : -87.3f;
    exp8_row(clamp, clamp);
    for (int i = 0; i < 32; ++i) {
        EXPECT_EQ(out[i], clamp[i]) << in[i];
        EXPECT_TRUE(std::isnormal(out[i])) << in[i];
        EXPECT_NEAR(out[i] / std::exp(i % 2 ? 88.7f : -87.3f), 1.0f, 2.5e-7f) << in[i];
    }
    // The same polynomial and rounding as exp16: the same bits.
    if (detected_isa() < Isa::Avx512) return;
    std::mt19937 rng(8);
    std::uniform_real_distribution<float> dist(-100.0f, 100.0f);
    for (int r = 0; r < 1000; ++r) {
        float x[32], a[32], b[32];
        for (float& v : x) v = dist(rng);
        exp8_row(x, a);
        exp16_row(x, b);
        for (int i = 0; i < 32; ++i) ASSERT_EQ(a[i], b[i]) << x[i];
    }
}
#endif

TEST(Ops, SwigluMatchesItsFormulaOnEveryLengthAndLevel) {
    std::mt19937 rng(2);
    for (Isa isa : test::supported_isas()) {
        test::ScopedIsaCap cap(isa);
        for (int64_t n : {1, 7, 8, 9, 15, 16, 17, 100}) {
            // Gates of scale 12 reach deep into both tails of SiLU.
            std::vector<float> gate = random_floats(n, rng, 12.0f), up = random_floats(n, rng);
            // One past the end must stay untouched: the tails are masked, not rounded up.
            std::vector<float> out = gate;
            out.push_back(-1.0f);
            swiglu(out.data(), up.data(), n);
            for (int64_t i = 0; i < n; ++i)
                EXPECT_NEAR(out[i], gate[i] / (1.0f + std::exp(-gate[i])) * up[i],
                            1e-5f * (1 + std::fabs(gate[i] * up[i])))
                    << isa_name(isa) << " n " << n << " i " << i;
            EXPECT_EQ(out[n], -1.0f) << isa_name(isa) << " n " << n;
        }
    }
}

TEST(Ops, F32ToF16RowRoundsLikeTheScalarConversionOnEveryLevel) {
    std::mt19937 rng(6);
    std::vector<float> src = random_floats(37, rng, 100.0f);
    src[3] = 65520.0f;  // rounds to inf
    src[4] = 3e-8f;     // subnormal in f16
    for (Isa isa : test::supported_isas()) {
        test::ScopedIsaCap cap(isa);
        std::vector<uint16_t> dst(src.size());
        f32_to_f16_row(src.data(), dst.data(), static_cast<int64_t>(src.size()));
        for (size_t i = 0; i < src.size(); ++i)
            EXPECT_EQ(dst[i], f32_to_f16(src[i])) << isa_name(isa) << " " << src[i];
    }
}

TEST(Ops, RmsNormEqualsTheSerialDoubleSumOnEveryLevel) {
    // The SIMD levels add the squares in another order (exact squares, double sums), so
    // their norms may differ from the serial sum's by the float's last bit at most.
    std::mt19937 rng(9);
    for (Isa isa : test::supported_isas()) {
        test::ScopedIsaCap cap(isa);
        for (int64_t n : {1, 7, 8, 15, 16, 17, 33, 256, 640, 4864}) {
            // A few large values among small ones, as in a hidden state with outlier channels.
            std::vector<float> x = random_floats(n, rng), w = random_floats(n, rng), out(n);
            for (int64_t i = 0; i < n; i += 37) x[i] *= 300.0f;
            double sum = 0;
            for (int64_t i = 0; i < n; ++i) sum += double(x[i]) * x[i];
            const float eps = 1e-6f;
            const float scale = 1.0f / std::sqrt(static_cast<float>(sum / n) + eps);
            rms_norm(x.data(), w.data(), out.data(), n, eps);
            for (int64_t i = 0; i < n; ++i) {
                const float expected = x[i] * scale * w[i];
                EXPECT_NEAR(out[i], expected, std::fabs(expected) * 2.4e-7f)
                    << isa_name(isa) << " n " << n << " i " << i;
            }
        }
    }
}

TEST(Ops, RmsNormAndSwiglu) {
    std::vector<float> x{1, 2, 3, 4}, w{1, 1, 2, 0.5f}, out(4);
    rms_norm(x.data(), w.data(), out.data(), 4, 0.0f);
    const float r = 1.0f / std::sqrt(7.5f);
    EXPECT_NEAR(out[0], r, 1e-6);
    EXPECT_NEAR(out[2], 6 * r, 1e-6);
    EXPECT_NEAR(out[3], 2 * r, 1e-6);
    std::vector<float> g{0.0f, 1.0f}, u{2.0f, 3.0f};
    swiglu(g.data(), u.data(), 2);
    EXPECT_NEAR(g[0], 0.0f, 1e-7);
    EXPECT_NEAR(g[1], 3.0f / (1 + std::exp(-1.0f)), 1e-6);
}

TEST(Ops, RopeRotatesPairsByPositionAngles) {
    std::vector<float> h{1, 0, 1, 0};  // two pairs, n_rot = 4, base 100
    rope(h.data(), 4, 3, 100.0f, RopeStyle::Interleaved);
    EXPECT_NEAR(h[0], std::cos(3.0f), 1e-6);
    EXPECT_NEAR(h[1], std::sin(3.0f), 1e-6);
    EXPECT_NEAR(h[2], std::cos(0.3f), 1e-6);  // 3 * 100^(-2/4)
    EXPECT_NEAR(h[3], std::sin(0.3f), 1e-6);
    std::vector<float> n{1, 1, 0, 0};
    rope(n.data(), 4, 3, 100.0f, RopeStyle::Halves);
    EXPECT_NEAR(n[0], std::cos(3.0f), 1e-6);
    EXPECT_NEAR(n[2], std::sin(3.0f), 1e-6);
    EXPECT_NEAR(n[3], std::sin(0.3f), 1e-6);
}

}  // namespace
}  // namespace kite
