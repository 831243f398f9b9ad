// GCC 12's AVX-512 headers trip -Wuninitialized where inlined (GCC bug 105593).
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
// SIMD kernels against their scalar references, on random data over many shapes.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "isa_cap.h"
#include "kernels/attention.h"
#include "kernels/cpu_features.h"
#include "kernels/exp_avx512.h"
#include "kernels/matmul.h"
#include "kernels/ops.h"
#include "kernels/packed_gemm.h"
#include "kernels/weight_kernels.h"
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
            const PackedBytes bytes = can_pack(type) ? pack_weights(m) : nullptr;
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
    if (!can_pack(TensorType::BF16)) GTEST_SKIP() << "no packed kernels on this CPU";
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
    const PackedBytes bytes = pack_weights(m);
    WeightMatrix packed = m;
    packed.packed = bytes.get();
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
            if (can_pack(type)) packed.push_back(pack_weights(mats.back()));
            if (can_pack(type)) mats.back().packed = packed.back().get();
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
}

TEST(Ops, VectorExpIsWithinTwoUlpOfExpf) {
    if (!cpu_features().avx512) GTEST_SKIP() << "no AVX-512 on this CPU";
    float worst = 0;
    for (float x = -87.0f; x < 88.0f; x += 0.0137f) {
        float in[16], out[16];
        for (int i = 0; i < 16; ++i) in[i] = x + 0.0007f * static_cast<float>(i);
        exp16_row(in, out);
        for (int i = 0; i < 16; ++i) {
            const float ref = std::exp(in[i]);
            worst = std::max(worst, std::fabs(out[i] - ref) / ref);
        }
    }
    EXPECT_LT(worst, 2.5e-7f);  // two ulp of float
    float zero[16] = {}, one[16];
    exp16_row(zero, one);
    EXPECT_EQ(one[0], 1.0f);
}
#endif

TEST(Ops, SwigluMatchesItsFormulaOnEveryLength) {
    std::mt19937 rng(2);
    for (int64_t n : {1, 15, 16, 17, 100}) {
        std::vector<float> gate = random_floats(n, rng), up = random_floats(n, rng), out = gate;
        for (float& g : gate) g *= 12.0f;  // reach deep into both tails of SiLU
        out = gate;
        swiglu(out.data(), up.data(), n);
        for (int64_t i = 0; i < n; ++i)
            EXPECT_NEAR(out[i], gate[i] / (1.0f + std::exp(-gate[i])) * up[i], 1e-5f) << n;
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

// Attention through a shuffled block table equals plain softmax attention.
// Shapes: 2 query heads per KV head, and 12 (attended 6 at a time). Heads sharing a KV head
// are attended together when tokens x KV heads make at least 4 jobs per thread: 5 tokens x
// 1 KV head on two threads are too few, and go one head at a time. Head dimensions 64 and
// 128 have fixed-size value kernels, 32 the general loop; 32-position blocks fill whole
// 16-position score chunks, 4-position blocks only part of one.
struct AttentionCase {
    int64_t heads, kv_heads;
    int threads;
    int64_t head_dim = 64, block_size = 4;
};

class AttentionTest : public ::testing::TestWithParam<AttentionCase> {};

TEST_P(AttentionTest, PagedMatchesDirectSoftmax) {
    std::mt19937 rng(5);
    const int64_t H = GetParam().heads, Hkv = GetParam().kv_heads, d = GetParam().head_dim,
                  bs = GetParam().block_size, ctx = 2 * bs + 3;
    const int32_t table[] = {5, 1, 3};  // positions 0..bs-1 in block 5, then 1, then 3
    for (TensorType type : {TensorType::F32, TensorType::F16}) {
        const int64_t slot_elems = Hkv * d, n_slots = 6 * bs;
        const size_t eb = type == TensorType::F16 ? 2 : 4;
        std::vector<uint8_t> kmem(n_slots * slot_elems * eb), vmem(kmem.size());
        std::vector<float> keys = random_floats(ctx * slot_elems, rng),
                           vals = random_floats(ctx * slot_elems, rng);
        for (int64_t p = 0; p < ctx; ++p) {
            const int64_t slot = table[p / bs] * bs + p % bs;
            for (int64_t i = 0; i < slot_elems; ++i) {
                float kv = keys[p * slot_elems + i], vv = vals[p * slot_elems + i];
                if (type == TensorType::F16) {
                    reinterpret_cast<uint16_t*>(kmem.data())[slot * slot_elems + i] =
                        f32_to_f16(kv);
                    reinterpret_cast<uint16_t*>(vmem.data())[slot * slot_elems + i] =
                        f32_to_f16(vv);
                    keys[p * slot_elems + i] = f16_to_f32(f32_to_f16(kv));
                    vals[p * slot_elems + i] = f16_to_f32(f32_to_f16(vv));
                } else {
                    reinterpret_cast<float*>(kmem.data())[slot * slot_elems + i] = kv;
                    reinterpret_cast<float*>(vmem.data())[slot * slot_elems + i] = vv;
                }
            }
        }
        PagedKvLayer layer{kmem.data(), vmem.data(), type, slot_elems, bs};
        const int64_t T = 5;
        const int64_t positions[T] = {0, bs + 2, ctx - 1, 3, 2 * bs + 1};
        const int32_t* tables[T] = {table, table, table, table, table};
        std::vector<float> q = random_floats(T * H * d, rng), out(T * H * d);
        ThreadPool pool(GetParam().threads);
        paged_attention(layer, {H, Hkv, d}, q.data(), out.data(), T, positions, tables, 0.125f,
                        pool);
        for (int64_t t = 0; t < T; ++t)
            for (int64_t h = 0; h < H; ++h) {
                const int64_t kvh = h / (H / Hkv);
                std::vector<double> w(positions[t] + 1);
                double mx = -1e30, sum = 0;
                for (int64_t p = 0; p <= positions[t]; ++p) {
                    double s = 0;
                    for (int64_t i = 0; i < d; ++i)
                        s += q[(t * H + h) * d + i] * keys[p * slot_elems + kvh * d + i];
                    w[p] = s * 0.125;
                    mx = std::max(mx, w[p]);
                }
                for (double& x : w) sum += (x = std::exp(x - mx));
                for (int64_t i = 0; i < d; ++i) {
                    double o = 0;
                    for (int64_t p = 0; p <= positions[t]; ++p)
                        o += w[p] / sum * vals[p * slot_elems + kvh * d + i];
                    ASSERT_NEAR(out[(t * H + h) * d + i], o, 1e-4) << t << " " << h << " " << i;
                }
            }
    }
}

INSTANTIATE_TEST_SUITE_P(Shapes, AttentionTest,
                         ::testing::Values(AttentionCase{4, 2, 1}, AttentionCase{4, 2, 2},
                                           AttentionCase{12, 1, 1}, AttentionCase{12, 1, 2},
                                           AttentionCase{12, 1, 2, 128, 32},
                                           AttentionCase{4, 2, 1, 32, 32},
                                           AttentionCase{8, 2, 1, 128, 4}));

}  // namespace
}  // namespace kite
