#include "quant/quant_mix.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <numeric>

namespace kite {

namespace {

using T = TensorType;

// LLAMA_FTYPE_MOSTLY_Q4_K_M = 15, Q5_K_M = 17, Q6_K = 18.
constexpr QuantMix kMixes[] = {
    {"Q4_K_M", T::Q4_K, 15, true, T::Q5_K},
    {"Q5_K_M", T::Q5_K, 17, true, T::Q6_K},
    {"Q6_K", T::Q6_K, 18, false, T::Q6_K},
};

bool contains(std::string_view s, std::string_view part) {
    return s.find(part) != std::string_view::npos;
}

// output.weight (or a token_embd that doubles as it) keeps 6 bits, or 8 where its rows do not
// fill the mix's super-blocks.
TensorType output_type(const QuantMix& mix, uint64_t row_width) {
    const uint64_t block = tensor_type_info(static_cast<uint32_t>(mix.base))->block_size;
    return row_width % block != 0 ? T::Q8_0 : T::Q6_K;
}

// "blk.12.attn_v.weight" -> 12; -1 for a tensor outside the layers.
int layer_of(std::string_view name) {
    constexpr std::string_view prefix = "blk.";
    if (name.substr(0, prefix.size()) != prefix) return -1;
    int layer = -1;
    const char* begin = name.data() + prefix.size();
    std::from_chars(begin, name.data() + name.size(), layer);
    return layer;
}

// llama-quantize visits tensors in this order (its loader's map of names), and its per-layer
// rules count tensors as they are visited.
bool llama_visit_order(std::string_view a, std::string_view b) {
    const int la = layer_of(a), lb = layer_of(b);
    if (la >= 0 && lb >= 0 && la != lb) return la < lb;
    return a < b;
}

bool is_attn_v(std::string_view name) {
    return contains(name, "attn_v.weight");
}

bool is_ffn_down(std::string_view name) {
    return contains(name, "ffn_down");
}

}  // namespace

std::span<const QuantMix> quant_mixes() {
    return kMixes;
}

const QuantMix* find_quant_mix(std::string_view name) {
    std::string upper(name);
    for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    for (const QuantMix& m : kMixes)
        if (upper == m.name) return &m;
    return nullptr;
}

std::string quant_mix_names() {
    std::string s;
    for (const QuantMix& m : kMixes) s += (s.empty() ? "" : ", ") + std::string(m.name);
    return s;
}

bool uses_more_bits(int layer, int n_layers) {
    return layer < n_layers / 8 || layer >= 7 * n_layers / 8 || (layer - n_layers / 8) % 3 == 2;
}

void count_mix_positions(std::vector<MixTensor>& tensors, int n_layers) {
    std::vector<size_t> order(tensors.size());
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        return llama_visit_order(tensors[a].name, tensors[b].name);
    });
    int n_attn_v = 0;
    for (const MixTensor& t : tensors)
        n_attn_v += is_attn_v(t.name) || contains(t.name, "attn_qkv.weight") ||
                    contains(t.name, "attn_kv_b.weight");
    int i_attn_v = 0, i_ffn_down = 0;
    for (size_t i : order) {
        MixTensor& t = tensors[i];
        if (is_attn_v(t.name)) {
            t.index = i_attn_v++;
            t.count = n_attn_v;
        } else if (is_ffn_down(t.name)) {
            t.index = i_ffn_down++;
            t.count = n_layers;
        }
    }
}

TensorType mix_tensor_type(const QuantMix& mix, const MixTensor& t) {
    const bool is_output =
        t.name == "output.weight" || (!t.model_has_output && t.name == "token_embd.weight");
    if (is_output) return output_type(mix, t.row_width);
    const bool more_bits = mix.more_bits && uses_more_bits(t.index, t.count);
    if (is_attn_v(t.name) || is_ffn_down(t.name)) return more_bits ? T::Q6_K : mix.base;
    if (contains(t.name, "attn_qkv.weight")) return mix.fused_qkv;
    return mix.base;
}

}  // namespace kite
