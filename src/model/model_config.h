// Model hyper-parameters read from GGUF metadata (the llama family).
#pragma once

#include <cstdint>
#include <string>

#include "gguf/gguf_file.h"

namespace kite {

struct ModelConfig {
    std::string architecture;  // general.architecture, e.g. "llama"
    std::string name;          // general.name, may be empty
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

    // KV-cache bytes for one token: M_kv = 2 * b * L * H_kv * d_h (keys and values).
    int64_t kv_bytes_per_token(int64_t bytes_per_element) const {
        return 2 * bytes_per_element * n_layers * n_kv_heads * head_dim;
    }
};

// Throws kite::Error for an unknown architecture or missing/invalid hyper-parameters.
ModelConfig read_model_config(const GgufFile& file);

}  // namespace kite
