// The KV cache's element types: each slot holds exactly ggml's blocks of the token's keys and
// values (Q8_0 / Q4_0 along the head dimension), keys and values in their own types, and a
// head dimension that does not fill the blocks is refused.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "core/error.h"
#include "core/thread_pool.h"
#include "kv/kv_cache.h"
#include "quant/convert.h"
#include "quant/hadamard.h"

namespace kite {
namespace {

TEST(KvCache, SlotsHoldTheTypesBlocks) {
    std::mt19937 rng(3);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    const KvCacheShape shape{2, 3, 64};
    const int64_t width = shape.n_kv_heads * shape.head_dim;
    for (KvTypes types :
         {KvTypes{TensorType::Q8_0}, KvTypes{TensorType::Q4_0},
          KvTypes{TensorType::F16, TensorType::Q8_0}, KvTypes{TensorType::Q4_0, TensorType::F32}}) {
        KvCache kv(shape, types, 3, 16);
        EXPECT_EQ(kv.bytes(), KvCache::bytes_per_token(shape, types) * 48);
        std::vector<float> k(width), v(width);
        for (float& x : k) x = normal(rng);
        for (float& x : v) x = normal(rng);
        kv.write(1, 37, 0, k.data(), v.data());
        const PagedKvLayer layer = kv.layer(1);
        for (auto [rows, values, type] :
             {std::tuple{layer.k, &k, types.k}, {layer.v, &v, types.v}}) {
            EXPECT_EQ(rows.type, type);
            // Block-type keys and values are stored rotated (quant/hadamard.h); the others as
            // they are.
            EXPECT_EQ(rows.rotated, kv_type_info(type).block_values > 1);
            std::vector<float> stored = *values;
            if (rows.rotated) hadamard32_blocks(stored.data(), width);
            std::vector<uint8_t> expected(row_bytes(type, width));
            quantize_row(type, stored.data(), expected.data(), width);
            EXPECT_EQ(rows.slot_bytes, static_cast<int64_t>(expected.size()));
            EXPECT_EQ(std::memcmp(rows.row(37, 0), expected.data(), expected.size()), 0)
                << tensor_type_name(type);
            // Head 2's row starts at its own blocks.
            EXPECT_EQ(rows.row(37, 2) - rows.row(37, 0), 2 * rows.head_bytes);
            EXPECT_EQ(rows.head_bytes, static_cast<int64_t>(row_bytes(type, shape.head_dim)));
        }
    }
}

TEST(KvCache, WritesOfDifferentSlotsOnManyThreadsEqualOneByOne) {
    // The model writes a prompt's tokens from the pool's threads at once; the rotated types
    // stage each row in scratch, which must not be shared between them.
    std::mt19937 rng(4);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    const KvCacheShape shape{2, 2, 64};
    const int64_t width = shape.n_kv_heads * shape.head_dim, slots = 64;
    std::vector<float> k(slots * width), v(slots * width);
    for (float& x : k) x = normal(rng);
    for (float& x : v) x = normal(rng);
    for (KvTypes types : {KvTypes{TensorType::Q4_0}, KvTypes{TensorType::F16, TensorType::Q8_0}}) {
        KvCache serial(shape, types, 4, 16), threaded(shape, types, 4, 16);
        for (int64_t s = 0; s < slots; ++s) serial.write(1, s, s, &k[s * width], &v[s * width]);
        ThreadPool pool(4);
        pool.parallel_for(slots, [&](int64_t begin, int64_t end, int) {
            for (int64_t s = begin; s < end; ++s)
                threaded.write(1, s, s, &k[s * width], &v[s * width]);
        });
        for (auto [a, b] : {std::pair{serial.layer(1).k, threaded.layer(1).k},
                            {serial.layer(1).v, threaded.layer(1).v}})
            for (int64_t s = 0; s < slots; ++s)
                ASSERT_EQ(std::memcmp(a.row(s, 0), b.row(s, 0), a.slot_bytes), 0)
                    << tensor_type_name(a.type) << " slot " << s;
    }
}

TEST(KvCache, RefusesHeadDimsThatDoNotFillBlocks) {
    const KvCacheShape shape{1, 2, 80};
    EXPECT_NO_THROW(KvCache(shape, TensorType::F16, 1, 16));
    EXPECT_THROW(KvCache(shape, TensorType::Q8_0, 1, 16), Error);
    EXPECT_THROW(KvCache::bytes_per_token(shape, {TensorType::F16, TensorType::Q4_0}), Error);
}

TEST(KvType, TableNamesAndBytes) {
    EXPECT_EQ(kv_type_names(), "f32, f16, q8_0, q4_0");
    EXPECT_EQ(parse_kv_type("q4_0"), TensorType::Q4_0);
    EXPECT_FALSE(parse_kv_type("q4_1").has_value());
    EXPECT_EQ(kv_bytes_per_element(TensorType::Q8_0), 34.0 / 32);
    EXPECT_EQ(kv_bytes_per_element(TensorType::Q4_0), 18.0 / 32);
    EXPECT_EQ(kv_bytes_per_element({TensorType::F32, TensorType::F16}), 3.0);
    EXPECT_EQ(kv_types_name({TensorType::Q8_0, TensorType::Q4_0}), "q8_0/q4_0");
    EXPECT_THROW(kv_type_info(TensorType::Q4_1), Error);
}

}  // namespace
}  // namespace kite
