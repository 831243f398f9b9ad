// Paged attention on every instruction-set level against a direct softmax in double.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "isa_cap.h"
#include "kernels/attention.h"
#include "quant/fp16.h"

namespace kite {
namespace {

// Shapes: query heads per KV head 1, 2, 3, 4 and 12 (attended 6 at a time). Heads sharing a
// KV head are attended together when tokens x KV heads make at least 4 jobs per thread: 6
// tokens x 1 KV head on two threads are too few, and go one head at a time. Head dimensions:
// 64 and 128 as in most models, 256 (Gemma 3), 96 and 40, which are not multiples of the
// AVX2 kernel's 32-float value slices (40 is no multiple of 16 either, so AVX-512 machines
// run it with the AVX2 kernel). Blocks of 4 positions fill part of one 8-position score chunk,
// 16 to 64 several whole ones; 80 is past the SIMD kernels and takes the scalar path.
struct AttentionCase {
    int64_t heads, kv_heads;
    int threads;
    int64_t head_dim = 64, block_size = 4;
};

class AttentionTest : public ::testing::TestWithParam<AttentionCase> {};

// Attention through a shuffled block table equals plain softmax attention.
TEST_P(AttentionTest, PagedMatchesDirectSoftmax) {
    std::mt19937 rng(5);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    const int64_t H = GetParam().heads, Hkv = GetParam().kv_heads, d = GetParam().head_dim,
                  bs = GetParam().block_size, ctx = 2 * bs + 3;
    const int32_t table[] = {5, 1, 3};  // positions 0..bs-1 in block 5, then 1, then 3
    // Ends inside the first block, just past it, at odd places in later blocks, at the end.
    const int64_t T = 6;
    const int64_t positions[T] = {0, bs + 2, ctx - 1, 3, 2 * bs + 1, std::min(bs + 12, ctx - 1)};
    const int32_t* tables[T] = {table, table, table, table, table, table};
    const int64_t slot_elems = Hkv * d, n_slots = 6 * bs;
    for (TensorType type : {TensorType::F32, TensorType::F16}) {
        const size_t eb = type == TensorType::F16 ? 2 : 4;
        std::vector<uint8_t> kmem(n_slots * slot_elems * eb), vmem(kmem.size());
        std::vector<float> keys(ctx * slot_elems), vals(ctx * slot_elems);
        for (int64_t p = 0; p < ctx; ++p) {
            const int64_t slot = table[p / bs] * bs + p % bs;
            for (int64_t i = 0; i < slot_elems; ++i) {
                float& k = keys[p * slot_elems + i];
                float& v = vals[p * slot_elems + i];
                k = normal(rng), v = normal(rng);
                if (type == TensorType::F16) {
                    reinterpret_cast<uint16_t*>(kmem.data())[slot * slot_elems + i] = f32_to_f16(k);
                    reinterpret_cast<uint16_t*>(vmem.data())[slot * slot_elems + i] = f32_to_f16(v);
                    k = f16_to_f32(f32_to_f16(k));  // the reference sees what the cache holds
                    v = f16_to_f32(f32_to_f16(v));
                } else {
                    reinterpret_cast<float*>(kmem.data())[slot * slot_elems + i] = k;
                    reinterpret_cast<float*>(vmem.data())[slot * slot_elems + i] = v;
                }
            }
        }
        // Queries twice the keys' scale: sharper weights, so the running maximum matters.
        std::vector<float> q(T * H * d);
        for (float& x : q) x = 2.0f * normal(rng);
        std::vector<double> expected(T * H * d);
        for (int64_t t = 0; t < T; ++t)
            for (int64_t h = 0; h < H; ++h) {
                const int64_t kvh = h / (H / Hkv);
                std::vector<double> w(positions[t] + 1);
                double mx = -1e30, sum = 0;
                for (int64_t p = 0; p <= positions[t]; ++p) {
                    double s = 0;
                    for (int64_t i = 0; i < d; ++i)
                        s += double(q[(t * H + h) * d + i]) * keys[p * slot_elems + kvh * d + i];
                    w[p] = s * 0.125;
                    mx = std::max(mx, w[p]);
                }
                for (double& x : w) sum += (x = std::exp(x - mx));
                for (int64_t i = 0; i < d; ++i) {
                    double o = 0;
                    for (int64_t p = 0; p <= positions[t]; ++p)
                        o += w[p] / sum * vals[p * slot_elems + kvh * d + i];
                    expected[(t * H + h) * d + i] = o;
                }
            }
        PagedKvLayer layer{kmem.data(), vmem.data(), type, slot_elems, bs};
        ThreadPool pool(GetParam().threads);
        for (Isa isa : test::supported_isas()) {
            test::ScopedIsaCap cap(isa);
            std::vector<float> out(T * H * d, NAN);
            paged_attention(layer, {H, Hkv, d}, q.data(), out.data(), T, positions, tables, 0.125f,
                            pool);
            for (int64_t i = 0; i < T * H * d; ++i)
                ASSERT_NEAR(out[i], expected[i], 1e-4)
                    << isa_name(isa) << " " << tensor_type_name(type) << " token " << i / (H * d)
                    << " head " << i / d % H << " element " << i % d;
        }
    }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, AttentionTest,
    ::testing::Values(AttentionCase{4, 2, 1}, AttentionCase{4, 2, 2}, AttentionCase{12, 1, 1},
                      AttentionCase{12, 1, 2}, AttentionCase{12, 1, 2, 128, 32},
                      AttentionCase{4, 2, 1, 32, 32}, AttentionCase{8, 2, 1, 128, 4},
                      AttentionCase{9, 3, 1, 64, 16}, AttentionCase{4, 4, 1, 96, 64},
                      AttentionCase{3, 1, 1, 256, 16}, AttentionCase{16, 4, 1, 256, 32},
                      AttentionCase{6, 2, 1, 40, 16}, AttentionCase{12, 3, 2, 128, 64},
                      AttentionCase{4, 1, 1, 64, 80}));

}  // namespace
}  // namespace kite
