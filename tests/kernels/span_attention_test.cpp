// Span attention (an encoder's: every token over its own input, no mask, no cache) on every
// instruction-set level against a direct softmax in double, and the tiled SIMD kernels
// against the scalar reference.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "isa_cap.h"
#include "kernels/attention/span_attention.h"

namespace kite {
namespace {

struct SpanCase {
    int64_t heads, kv_heads, head_dim;
    std::vector<int64_t> lengths;  // the inputs' token counts, in batch order
    int threads;
};

// softmax(q . K * scale) V in double over each token's own input.
std::vector<double> direct(const std::vector<float>& q, const std::vector<float>& k,
                           const std::vector<float>& v, const std::vector<int64_t>& starts,
                           int64_t H, int64_t Hkv, int64_t d, double scale) {
    const int64_t T = starts.back(), width = Hkv * d;
    std::vector<double> out(size_t(T * H * d));
    for (size_t i = 0; i + 1 < starts.size(); ++i)
        for (int64_t t = starts[i]; t < starts[i + 1]; ++t)
            for (int64_t h = 0; h < H; ++h) {
                const int64_t kvh = h / (H / Hkv);
                std::vector<double> w;
                double mx = -1e300, sum = 0;
                for (int64_t p = starts[i]; p < starts[i + 1]; ++p) {
                    double s = 0;
                    for (int64_t e = 0; e < d; ++e)
                        s += double(q[(t * H + h) * d + e]) * k[p * width + kvh * d + e];
                    w.push_back(s * scale);
                    mx = std::max(mx, w.back());
                }
                for (double& x : w) sum += (x = std::exp(x - mx));
                for (int64_t e = 0; e < d; ++e) {
                    double o = 0;
                    for (int64_t p = starts[i]; p < starts[i + 1]; ++p)
                        o += w[size_t(p - starts[i])] / sum * v[p * width + kvh * d + e];
                    out[size_t((t * H + h) * d + e)] = o;
                }
            }
    return out;
}

class SpanAttentionTest : public ::testing::TestWithParam<SpanCase> {};

TEST_P(SpanAttentionTest, MatchesDirectSoftmaxOnEveryLevel) {
    const SpanCase& c = GetParam();
    std::mt19937 rng(11);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<int64_t> starts = {0};
    for (int64_t n : c.lengths) starts.push_back(starts.back() + n);
    const int64_t T = starts.back();
    std::vector<float> q(size_t(T * c.heads * c.head_dim)), k(size_t(T * c.kv_heads * c.head_dim)),
        v(k.size());
    // Queries twice the keys' scale: sharp weights, so the running maximum matters.
    for (float& x : q) x = 2.0f * normal(rng);
    for (float& x : k) x = normal(rng);
    for (float& x : v) x = normal(rng);
    const float scale = 1.0f / std::sqrt(float(c.head_dim));
    const std::vector<double> expected =
        direct(q, k, v, starts, c.heads, c.kv_heads, c.head_dim, scale);
    ThreadPool pool(c.threads);
    std::vector<float> scalar;
    for (Isa isa : test::supported_isas()) {
        test::ScopedIsaCap cap(isa);
        std::vector<float> out(q.size(), NAN);
        span_attention({c.heads, c.kv_heads, c.head_dim}, q.data(), k.data(), v.data(), out.data(),
                       {starts.data(), int64_t(c.lengths.size())}, scale, pool);
        if (isa == Isa::Scalar) scalar = out;
        for (size_t i = 0; i < out.size(); ++i) {
            ASSERT_NEAR(out[i], expected[i], 1e-4)
                << isa_name(isa) << " token " << i / size_t(c.heads * c.head_dim) << " head "
                << i / size_t(c.head_dim) % size_t(c.heads);
            ASSERT_NEAR(out[i], scalar[i], 1e-4) << isa_name(isa) << " vs scalar";
        }
    }
}

// nomic-bert's shape (12 heads of 64, no grouping) over inputs that start and end inside the
// kernels' 64-row blocks, cross several and are shorter than a tile of 8 queries; grouped
// heads; head dimensions 128 and 40 (the AVX2 kernel on an AVX-512 machine) and 256.
INSTANTIATE_TEST_SUITE_P(Shapes, SpanAttentionTest,
                         ::testing::Values(SpanCase{12, 12, 64, {1, 7, 64, 65, 130, 3, 300}, 2},
                                           SpanCase{4, 2, 64, {9, 17, 100}, 1},
                                           SpanCase{6, 3, 128, {70, 5, 33}, 2},
                                           SpanCase{2, 1, 40, {12, 80}, 1},
                                           SpanCase{2, 2, 256, {66, 1}, 2}));

TEST(SpanAttention, NoInputsIsNothingToDo) {
    ThreadPool pool(1);
    const int64_t starts[] = {0};
    span_attention({2, 2, 64}, nullptr, nullptr, nullptr, nullptr, {starts, 0}, 0.125f, pool);
}

}  // namespace
}  // namespace kite
