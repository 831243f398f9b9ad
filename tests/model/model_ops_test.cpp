// The operations the architectures beyond Llama add, on every instruction-set level, against
// direct computations in double from their definitions: GeGLU with tanh GELU, scaled RoPE
// (frequency factors, linear, YaRN) and sliding-window paged attention.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <random>
#include <vector>

#include "isa_cap.h"
#include "kernels/attention/attention.h"
#include "kernels/ops/ops.h"
#include "quant/fp16.h"

namespace kite {
namespace {

TEST(ModelOps, GegluTanhMatchesDefinitionOnEveryIsa) {
    std::mt19937 rng(3);
    std::normal_distribution<float> normal(0.0f, 3.0f);
    for (int64_t n : {1, 7, 8, 15, 16, 17, 33, 100}) {
        std::vector<float> gate(n), up(n);
        for (float& x : gate) x = normal(rng);
        for (float& x : up) x = normal(rng);
        gate[0] = n > 1 ? -30.0f : 30.0f;  // saturated ends
        for (Isa isa : test::supported_isas()) {
            test::ScopedIsaCap cap(isa);
            std::vector<float> out = gate;
            geglu_tanh(out.data(), up.data(), n);
            for (int64_t i = 0; i < n; ++i) {
                const double x = gate[i];
                const double u = std::sqrt(2 / std::numbers::pi) * (x + 0.044715 * x * x * x);
                const double expected = 0.5 * x * (1 + std::tanh(u)) * up[i];
                ASSERT_NEAR(out[i], expected, 1e-5 * (1 + std::fabs(expected)))
                    << isa_name(isa) << " n " << n << " i " << i << " x " << x;
            }
        }
    }
}

// Across the 1024-value chunks gelu_tanh hands to the GeGLU kernels, and against erf's GELU
// (BERT's definition), which the tanh form approximates to within 1e-3.
TEST(ModelOps, GeluTanhMatchesDefinitionOnEveryIsa) {
    std::mt19937 rng(5);
    std::normal_distribution<float> normal(0.0f, 3.0f);
    for (int64_t n : {1, 17, 1024, 2500}) {
        std::vector<float> x(n);
        for (float& v : x) v = normal(rng);
        for (Isa isa : test::supported_isas()) {
            test::ScopedIsaCap cap(isa);
            std::vector<float> out = x;
            gelu_tanh(out.data(), n);
            for (int64_t i = 0; i < n; ++i) {
                const double v = x[i];
                const double u = std::sqrt(2 / std::numbers::pi) * (v + 0.044715 * v * v * v);
                const double expected = 0.5 * v * (1 + std::tanh(u));
                ASSERT_NEAR(out[i], expected, 1e-5 * (1 + std::fabs(expected)))
                    << isa_name(isa) << " n " << n << " i " << i << " x " << v;
                ASSERT_NEAR(out[i], 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))), 1e-3) << v;
            }
        }
    }
}

// The angle of pair i at `pos`, in double, from the definitions in ops.h.
double angle(const RopeParams& p, int64_t i, int64_t pos) {
    const double base_theta = double(pos) * std::pow(double(p.freq_base), -2.0 * i / p.n_rot);
    const double extrapolated = base_theta / (p.freq_factors ? p.freq_factors[i] : 1.0);
    const double interpolated = p.freq_scale * extrapolated;
    if (p.ext_factor == 0) return interpolated;
    const double y = (i - p.corr_low) / std::max(0.001, double(p.corr_high - p.corr_low));
    const double ramp = (1 - std::clamp(y, 0.0, 1.0)) * p.ext_factor;
    return interpolated * (1 - ramp) + extrapolated * ramp;
}

TEST(ModelOps, RopeAnglesMatchDefinitionWithScaling) {
    const std::vector<float> factors{1, 1, 1.5f, 2, 4, 8, 8, 8};
    RopeParams plain{.n_rot = 16, .freq_base = 10000.0f};
    RopeParams linear = plain, yarn = plain, with_factors = plain, longrope = plain;
    linear.freq_scale = 0.25f;
    yarn.freq_scale = 0.25f, yarn.ext_factor = 1.0f, yarn.corr_low = 1, yarn.corr_high = 5;
    with_factors.freq_factors = factors.data();
    longrope.freq_factors = factors.data(), longrope.attn_factor = 1.19f;
    for (const RopeParams& p : {plain, linear, yarn, with_factors, longrope}) {
        const double magnitude =
            p.attn_factor * (p.ext_factor != 0 ? 1 + 0.1 * std::log(1 / p.freq_scale) : 1.0);
        for (int64_t pos : {0, 1, 7, 100, 1000}) {
            float cs[16];
            rope_angles(p, pos, cs);
            for (int64_t i = 0; i < 8; ++i) {
                const double a = angle(p, i, pos), tol = 2e-6 * (1 + std::fabs(a));
                EXPECT_NEAR(cs[2 * i], magnitude * std::cos(a), tol) << pos << " " << i;
                EXPECT_NEAR(cs[2 * i + 1], magnitude * std::sin(a), tol) << pos << " " << i;
            }
        }
    }
}

