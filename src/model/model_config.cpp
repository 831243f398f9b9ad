#include "model/model_config.h"

#include <array>

#include "core/error.h"

namespace kite {

namespace {

// Architectures whose GGUF layout is the llama one: same tensors, keys under "<arch>.".
constexpr std::array<std::string_view, 1> kLlamaFamily{"llama"};

int64_t required_int(const GgufFile& f, const std::string& key) {
    std::optional<int64_t> v = f.get_int(key);
    if (!v) fail("'{}': metadata '{}' is missing", f.name(), key);
    if (*v <= 0 || *v > (int64_t{1} << 31))
        fail("'{}': metadata '{}' = {} is out of range", f.name(), key, *v);
    return *v;
}

}  // namespace

ModelConfig read_model_config(const GgufFile& f) {
    ModelConfig c;
    std::optional<std::string_view> arch = f.get_string("general.architecture");
    if (!arch) fail("'{}': metadata 'general.architecture' is missing", f.name());
    c.architecture = *arch;
    bool known = false;
    for (std::string_view a : kLlamaFamily) known |= a == c.architecture;
    if (!known)
        fail("'{}': unknown architecture '{}' (supported: llama)", f.name(), c.architecture);
    c.name = f.get_string("general.name").value_or("");

    const std::string p = c.architecture + ".";
    c.n_layers = required_int(f, p + "block_count");
    c.n_embd = required_int(f, p + "embedding_length");
    c.n_ff = required_int(f, p + "feed_forward_length");
    c.n_heads = required_int(f, p + "attention.head_count");
    c.n_kv_heads = f.get_int(p + "attention.head_count_kv")
                       ? required_int(f, p + "attention.head_count_kv")
                       : c.n_heads;
    c.n_ctx_train = required_int(f, p + "context_length");
    if (c.n_embd % c.n_heads != 0 || c.n_heads % c.n_kv_heads != 0)
        fail("'{}': {} heads and {} key/value heads do not divide the width {}", f.name(),
             c.n_heads, c.n_kv_heads, c.n_embd);
    c.head_dim = f.get_int(p + "attention.key_length") ? required_int(f, p + "attention.key_length")
                                                       : c.n_embd / c.n_heads;
    c.n_rot = f.get_int(p + "rope.dimension_count") ? required_int(f, p + "rope.dimension_count")
                                                    : c.head_dim;
    c.rope_freq_base = f.get_float(p + "rope.freq_base").value_or(10000.0);
    c.rms_norm_eps = f.get_float(p + "attention.layer_norm_rms_epsilon").value_or(1e-5);
    if (auto tokens = f.find("tokenizer.ggml.tokens"))
        c.n_vocab = static_cast<int64_t>(tokens->count);
    if (auto v = f.get_int(p + "vocab_size")) c.n_vocab = *v;
    return c;
}

}  // namespace kite
