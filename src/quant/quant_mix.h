// The weight-type mixes of llama-quantize's file types Q4_K_M, Q5_K_M and Q6_K (without an
// importance matrix): which type each tensor gets, by its name, its row width and its layer.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gguf/tensor_type.h"

namespace kite {

struct QuantMix {
    const char* name;          // "Q4_K_M", as llama-quantize names the file type
    TensorType base;           // the type of every tensor no rule below names
    uint32_t llama_file_type;  // LLAMA_FTYPE_MOSTLY_*, stored as general.file_type
    // The _M mixes: attn_v and ffn_down in the layers uses_more_bits() picks become Q6_K, and
    // a fused attn_qkv one type up (Q4_K_M: Q5_K, Q5_K_M: Q6_K).
    bool more_bits;
    TensorType fused_qkv;
};

std::span<const QuantMix> quant_mixes();

// nullptr for a name (any case) that is not a mix.
const QuantMix* find_quant_mix(std::string_view name);

// "Q4_K_M, Q5_K_M, Q6_K", for messages.
std::string quant_mix_names();

// llama-quantize's choice of layers that keep more bits: the first and last eighth, and every
// third layer in between.
bool uses_more_bits(int layer, int n_layers);

// What the rules need to know about one tensor. llama-quantize counts attn_v and ffn_down
// tensors in its order of names (by layer number, then by name): `index` is this tensor's
// place among those of its kind and `count` how many there are (for ffn_down: the model's
// layer count).
struct MixTensor {
    std::string_view name;
    uint64_t row_width = 0;  // dims[0]
    int index = 0, count = 0;
    // false where the model has no output.weight: token_embd is then also the output matrix
    // and takes output.weight's rule.
    bool model_has_output = true;
};

// Fills in index and count of each tensor llama-quantize will quantize (in any order),
// counting as it does: attn_v tensors in its order of names (by layer number, then by name),
// out of all attn_v and fused attn_qkv/attn_kv_b tensors; ffn_down tensors likewise, out of
// `n_layers`.
void count_mix_positions(std::vector<MixTensor>& tensors, int n_layers);

// The type llama-quantize picks for a tensor it quantizes (a "*.weight" of two or more
// dimensions), before its fallback for rows that do not fill the type's blocks (which
// quantize_file applies to every type alike).
TensorType mix_tensor_type(const QuantMix& mix, const MixTensor& tensor);

}  // namespace kite