TEST(ModelOps, RopeRotatesHalvesOrPairs) {
    const float cs[4] = {0.0f, 1.0f, 1.0f, 0.0f};  // pair 0 turns by 90 degrees, pair 1 not
    float interleaved[4] = {1, 2, 3, 4}, halves[4] = {1, 2, 3, 4};
    rope_rotate(interleaved, cs, 4, RopeStyle::Interleaved);  // pair 0 is (x0, x1)
    rope_rotate(halves, cs, 4, RopeStyle::Halves);            // pair 0 is (x0, x2)
    EXPECT_EQ(std::vector<float>(interleaved, interleaved + 4), (std::vector<float>{-2, 1, 3, 4}));
    EXPECT_EQ(std::vector<float>(halves, halves + 4), (std::vector<float>{-3, 2, 1, 4}));
}

// Sliding-window attention through a shuffled block table equals a direct softmax over the
// window's positions, for windows shorter than, equal to and longer than a block.
TEST(ModelOps, SlidingWindowAttentionMatchesDirectSoftmax) {
    std::mt19937 rng(7);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    struct Case {
        int64_t head_dim, block_size, window;
    };
    for (Case c : {Case{16, 4, 1}, Case{16, 4, 3}, Case{64, 16, 5}, Case{64, 16, 16},
                   Case{256, 16, 21}, Case{32, 64, 70}, Case{48, 80, 9}}) {
        const int64_t H = 4, Hkv = 2, d = c.head_dim, bs = c.block_size, n_blocks = 4;
        const int64_t ctx = n_blocks * bs, slot_elems = Hkv * d;
        const int32_t table[n_blocks] = {2, 0, 3, 1};
        const int64_t positions[] = {0, c.window - 1, c.window, bs + 1, ctx - 1};
        const int64_t T = 5;
        const int32_t* tables[T] = {table, table, table, table, table};
        for (TensorType type : {TensorType::F32, TensorType::F16}) {
            std::vector<float> keys(ctx * slot_elems), vals(ctx * slot_elems);
            std::vector<float> k32(keys.size()), v32(vals.size());
            std::vector<uint16_t> k16(keys.size()), v16(vals.size());
            for (int64_t p = 0; p < ctx; ++p)
                for (int64_t i = 0; i < slot_elems; ++i) {
                    const int64_t at = (table[p / bs] * bs + p % bs) * slot_elems + i;
                    float k = normal(rng), v = normal(rng);
                    if (type == TensorType::F16) {
                        k16[at] = f32_to_f16(k), v16[at] = f32_to_f16(v);
                        k = f16_to_f32(k16[at]), v = f16_to_f32(v16[at]);
                    }
                    k32[at] = keys[p * slot_elems + i] = k;
                    v32[at] = vals[p * slot_elems + i] = v;
                }
            std::vector<float> q(T * H * d);
            for (float& x : q) x = 2.0f * normal(rng);
            std::vector<double> expected(T * H * d);
            for (int64_t t = 0; t < T; ++t)
                for (int64_t h = 0; h < H; ++h) {
                    const int64_t kvh = h / (H / Hkv);
                    const int64_t first = std::max<int64_t>(0, positions[t] - c.window + 1);
                    std::vector<double> w;
                    for (int64_t p = first; p <= positions[t]; ++p) {
                        double s = 0;
                        for (int64_t i = 0; i < d; ++i)
                            s +=
                                double(q[(t * H + h) * d + i]) * keys[p * slot_elems + kvh * d + i];
                        w.push_back(s * 0.25);
                    }
                    const double mx = *std::max_element(w.begin(), w.end());
                    double sum = 0;
                    for (double& x : w) sum += (x = std::exp(x - mx));
                    for (int64_t i = 0; i < d; ++i) {
                        double o = 0;
                        for (int64_t p = first; p <= positions[t]; ++p)
                            o += w[p - first] / sum * vals[p * slot_elems + kvh * d + i];
                        expected[(t * H + h) * d + i] = o;
                    }
                }
            const bool f16 = type == TensorType::F16;
            const int64_t eb = f16 ? 2 : 4;
            auto bytes = [&](const auto& v) { return reinterpret_cast<const uint8_t*>(v.data()); };
            PagedKvLayer layer{{f16 ? bytes(k16) : bytes(k32), type, slot_elems * eb, d * eb},
                               {f16 ? bytes(v16) : bytes(v32), type, slot_elems * eb, d * eb},
                               bs};
            ThreadPool pool(2);
            for (Isa isa : test::supported_isas()) {
                test::ScopedIsaCap cap(isa);
                std::vector<float> out(T * H * d, NAN);
                paged_attention(layer, {H, Hkv, d, c.window}, q.data(), out.data(), T, positions,
                                nullptr, tables, 0.25f, pool);
                for (int64_t i = 0; i < T * H * d; ++i)
                    ASSERT_NEAR(out[i], expected[i], 1e-4)
                        << isa_name(isa) << " " << tensor_type_name(type) << " d " << d << " block "
                        << bs << " window " << c.window << " token " << i / (H * d);
            }
        }
    }
}

}  // namespace
}  // namespace kite
