// The cost model (tools/model_cost.h) on the default model, checked against numbers computed
// another way: parameters and bytes summed over the file's tensors, attention from the config.
#include <gtest/gtest.h>

#include <cmath>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "gguf/gguf_file.h"
#include "kernels/cpu/isa.h"
#include "kv/kv_cache.h"
#include "model/model_config.h"
#include "test_paths.h"
#include "tiny_llama.h"
#include "tools/model_cost.h"
#include "tools/roofline.h"

namespace kite {
namespace {

class ModelCostTest : public ::testing::Test {
  protected:
    void SetUp() override {
        file_ = GgufFile::open(test::default_model_path());
        config_ = read_model_config(*file_);
        cost_ = model_cost(*file_, config_);
    }

    // Every tensor a pass reads whole: all but the embedding table, which only the LM head
    // reads whole when it is tied (the default model has no output.weight).
    uint64_t whole_tensor_bytes() const {
        const bool tied = file_->find_tensor("output.weight") == nullptr;
        uint64_t bytes = 0;
        for (const GgufTensor& t : file_->tensors())
            if (t.name != "token_embd.weight" || tied) bytes += t.n_bytes;
        return bytes;
    }

    uint64_t matrix_params() const {
        const bool tied = file_->find_tensor("output.weight") == nullptr;
        uint64_t n = 0;
        for (const GgufTensor& t : file_->tensors())
            if (t.n_dims == 2 && (t.name != "token_embd.weight" || tied)) n += t.n_elements;
        return n;
    }

    // 4 * L * H * d_h per (query, key) pair: Q.K and the weighted sum of V, 2 FLOPs each.
    double attention_per_key() const {
        return 4.0 * static_cast<double>(config_.n_layers * config_.n_heads * config_.head_dim);
    }

