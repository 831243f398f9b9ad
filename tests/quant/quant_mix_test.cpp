// The rules of llama-quantize's Q4_K_M, Q5_K_M and Q6_K mixes, stated without a model: layer
// counts and tensor names in, types out. (quantize_test.cpp checks the rules' output on the
// default model against llama-quantize's files byte for byte.)
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "quant/quant_mix.h"

namespace kite {
namespace {

using T = TensorType;

const QuantMix& mix(const char* name) {
    const QuantMix* m = find_quant_mix(name);
    if (!m) throw std::runtime_error(std::string("no mix ") + name);
    return *m;
}

TEST(QuantMix, NamesAndFileTypes) {
    EXPECT_EQ(mix("q4_k_m").base, T::Q4_K);
    EXPECT_EQ(mix("Q4_K_M").llama_file_type, 15u);
    EXPECT_EQ(mix("Q5_K_M").base, T::Q5_K);
    EXPECT_EQ(mix("Q5_K_M").llama_file_type, 17u);
    EXPECT_EQ(mix("Q6_K").base, T::Q6_K);
    EXPECT_EQ(mix("Q6_K").llama_file_type, 18u);
    EXPECT_EQ(find_quant_mix("Q4_K"), nullptr);  // the pure type, not a mix
    EXPECT_EQ(find_quant_mix("Q4_K_S"), nullptr);
    EXPECT_EQ(quant_mix_names(), "Q4_K_M, Q5_K_M, Q6_K");
}

// The layers that keep more bits, written out for the layer counts of common models.
TEST(QuantMix, MoreBitsLayers) {
    auto layers = [](int n) {
        std::vector<int> out;
        for (int i = 0; i < n; ++i)
            if (uses_more_bits(i, n)) out.push_back(i);
        return out;
    };
    // 30 layers (SmolLM2-135M): 30/8 = 3 at each end (26 = 7*30/8 on), every third between.
    EXPECT_EQ(layers(30), (std::vector<int>{0, 1, 2, 5, 8, 11, 14, 17, 20, 23, 26, 27, 28, 29}));
    // 24 layers (Qwen2.5-0.5B): 3 at each end (7*24/8 = 21), then 5, 8, ..., 20.
    EXPECT_EQ(layers(24), (std::vector<int>{0, 1, 2, 5, 8, 11, 14, 17, 20, 21, 22, 23}));
    // 28 layers (Qwen2.5-1.5B): 28/8 = 3, 7*28/8 = 24.
    EXPECT_EQ(layers(28), (std::vector<int>{0, 1, 2, 5, 8, 11, 14, 17, 20, 23, 24, 25, 26, 27}));
    // Fewer than 8 layers: no first eighth; the last layer (7*6/8 = 5) and every third.
    EXPECT_EQ(layers(6), (std::vector<int>{2, 5}));
}

MixTensor tensor(const char* name, uint64_t width, int index = 0, int count = 30,
                 bool has_output = true) {
    return {.name = name,
            .row_width = width,
            .index = index,
            .count = count,
            .model_has_output = has_output};
}

TEST(QuantMix, TypePerTensor) {
    const QuantMix &q4 = mix("Q4_K_M"), &q5 = mix("Q5_K_M"), &q6 = mix("Q6_K");
    // attn_v and ffn_down: Q6_K in the more-bits layers, the base type in the others.
    EXPECT_EQ(mix_tensor_type(q4, tensor("blk.0.attn_v.weight", 576, 0)), T::Q6_K);
    EXPECT_EQ(mix_tensor_type(q4, tensor("blk.3.attn_v.weight", 576, 3)), T::Q4_K);
    EXPECT_EQ(mix_tensor_type(q4, tensor("blk.5.ffn_down.weight", 1536, 5)), T::Q6_K);
    EXPECT_EQ(mix_tensor_type(q4, tensor("blk.4.ffn_down.weight", 1536, 4)), T::Q4_K);
    EXPECT_EQ(mix_tensor_type(q5, tensor("blk.29.ffn_down.weight", 1536, 29)), T::Q6_K);
    EXPECT_EQ(mix_tensor_type(q5, tensor("blk.4.attn_v.weight", 1536, 4)), T::Q5_K);
    // Q6_K has no per-layer rule.
    EXPECT_EQ(mix_tensor_type(q6, tensor("blk.0.attn_v.weight", 576, 0)), T::Q6_K);
    // Everything else in a layer keeps the base type.
    for (const char* name :
         {"blk.0.attn_q.weight", "blk.0.attn_k.weight", "blk.0.attn_output.weight",
          "blk.0.ffn_gate.weight", "blk.0.ffn_up.weight"}) {
        EXPECT_EQ(mix_tensor_type(q4, tensor(name, 576)), T::Q4_K) << name;
        EXPECT_EQ(mix_tensor_type(q5, tensor(name, 576)), T::Q5_K) << name;
        EXPECT_EQ(mix_tensor_type(q6, tensor(name, 576)), T::Q6_K) << name;
    }
    // A fused QKV matrix goes one type up.
    EXPECT_EQ(mix_tensor_type(q4, tensor("blk.7.attn_qkv.weight", 3072, 7)), T::Q5_K);
    EXPECT_EQ(mix_tensor_type(q5, tensor("blk.7.attn_qkv.weight", 3072, 7)), T::Q6_K);
}

// output.weight (or token_embd.weight where there is no output.weight) keeps 6 bits, or Q8_0
// where its rows do not fill 256-value super-blocks; a separate token_embd keeps the base.
TEST(QuantMix, OutputAndEmbeddings) {
    const QuantMix& q4 = mix("Q4_K_M");
    EXPECT_EQ(mix_tensor_type(q4, tensor("output.weight", 1536)), T::Q6_K);
    EXPECT_EQ(mix_tensor_type(q4, tensor("output.weight", 576)), T::Q8_0);
    EXPECT_EQ(mix_tensor_type(q4, tensor("token_embd.weight", 1536)), T::Q4_K);
    EXPECT_EQ(mix_tensor_type(q4, tensor("token_embd.weight", 1536, 0, 30, false)), T::Q6_K);
    EXPECT_EQ(mix_tensor_type(q4, tensor("token_embd.weight", 576, 0, 30, false)), T::Q8_0);
    EXPECT_EQ(mix_tensor_type(mix("Q6_K"), tensor("output.weight", 4096)), T::Q6_K);
}

// attn_v is counted in llama-quantize's order of names (layer 10 after layer 9, not after
// layer 1), out of the attn_v tensors; ffn_down out of the layer count given.
TEST(QuantMix, CountsPositionsInLlamaQuantizeOrder) {
    std::vector<MixTensor> t = {
        tensor("blk.10.attn_v.weight", 64),  tensor("blk.2.attn_v.weight", 64),
        tensor("blk.9.attn_v.weight", 64),   tensor("blk.10.ffn_down.weight", 64),
        tensor("blk.2.ffn_down.weight", 64), tensor("token_embd.weight", 64),
        tensor("blk.2.attn_q.weight", 64)};
    for (MixTensor& m : t) m.index = m.count = -1;
    count_mix_positions(t, 12);
    EXPECT_EQ(t[0].index, 2);
    EXPECT_EQ(t[1].index, 0);
    EXPECT_EQ(t[2].index, 1);
    for (int i : {0, 1, 2}) EXPECT_EQ(t[i].count, 3) << i;
    EXPECT_EQ(t[3].index, 1);
    EXPECT_EQ(t[4].index, 0);
    EXPECT_EQ(t[3].count, 12);
    EXPECT_EQ(t[5].index, -1);  // no position for other tensors
    EXPECT_EQ(t[6].index, -1);
}

}  // namespace
}  // namespace kite
