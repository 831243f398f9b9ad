// What distinguishes one transformer family from another, as data: the tensors a file of the
// family holds (names, shapes, which are required), and the choices the forward pass makes
// (RoPE style, norm placement, activation, embedding scale, sliding-window layers). The forward
// pass reads these fields; nothing else names an architecture.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "kernels/ops/ops.h"

namespace kite {

// A tensor dimension, in terms of the model's hyper-parameters.
enum class Dim {
    One,       // a 1-D tensor's missing second dimension
    Embd,      // n_embd
    Ff,        // n_ff
    Ff2,       // 2 * n_ff: gate and up stacked in one matrix
    QWidth,    // n_heads * head_dim
    KvWidth,   // n_kv_heads * head_dim
    QkvWidth,  // QWidth + 2 * KvWidth: query, key and value stacked in one matrix
    HeadDim,   // head_dim: a norm applied to every head
    Vocab,     // n_vocab
    RotHalf,   // n_rot / 2: RoPE frequency factors
    Segments,  // n_token_types: BERT's segment (token type) embeddings
    Ctx,       // n_ctx_train: BERT's learned position embeddings, one row per position
};

// Where a bound tensor goes (LayerWeights / ModelWeights have one field per role).
enum class Role {
    AttnNorm,
    AttnQ,
    AttnK,
    AttnV,
    AttnQkv,
    AttnQBias,
    AttnKBias,
    AttnVBias,
    AttnQNorm,
    AttnKNorm,
    AttnOutput,
    AttnOutputBias,
    AttnPostNorm,
    FfnNorm,
    FfnGate,
    FfnUp,
    FfnUpBias,
    FfnGateUp,
    FfnDown,
    FfnDownBias,
    FfnPostNorm,
    // An encoder's LayerNorms after the attention and after the feed-forward sub-layer
    AttnOutNorm,
    AttnOutNormBias,
    LayerOutNorm,
    LayerOutNormBias,
    // Whole-model tensors
    TokenEmbd,
    OutputNorm,
    Output,
    RopeFreqs,
    RopeFactorsShort,
    RopeFactorsLong,
    TokenTypes,    // an encoder's segment embeddings; inputs are all segment 0
    PositionEmbd,  // learned absolute positions, added to the input (BERT); none: RoPE
    TokenEmbdNorm,
    TokenEmbdNormBias,
};

// One tensor: "blk.{layer}.{name}" for layer tensors, `name` as it is for model tensors.
// cols is GGUF's first dimension (the row length), rows the second (One for a vector).
struct TensorSpec {
    std::string_view name;
    Role role;
    Dim cols, rows = Dim::One;
    bool required = true;
};

enum class Activation {
    SwiGlu,     // silu(gate) * up
    GeGluTanh,  // gelu(gate) * up, GELU's tanh approximation
    // gelu(up), no gate: BERT's feed-forward. BERT defines GELU with erf; the tanh
    // approximation is what llama.cpp computes, and differs from it by under 1e-3.
    GeluTanh,
};

struct Architecture {
    std::string_view name;  // general.architecture
    std::span<const TensorSpec> model_tensors;
    std::span<const TensorSpec> layer_tensors;
    RopeStyle rope_style;
    Activation activation;
    bool scale_embedding;  // the embedding row is multiplied by sqrt(n_embd) (Gemma)
    // When the file sets <arch>.attention.sliding_window, the layers that use it: layer l does
    // unless l % swa_pattern == swa_pattern - 1 (<arch>.attention.sliding_window_pattern
    // overrides the period). 0: the architecture has no sliding window.
    int swa_pattern;
    // A BERT-style encoder: attention sees the whole input both ways, LayerNorm (with bias)
    // follows the embedding and each sub-layer's residual sum, and each input becomes one
    // pooled vector (model/encoder.cpp) instead of next-token logits.
    bool encoder = false;
};

// The description of general.architecture `name`; nullptr when Kite does not know it.
const Architecture* find_architecture(std::string_view name);

// "llama, qwen2, ..." for error messages.
std::string architecture_names();

}  // namespace kite
