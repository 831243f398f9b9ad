// Exact dequantization: on random blocks of every block type, Kite's f32 rows equal bit for
// bit the values of PyPI's gguf package (gguf.quants.dequantize), which follows ggml's
// reference (fixtures from tools/make-dequant-fixtures.sh).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "gguf/tensor_type.h"
#include "quant/convert.h"

namespace kite {
namespace {

struct DequantFixture {
    size_t n_values = 0;
    std::vector<uint8_t> blocks;
    std::vector<float> values;
};

DequantFixture load_fixture(TensorType type) {
    const std::string path =
        std::string(KITE_SOURCE_DIR) + "/tests/fixtures/dequant/" + tensor_type_name(type) + ".bin";
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error(path + " is missing");
    std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), {});
    const TensorTypeInfo& info = *tensor_type_info(static_cast<uint32_t>(type));
    uint32_t n_blocks;
    std::memcpy(&n_blocks, bytes.data(), sizeof n_blocks);
    DequantFixture f;
    f.n_values = size_t{n_blocks} * info.block_size;
    const size_t block_bytes = size_t{n_blocks} * info.block_bytes;
    if (bytes.size() != 4 + block_bytes + f.n_values * sizeof(float))
        throw std::runtime_error(path + " has the wrong size");
    f.blocks.assign(bytes.begin() + 4, bytes.begin() + 4 + block_bytes);
    f.values.resize(f.n_values);
    std::memcpy(f.values.data(), bytes.data() + 4 + block_bytes, f.n_values * sizeof(float));
    return f;
}

class DequantTest : public ::testing::TestWithParam<TensorType> {};

TEST_P(DequantTest, EqualsGgufPackageBitForBit) {
    const DequantFixture f = load_fixture(GetParam());
    const size_t block = tensor_type_info(static_cast<uint32_t>(GetParam()))->block_size;
    // The whole fixture as one row, and as rows of one block each.
    std::vector<float> row(f.n_values, -1.0f);
    dequantize_row(GetParam(), f.blocks.data(), row.data(), f.n_values);
    EXPECT_EQ(std::memcmp(row.data(), f.values.data(), f.n_values * sizeof(float)), 0);
    const size_t block_bytes = row_bytes(GetParam(), block);
    for (size_t b = 0; b < f.n_values / block; ++b) {
        std::vector<float> one(block);
        dequantize_row(GetParam(), &f.blocks[b * block_bytes], one.data(), block);
        for (size_t j = 0; j < block; ++j) {
            uint32_t got, want;
            std::memcpy(&got, &one[j], 4);
            std::memcpy(&want, &f.values[b * block + j], 4);
            ASSERT_EQ(got, want) << tensor_type_name(GetParam()) << " block " << b << " value " << j
                                 << ": " << one[j] << " vs " << f.values[b * block + j];
        }
    }
}

INSTANTIATE_TEST_SUITE_P(BlockTypes, DequantTest,
                         ::testing::Values(TensorType::Q4_0, TensorType::Q4_1, TensorType::Q5_0,
                                           TensorType::Q5_1, TensorType::Q8_0, TensorType::Q2_K,
                                           TensorType::Q3_K, TensorType::Q4_K, TensorType::Q5_K,
                                           TensorType::Q6_K, TensorType::IQ4_NL,
                                           TensorType::IQ4_XS),
                         [](const auto& info) { return tensor_type_name(info.param); });

// Every block type of the conversion table has a fixture here.
TEST(DequantFixtures, CoverEveryBlockTypeKiteReads) {
    for (const RowConversion& c : row_conversions()) {
        if (tensor_type_info(static_cast<uint32_t>(c.type))->block_size == 1) continue;
        EXPECT_NO_THROW(load_fixture(c.type)) << tensor_type_name(c.type);
    }
}

}  // namespace
}  // namespace kite
