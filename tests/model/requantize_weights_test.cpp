// Matrices requantized at load (pack_matrices with a type, as a draft model's are): packed
// exactly as the same matrices of a file that `kite quantize` converted to that type, with
// no unpacked copy left; types no larger than the target stay as they are.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <string>

#include "gguf/gguf_file.h"
#include "kernels/cpu/isa.h"
#include "kernels/gemm/packed_layout.h"
#include "kernels/gemm/weight_kernels.h"
#include "model/model_config.h"
#include "model/weights.h"
#include "test_paths.h"

namespace kite {
namespace {

std::string q4_0_variant_path() {
    return std::string(KITE_SOURCE_DIR) + "/models/variants/default-q4_0.gguf";
}

struct Packed {
    std::unique_ptr<GgufFile> file;
    ModelWeights weights;

    Packed(const std::string& path, std::optional<TensorType> requantize) {
        file = GgufFile::open(path);
        weights = bind_weights(*file, read_model_config(*file));
        pack_matrices(*file, weights, requantize);
    }
};

void expect_same_packed(const WeightMatrix& got, const WeightMatrix& want, const char* name) {
    ASSERT_EQ(got.type, want.type) << name;
    ASSERT_NE(got.packed, nullptr) << name;
    EXPECT_EQ(got.data, nullptr) << name << ": the unpacked rows are not kept";
    EXPECT_EQ(got.row_bytes, want.row_bytes) << name;
    const int64_t rows = got.kernels->rows_per_group;
    const auto bytes =
        static_cast<size_t>(packed::n_groups(got, rows) * packed::group_bytes(got, rows));
    EXPECT_EQ(std::memcmp(got.packed, want.packed, bytes), 0) << name;
}

TEST(RequantizeWeights, PacksWhatTheConvertedFileHolds) {
    if (!packed_kernels(TensorType::Q4_0, active_isa()))
        GTEST_SKIP() << "no packed Q4_0 kernels on this instruction set";
    if (!std::filesystem::exists(q4_0_variant_path()))
        GTEST_SKIP() << q4_0_variant_path() << " is missing: scripts/make-variants.sh";
    // The default model is Q4_1 (20 bytes per 32 weights): Q4_0 (18) is smaller.
    const Packed requantized(test::default_model_path(), TensorType::Q4_0);
    const Packed converted(q4_0_variant_path(), std::nullopt);
    ASSERT_EQ(requantized.weights.layers.size(), converted.weights.layers.size());
    for (size_t l = 0; l < converted.weights.layers.size(); ++l) {
        const LayerWeights& got = requantized.weights.layers[l];
        const LayerWeights& want = converted.weights.layers[l];
        expect_same_packed(got.wq, want.wq, "wq");
        expect_same_packed(got.wk, want.wk, "wk");
        expect_same_packed(got.wv, want.wv, "wv");
        expect_same_packed(got.wo, want.wo, "wo");
        expect_same_packed(got.w_gate, want.w_gate, "w_gate");
        expect_same_packed(got.w_up, want.w_up, "w_up");
        expect_same_packed(got.w_down, want.w_down, "w_down");
    }
    expect_same_packed(requantized.weights.output, converted.weights.output, "output");
    // The token embedding is read row by row from the file, in its own type.
    const Packed as_is(test::default_model_path(), std::nullopt);
    EXPECT_EQ(requantized.weights.token_embd.type, as_is.weights.token_embd.type);
    EXPECT_NE(requantized.weights.token_embd.data, nullptr);
}

TEST(RequantizeWeights, KeepsTypesThatAreNotLarger) {
    if (!std::filesystem::exists(q4_0_variant_path()))
        GTEST_SKIP() << q4_0_variant_path() << " is missing: scripts/make-variants.sh";
    // Q4_0 to Q4_0, and Q4_1 to Q8_0 (larger): nothing is converted.
    const Packed same(q4_0_variant_path(), TensorType::Q4_0);
    const Packed larger(test::default_model_path(), TensorType::Q8_0);
    for (const LayerWeights& l : same.weights.layers) EXPECT_EQ(l.wq.type, TensorType::Q4_0);
    for (const LayerWeights& l : larger.weights.layers) EXPECT_EQ(l.w_down.type, TensorType::Q4_1);
}

}  // namespace
}  // namespace kite