    std::unique_ptr<GgufFile> file_;
    ModelConfig config_;
    ModelCost cost_;
};

TEST_F(ModelCostTest, ParametersAndBytesMatchTheFile) {
    EXPECT_TRUE(cost_.tied_output);
    EXPECT_EQ(cost_.matmul_params(), matrix_params());
    EXPECT_EQ(cost_.matmul_params(), 134479872u);  // 134515008 minus 35136 norm weights
    EXPECT_EQ(cost_.output_params, static_cast<uint64_t>(config_.n_vocab * config_.n_embd));
    EXPECT_EQ(cost_.weight_bytes(), whole_tensor_bytes());
    const GgufTensor* embd = file_->find_tensor("token_embd.weight");
    ASSERT_NE(embd, nullptr);
    EXPECT_EQ(cost_.embd_row_bytes, embd->n_bytes / static_cast<uint64_t>(config_.n_vocab));
    const KvCacheShape shape{config_.n_layers, config_.n_kv_heads, config_.head_dim};
    EXPECT_EQ(cost_.kv_bytes_per_token(2),
              static_cast<double>(KvCache::bytes_per_token(shape, TensorType::F16)));
    EXPECT_EQ(cost_.kv_bytes_per_token(2), 23040);
    // The block formats at their real bytes: 34 and 18 bytes per 32 values.
    EXPECT_EQ(cost_.kv_bytes_per_token(kv_bytes_per_element(TensorType::Q8_0)),
              static_cast<double>(KvCache::bytes_per_token(shape, TensorType::Q8_0)));
    EXPECT_EQ(cost_.kv_bytes_per_token(kv_bytes_per_element(TensorType::Q4_0)), 6480);
}

TEST_F(ModelCostTest, DecodeTokenIsTwiceTheParametersPlusAttention) {
    for (int64_t s : {0, 1, 100, 4096}) {
        const PassCost p = cost_.pass(1, 1, s, 2);
        EXPECT_DOUBLE_EQ(p.flops, 2.0 * static_cast<double>(matrix_params()) +
                                      attention_per_key() * static_cast<double>(s + 1))
            << s;
        EXPECT_DOUBLE_EQ(p.bytes, static_cast<double>(whole_tensor_bytes() + cost_.embd_row_bytes +
                                                      (s + 1) * cost_.kv_bytes_per_token(2)))
            << s;
    }
}

TEST_F(ModelCostTest, BatchesShareTheWeightReads) {
    const PassCost one = cost_.pass(1, 1, 300, 2), batch = cost_.pass(8, 1, 300, 2);
    EXPECT_DOUBLE_EQ(batch.flops, 8 * one.flops);
    const double per_seq = static_cast<double>(cost_.embd_row_bytes + 301 * 23040);
    EXPECT_DOUBLE_EQ(batch.bytes, static_cast<double>(whole_tensor_bytes()) + 8 * per_seq);
    EXPECT_GT(batch.intensity(), 5 * one.intensity());  // 8x the FLOPs, 1.5x the bytes

    PassCost sum;
    for (int64_t i = 0; i < 5; ++i) sum += cost_.pass(8, 1, 300 + i, 2);
    const PassCost decode = cost_.decode(8, 5, 300, 2);
    EXPECT_DOUBLE_EQ(decode.flops, sum.flops);
    EXPECT_DOUBLE_EQ(decode.bytes, sum.bytes);
}

TEST_F(ModelCostTest, PrefillComputesTheLmHeadOnce) {
    const int64_t q = 100;
    const double lm_head = 2.0 * static_cast<double>(cost_.output_params);
    const double layers = 2.0 * static_cast<double>(cost_.layer_params) * q;
    const PassCost p = cost_.pass(1, q, 0, 2);
    EXPECT_DOUBLE_EQ(p.flops, layers + lm_head + attention_per_key() * (q * (q + 1) / 2));
    // In chunks: only the last pass has logits, and it attends to the first chunk too.
    const PassCost chunked = cost_.prefill(2 * q, q, 2);
    const PassCost first = cost_.pass(1, q, 0, 2, false), second = cost_.pass(1, q, q, 2);
    EXPECT_DOUBLE_EQ(chunked.flops, first.flops + second.flops);
    EXPECT_DOUBLE_EQ(chunked.bytes, first.bytes + second.bytes);
    EXPECT_DOUBLE_EQ(first.flops, layers + attention_per_key() * (q * (q + 1) / 2));
    EXPECT_DOUBLE_EQ(p.bytes - first.bytes, static_cast<double>(cost_.output_bytes));
}

TEST_F(ModelCostTest, AttentionIntensity) {
    const double g = static_cast<double>(config_.n_heads / config_.n_kv_heads);  // 3
    for (auto [q, s] : {std::pair<int64_t, int64_t>{1, 1024}, {16, 1024}, {512, 0}, {7, 77}}) {
        const double keys = static_cast<double>(q * s) + static_cast<double>(q * (q + 1)) / 2;
        EXPECT_NEAR(cost_.attention(q, s, 2).intensity(),
                    2 * g / 2 * keys / static_cast<double>(s + q), 1e-9);
    }
    // Decode attention: ~2g/b FLOPs per byte, whatever the context.
    EXPECT_NEAR(cost_.attention(1, 8192, 2).intensity(), 3.0, 1e-3);
}

// A mixed file (as llama-quantize's Q4_K_M writes: a type per matrix) costs each matrix at
// its own type's bytes per weight, here written out from the block layouts (bytes per value),
// not from Kite's type table.
TEST(ModelCostMixed, EachMatrixAtItsOwnBytes) {
    using T = TensorType;
    const std::map<std::string, std::pair<T, double>> types = {
        {"token_embd", {T::Q8_0, 34.0 / 32}},    {"attn_q", {T::Q4_K, 144.0 / 256}},
        {"attn_k", {T::Q5_0, 22.0 / 32}},        {"attn_v", {T::Q6_K, 210.0 / 256}},
        {"attn_output", {T::Q5_K, 176.0 / 256}}, {"ffn_gate", {T::Q5_1, 24.0 / 32}},
        {"ffn_up", {T::Q4_K, 144.0 / 256}},      {"ffn_down", {T::Q8_0, 34.0 / 32}},
        {"output", {T::Q6_K, 210.0 / 256}}};
    test::TinyLlama tiny;
    tiny.type_of = [&](const std::string& leaf) { return types.at(leaf).first; };
    const std::vector<uint8_t> bytes_of_file = tiny.to_bytes();  // the file views these bytes
    auto file = GgufFile::parse(bytes_of_file, "mixed.gguf");
    const ModelCost cost = model_cost(*file, read_model_config(*file));

    const double embd = test::TinyLlama::kEmbd, ff = test::TinyLlama::kFf,
                 kv = test::TinyLlama::kKvWidth, vocab = test::TinyLlama::kVocab;
    auto bytes = [&](const char* leaf, double cols, double rows) {
        return types.at(leaf).second * cols * rows;
    };
    const double layer = bytes("attn_q", embd, embd) + bytes("attn_k", embd, kv) +
                         bytes("attn_v", embd, kv) + bytes("attn_output", embd, embd) +
                         bytes("ffn_gate", embd, ff) + bytes("ffn_up", embd, ff) +
                         bytes("ffn_down", ff, embd) + 2 * embd * 4;
    const double expected = 2 * layer + bytes("output", embd, vocab) + embd * 4;
    EXPECT_EQ(double(cost.weight_bytes()), expected);
    EXPECT_EQ(double(cost.embd_row_bytes), bytes("token_embd", embd, 1));
    EXPECT_EQ(double(cost.weight_types.at(T::Q4_K).bytes),
              2 * (bytes("attn_q", embd, embd) + bytes("ffn_up", embd, ff)));
    EXPECT_DOUBLE_EQ(cost.weight_types.at(T::Q4_K).bits_per_weight(), 4.5);
    EXPECT_DOUBLE_EQ(cost.weight_types.at(T::Q6_K).bits_per_weight(), 6.5625);
    EXPECT_DOUBLE_EQ(cost.weight_types.at(T::Q5_0).bits_per_weight(), 5.5);
    EXPECT_DOUBLE_EQ(cost.weight_types.at(T::F32).bits_per_weight(), 32);
    EXPECT_EQ(cost.weight_types.at(T::Q8_0).params, uint64_t(2 * ff * embd));  // not the table
    uint64_t sum = 0;
    for (const auto& [type, tb] : cost.weight_types) sum += tb.bytes;
    EXPECT_EQ(sum, cost.weight_bytes());
    // One decode token reads W, an embedding row and the KV of its one position.
    EXPECT_EQ(cost.pass(1, 1, 0, 2).bytes,
              expected + bytes("token_embd", embd, 1) + double(cost.kv_bytes_per_token(2)));
}

TEST(Roofline, ThresholdsAndFractions) {
    EXPECT_NEAR(kAccelerators[0].threshold(), 295.4, 0.1);  // H100 SXM
    EXPECT_NEAR(kAccelerators[1].threshold(), 206.1, 0.1);  // H200
    EXPECT_STREQ(bound_name(2.0, 10.0), "memory-bound");
    EXPECT_STREQ(bound_name(20.0, 10.0), "compute-bound");
    // W = 10 GB/s, C = 100 GFLOP/s: at AI 2 the roof is 20 GFLOP/s, at AI 50 it is C.
    EXPECT_DOUBLE_EQ(roofline_fraction(10, 2, 100, 10), 0.5);
    EXPECT_DOUBLE_EQ(roofline_fraction(50, 50, 100, 10), 0.5);
}

TEST(Microbench, MeasuresSomethingPositive) {
    ThreadPool pool(2);
    const BandwidthResult bw = measure_read_bandwidth(pool, size_t{16} << 20, 2);
    // Positive and finite only: timings on a loaded machine say nothing (benchmarks live in
    // bench/).
    EXPECT_GT(bw.bytes_per_second, 0);
    EXPECT_TRUE(std::isfinite(bw.bytes_per_second));
    EXPECT_EQ(bw.buffer_bytes, size_t{16} << 20);
    const std::vector<ComputeResult> peaks = measure_compute_peaks(pool, 0.02);
    ASSERT_FALSE(peaks.empty());
    for (const ComputeResult& r : peaks) EXPECT_GT(r.ops_per_second, 0) << r.isa;
    EXPECT_GT(best_of_kind(peaks, ComputeKind::Fp32Fma).ops_per_second, 0);
    // Only the kernels of the active level (KITE_ISA) run: int8 dot from avx2 up.
    EXPECT_EQ(best_of_kind(peaks, ComputeKind::Int8Dot).ops_per_second > 0,
              active_isa() >= Isa::Avx2);
}

}  // namespace
}  // namespace kite
