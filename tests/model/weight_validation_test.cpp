// Load-time value checks: a NaN or infinity in a float tensor or in any block scale of a
// quantized one is found at its position (checked against a plain std::isfinite scan of the
// dequantized scales), a clean file passes, and the model refuses to load a poisoned file.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "core/error.h"
#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"
#include "model/model.h"
#include "model/weight_validation.h"
#include "quant/fp16.h"
#include "sanitized_build.h"
#include "test_paths.h"

namespace kite {
namespace {

// The reference: decode each scale field with f16_to_f32 and ask std::isfinite.
int64_t reference_first_bad_block(const std::vector<uint8_t>& data, size_t block_bytes,
                                  std::vector<size_t> offsets) {
    for (size_t b = 0; b * block_bytes < data.size(); ++b)
        for (size_t off : offsets) {
            uint16_t h;
            std::memcpy(&h, &data[b * block_bytes + off], 2);
            if (!std::isfinite(f16_to_f32(h))) return static_cast<int64_t>(b);
        }
    return -1;
}

TEST(WeightValidation, FindsNonFiniteScalesLikeTheReference) {
    struct Layout {
        TensorType type;
        size_t block_bytes;
        std::vector<size_t> offsets;
        size_t block_size;
    };
    const Layout layouts[] = {
        {TensorType::Q4_0, 18, {0}, 32},       {TensorType::Q4_1, 20, {0, 2}, 32},
        {TensorType::Q8_0, 34, {0}, 32},       {TensorType::Q5_0, 22, {0}, 32},
        {TensorType::Q5_1, 24, {0, 2}, 32},    {TensorType::Q4_K, 144, {0, 2}, 256},
        {TensorType::Q5_K, 176, {0, 2}, 256},  {TensorType::Q6_K, 210, {208}, 256},
        {TensorType::Q2_K, 84, {80, 82}, 256}, {TensorType::Q3_K, 110, {108}, 256},
    };
    std::mt19937 rng(3);
    const uint16_t poisons[] = {0x7c00, 0xfc00, 0x7e00, 0x7c01};
    for (const Layout& l : layouts) {
        for (size_t n_blocks : {1u, 7u, 64u, 129u}) {
            for (int trial = 0; trial < 4; ++trial) {
                std::vector<uint8_t> data(n_blocks * l.block_bytes);
                for (auto& b : data) b = static_cast<uint8_t>(rng());
                // Random bytes already hold some non-finite scales; make them finite first.
                for (size_t b = 0; b < n_blocks; ++b)
                    for (size_t off : l.offsets) data[b * l.block_bytes + off + 1] &= 0x3b;
                if (trial > 0) {
                    const size_t b = rng() % n_blocks;
                    const size_t off = l.offsets[rng() % l.offsets.size()];
                    const uint16_t h = poisons[rng() % 4];
                    std::memcpy(&data[b * l.block_bytes + off], &h, 2);
                }
                const int64_t want = reference_first_bad_block(data, l.block_bytes, l.offsets);
                EXPECT_EQ(want < 0, trial == 0);
                EXPECT_EQ(first_non_finite(l.type, data.data(), n_blocks * l.block_size), want)
                    << tensor_type_name(static_cast<uint32_t>(l.type)) << " blocks " << n_blocks;
            }
        }
    }
}

TEST(WeightValidation, FindsNonFiniteFloats) {
    std::mt19937 rng(5);
    std::normal_distribution<float> normal;
    for (size_t n : {1u, 15u, 16u, 17u, 1000u}) {
        std::vector<float> f(n);
        for (float& x : f) x = normal(rng);
        auto bytes = [&] { return reinterpret_cast<const uint8_t*>(f.data()); };
        EXPECT_EQ(first_non_finite(TensorType::F32, bytes(), n), -1);
        const size_t at = rng() % n;
        f[at] = std::numeric_limits<float>::quiet_NaN();
        if (n > 1) f[n - 1] = std::numeric_limits<float>::infinity();
        EXPECT_EQ(first_non_finite(TensorType::F32, bytes(), n), static_cast<int64_t>(at));
        std::vector<uint16_t> h(n);
        for (size_t i = 0; i < n; ++i) h[i] = f32_to_f16(f[i]);
        EXPECT_EQ(first_non_finite(TensorType::F16, reinterpret_cast<const uint8_t*>(h.data()), n),
                  static_cast<int64_t>(at));
    }
}

// The default model is clean, and the check over all of it is cheap. The first pass reads the
// file's pages in, so the second times the check rather than the disk.
TEST(WeightValidation, DefaultModelPassesQuickly) {
    auto f = GgufFile::open(test::default_model_path());
    validate_tensor_values(*f);
    const auto start = std::chrono::steady_clock::now();
    validate_tensor_values(*f);
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    if (!test::kSanitizedBuild) {
        EXPECT_LT(ms, 1000.0);
    }
}

// A norm weight with a NaN: the file is refused with the tensor's name.
TEST(WeightValidation, PoisonedFileIsRefused) {
    GgufWriter w;
    std::vector<float> norm(64, 1.0f);
    norm[9] = std::numeric_limits<float>::quiet_NaN();
    w.add_tensor("blk.0.attn_norm.weight", TensorType::F32, std::vector<uint64_t>{64},
                 {reinterpret_cast<const uint8_t*>(norm.data()), norm.size() * 4});
    const std::vector<uint8_t> bytes = w.to_bytes();
    auto f = GgufFile::parse(bytes, "poisoned.gguf");
    try {
        validate_tensor_values(*f);
        FAIL() << "accepted a NaN";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("'blk.0.attn_norm.weight' (F32) has a non-finite "
                                             "value at element 9"),
                  std::string::npos)
            << e.what();
    }
}

}  // namespace
}  // namespace kite
