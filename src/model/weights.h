// The weights of a GGUF file as its architecture describes them, bound in place. Where this CPU
// has packed matrix kernels, a model for inference also repacks each matrix once at load
// (packed_gemm.h); the token embedding keeps being read from the file.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "gguf/gguf_file.h"
#include "kernels/gemm/matmul.h"
#include "kernels/gemm/packed_gemm.h"
#include "model/model_config.h"

namespace kite {

// 1-D weights are small: kept as f32 copies, empty when the architecture or the file has none.
// A fused matrix of the file (attn_qkv, ffn_up holding gate and up) is bound as views of its
// rows, so the forward pass sees separate matrices either way.
struct LayerWeights {
    std::vector<float> attn_norm;
    WeightMatrix wq, wk, wv;
    std::vector<float> bq, bk, bv;                // biases added to q, k, v
    std::vector<float> attn_q_norm, attn_k_norm;  // RMSNorm of every query / key head
    WeightMatrix wo;
    std::vector<float> bo;              // bias added to the attention output
    std::vector<float> attn_post_norm;  // RMSNorm of the attention output before the residual
    std::vector<float> ffn_norm;
    WeightMatrix w_gate, w_up, w_down;
    std::vector<float> b_up, b_down;   // biases of the feed-forward matrices (BERT)
    std::vector<float> ffn_post_norm;  // RMSNorm of the feed-forward output before the residual
    // An encoder's LayerNorms of the residual sums (post-norm), weight and bias.
    std::vector<float> attn_out_norm, attn_out_norm_bias;
    std::vector<float> layer_out_norm, layer_out_norm_bias;
};

struct ModelWeights {
    WeightMatrix token_embd;  // rows are token embeddings
    std::vector<LayerWeights> layers;
    std::vector<float> output_norm;
    WeightMatrix output;  // the LM head; token_embd when the file ties them
    // RoPE frequency factors (n_rot / 2 divisors of the angles), empty when absent: Llama 3's,
    // and LongRoPE's for contexts up to and beyond the original length.
    std::vector<float> rope_freqs, rope_factors_short, rope_factors_long;
    // An encoder's segment embeddings, its learned position embeddings (BERT; null data:
    // positions are rotary) and the LayerNorm of the embedding.
    WeightMatrix token_types, position_embd;
    std::vector<float> token_embd_norm, token_embd_norm_bias;
    std::vector<PackedBytes> packed;  // owns the matrices' packed copies
};

// Throws kite::Error naming the file and the tensor for a missing tensor, a wrong shape, a type
// Kite cannot compute with, or a tensor the architecture does not use.
ModelWeights bind_weights(const GgufFile& file, const ModelConfig& config);

// The bytes the weights of a loaded model hold: the file's, with each matrix that
// pack_matrices packs at `isa` counted at its packed size instead of its file size (the file's
// pages of it leave the resident set). Within 3% of the file for most types; more where a type
// packs wider (Q2_K 1.19x, IQ4_NL 1.9x as Q8_0 blocks). Matrices requantized at load count at
// their file type: an upper bound. What kite info, kite plan and the engine's memory check use.
size_t resident_weight_bytes(const GgufFile& file, const ModelWeights& weights, Isa isa);
// The same for a file not loaded (kite info, kite plan): its weights bound, at active_isa().
size_t resident_weight_bytes(const GgufFile& file, const ModelConfig& config);

// Repacks every matrix this CPU has a packed kernel for, and drops the file's pages of them
// from the resident set. Only for inference: shapes and sizes need no packing.
// `requantize`: matrices of a larger type are converted to it on the way (then only their
// packed copy holds their rows, and WeightMatrix::data is null), e.g. a draft model's, whose
// precision moves only how many of its guesses are accepted.
void pack_matrices(const GgufFile& file, ModelWeights& weights,
                   std::optional<TensorType> requantize = std::nullopt);

}  // namespace kite
