// The llama-family weights of a GGUF file, bound in place. Where this CPU has packed matrix
// kernels, a model for inference also repacks each matrix once at load (packed_gemm.h); the
// token embedding keeps being read from the file.
#pragma once

#include <string>
#include <vector>

#include "gguf/gguf_file.h"
#include "kernels/matmul.h"
#include "kernels/packed_gemm.h"
#include "model/model_config.h"

namespace kite {

struct LayerWeights {
    std::vector<float> attn_norm;  // 1-D weights are small: kept as f32 copies
    WeightMatrix wq, wk, wv, wo;
    std::vector<float> ffn_norm;
    WeightMatrix w_gate, w_up, w_down;
};

struct ModelWeights {
    WeightMatrix token_embd;  // rows are token embeddings
    std::vector<LayerWeights> layers;
    std::vector<float> output_norm;
    WeightMatrix output;              // the LM head; token_embd when the file ties them
    std::vector<PackedBytes> packed;  // owns the matrices' packed copies
};

// Throws kite::Error naming the tensor for a missing tensor, a wrong shape or a type Kite
// cannot compute with.
ModelWeights bind_weights(const GgufFile& file, const ModelConfig& config);

// Repacks every matrix this CPU has a packed kernel for, and drops the file's pages of them
// from the resident set. Only for inference: shapes and sizes need no packing.
void pack_matrices(const GgufFile& file, ModelWeights& weights);

}  // namespace kite
