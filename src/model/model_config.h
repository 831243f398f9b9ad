// Model hyper-parameters read from GGUF metadata: the generic `<arch>.*` keys, checked for range,
// and what they mean for each layer (sliding window, RoPE frequencies).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gguf/gguf_file.h"
#include "kernels/ops/ops.h"
#include "model/architecture.h"

namespace kite {

// What differs between layers: sliding-window layers attend to the last `window` positions
// (0: all of them) and may rotate with their own RoPE base.
struct LayerAttention {
    int64_t window = 0;
    RopeParams rope;  // freq_factors are the weights' (bound later)
};

// How an encoder turns its output rows into one vector per input (<arch>.pooling_type, in
// llama.cpp's numbering).
enum class Pooling { None = 0, Mean = 1, Cls = 2, Last = 3 };

struct ModelConfig {
    std::string architecture;  // general.architecture, e.g. "llama"
    const Architecture* arch = nullptr;
    std::string name;  // general.name, may be empty
    int64_t n_layers = 0;
    int64_t n_embd = 0;      // model width
    int64_t n_ff = 0;        // feed-forward hidden width
    int64_t n_heads = 0;     // query heads
    int64_t n_kv_heads = 0;  // key/value heads (< n_heads: grouped-query attention)
    int64_t head_dim = 0;
    int64_t n_ctx_train = 0;  // context length the model was trained for
    int64_t n_vocab = 0;
    int64_t n_rot = 0;  // dimensions rotated by RoPE
    double rope_freq_base = 10000.0;
    double rms_norm_eps = 1e-5;
    double attention_scale = 0;  // multiplies q.k: <arch>.attention.scale or 1/sqrt(head_dim)
    int64_t sliding_window = 0;  // <arch>.attention.sliding_window; 0: none
    // Encoders: LayerNorm epsilon (<arch>.attention.layer_norm_epsilon), segment count
    // (tokenizer.ggml.token_type_count) and pooling.
    double layer_norm_eps = 1e-12;
    int64_t n_token_types = 0;
    Pooling pooling = Pooling::None;
    std::vector<LayerAttention> layers;
};

// Throws kite::Error, naming the file and the key, for an unknown architecture or missing or
// out-of-range hyper-parameters.
ModelConfig read_model_config(const GgufFile& file);

}  // namespace kite
