// A tiny llama-shaped GGUF model for tests that need a whole model's tensors but not its
// values: 2 layers, width 256, feed-forward 512, 4 query and 2 key/value heads, 32 tokens,
// each matrix of the type asked for, zero bytes (norms 1.0 in F32).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <tuple>
#include <vector>

#include "gguf/gguf_writer.h"
#include "gguf/tensor_type.h"

namespace kite::test {

struct TinyLlama {
    static constexpr int64_t kEmbd = 256, kFf = 512, kVocab = 32, kLayers = 2, kKvWidth = 128;

    // "attn_q", ... for the layer matrices, "token_embd" and "output" -> its type.
    std::function<TensorType(const std::string& leaf)> type_of = [](const std::string&) {
        return TensorType::Q8_0;
    };

    // Bytes of a matrix of `type`, from the type table.
    static uint64_t matrix_bytes(TensorType type, int64_t cols, int64_t rows) {
        const TensorTypeInfo* info = tensor_type_info(static_cast<uint32_t>(type));
        return uint64_t(cols / info->block_size * info->block_bytes) * uint64_t(rows);
    }

    // tokenizer.ggml.tokens when not empty (the weights do not depend on it).
    std::vector<std::string> tokens;

    std::vector<uint8_t> to_bytes() const {
        GgufWriter w;
        w.add_string("general.architecture", "llama");
        if (!tokens.empty()) w.add_string_array("tokenizer.ggml.tokens", tokens);
        w.add_u32("llama.block_count", kLayers);
        w.add_u32("llama.embedding_length", kEmbd);
        w.add_u32("llama.feed_forward_length", kFf);
        w.add_u32("llama.attention.head_count", 4);
        w.add_u32("llama.attention.head_count_kv", 2);
        w.add_u32("llama.context_length", 64);
        w.add_u32("llama.vocab_size", kVocab);
        auto matrix = [&](const std::string& name, const std::string& leaf, int64_t cols,
                          int64_t rows) {
            const TensorType type = type_of(leaf);
            w.add_tensor(name, type, std::vector<uint64_t>{uint64_t(cols), uint64_t(rows)},
                         std::vector<uint8_t>(matrix_bytes(type, cols, rows), 0));
        };
        const std::vector<float> ones(kEmbd, 1.0f);
        auto norm = [&](const std::string& name) {
            w.add_tensor(name, TensorType::F32, std::vector<uint64_t>{uint64_t(kEmbd)},
                         {reinterpret_cast<const uint8_t*>(ones.data()), ones.size() * 4});
        };
        matrix("token_embd.weight", "token_embd", kEmbd, kVocab);
        for (int64_t l = 0; l < kLayers; ++l) {
            const std::string blk = "blk." + std::to_string(l) + ".";
            norm(blk + "attn_norm.weight");
            norm(blk + "ffn_norm.weight");
            for (const auto& [leaf, cols, rows] : {std::tuple{"attn_q", kEmbd, kEmbd},
                                                   {"attn_k", kEmbd, kKvWidth},
                                                   {"attn_v", kEmbd, kKvWidth},
                                                   {"attn_output", kEmbd, kEmbd},
                                                   {"ffn_gate", kEmbd, kFf},
                                                   {"ffn_up", kEmbd, kFf},
                                                   {"ffn_down", kFf, kEmbd}})
                matrix(blk + leaf + ".weight", leaf, cols, rows);
        }
        norm("output_norm.weight");
        matrix("output.weight", "output", kEmbd, kVocab);
        return w.to_bytes();
    }
};

}  // namespace kite::test
