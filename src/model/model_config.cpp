#include "model/model_config.h"

#include <cmath>
#include <numbers>

#include "core/error.h"

namespace kite {

namespace {

int64_t positive_int(const GgufFile& f, const std::string& key, int64_t value) {
    if (value <= 0 || value > (int64_t{1} << 31))
        fail("'{}': metadata '{}' = {} is out of range", f.name(), key, value);
    return value;
}

int64_t required_int(const GgufFile& f, const std::string& key) {
    std::optional<int64_t> v = f.get_int(key);
    if (!v) fail("'{}': metadata '{}' is missing", f.name(), key);
    return positive_int(f, key, *v);
}

// The largest models have a few hundred layers; a hostile count must not size the per-layer
// table (gigabytes for 2^31 layers) before the tensors are looked at.
constexpr int64_t kMaxLayers = 4096;

int64_t optional_int(const GgufFile& f, const std::string& key, int64_t fallback) {
    std::optional<int64_t> v = f.get_int(key);
    return v ? positive_int(f, key, *v) : fallback;
}

// A float key that must be finite and within (0, max] when present.
double optional_float(const GgufFile& f, const std::string& key, double fallback, double max) {
    std::optional<double> v = f.get_float(key);
    if (!v) return fallback;
    if (!std::isfinite(*v) || *v <= 0 || *v > max)
        fail("'{}': metadata '{}' = {} is out of range", f.name(), key, *v);
    return *v;
}

// The RoPE of the layers without a sliding window, with <arch>.rope.scaling.* applied the
// way llama.cpp applies it.
RopeParams global_rope(const GgufFile& f, const std::string& p, const ModelConfig& c) {
    RopeParams r{.style = c.arch->rope_style,
                 .n_rot = c.n_rot,
                 .freq_base = static_cast<float>(c.rope_freq_base)};
    const std::string type_key = p + "rope.scaling.type";
    const std::string type{f.get_string(type_key).value_or("linear")};
    if (type != "none" && type != "linear" && type != "yarn" && type != "longrope")
        fail(
            "'{}': metadata '{}' = '{}' is not a RoPE scaling Kite knows (none, linear, yarn, "
            "longrope)",
            f.name(), type_key, type);
    const float factor = static_cast<float>(optional_float(
        f, p + "rope.scaling.factor", optional_float(f, p + "rope.scale_linear", 1.0, 1e6), 1e6));
    const float attn_factor =
        static_cast<float>(optional_float(f, p + "rope.scaling.attn_factor", 1.0, 1e3));
    r.freq_scale = type == "none" ? 1.0f : 1.0f / factor;
    r.attn_factor = attn_factor;
    if (type == "yarn") {
        const double n_ctx_orig = static_cast<double>(
            optional_int(f, p + "rope.scaling.original_context_length", c.n_ctx_train));
        // Pair index whose wavelength turns `rotations` times over the original context.
        auto corr_dim = [&](double rotations) {
            return static_cast<double>(c.n_rot) *
                   std::log(n_ctx_orig / (rotations * 2 * std::numbers::pi)) /
                   (2 * std::log(c.rope_freq_base));
        };
        constexpr double kBetaFast = 32, kBetaSlow = 1;  // llama.cpp's defaults
        r.ext_factor = 1.0f;
        r.corr_low = static_cast<float>(std::max(0.0, std::floor(corr_dim(kBetaFast))));
        r.corr_high = static_cast<float>(
            std::min(static_cast<double>(c.n_rot - 1), std::ceil(corr_dim(kBetaSlow))));
        // rope_angles multiplies by 1 + 0.1 ln(factor); the magnitude YaRN wants is
        // attn_factor times that for factor > 1, and attn_factor alone otherwise.
        const float wanted = factor > 1.0f ? 1.0f + 0.1f * std::log(factor) : 1.0f;
        r.attn_factor = attn_factor * wanted / (1.0f + 0.1f * std::log(factor));
    }
    return r;
}

// Which layers use the sliding window, and their RoPE.
void read_layer_attention(const GgufFile& f, const std::string& p, ModelConfig& c) {
    const RopeParams global = global_rope(f, p, c);
    const std::string window_key = p + "attention.sliding_window";
    if (c.arch->swa_pattern > 0 && f.get_int(window_key))
        c.sliding_window = optional_int(f, window_key, 0);
    const int64_t period =
        optional_int(f, p + "attention.sliding_window_pattern", c.arch->swa_pattern);
    RopeParams local = global;
    local.freq_base =
        static_cast<float>(optional_float(f, p + "rope.freq_base_swa", 10000.0, 1e12));
    local.freq_scale = 1.0f, local.ext_factor = 0.0f, local.attn_factor = 1.0f;
    for (int64_t l = 0; l < c.n_layers; ++l) {
        const bool windowed = c.sliding_window > 0 && l % period < period - 1;
        c.layers.push_back(windowed ? LayerAttention{c.sliding_window, local}
                                    : LayerAttention{0, global});
    }
}

// The encoder's keys; a decoder has no pooling (it cannot embed).
void read_encoder(const GgufFile& f, const std::string& p, ModelConfig& c) {
    if (!c.arch->encoder) return;
    c.layer_norm_eps = optional_float(f, p + "attention.layer_norm_epsilon", 1e-12, 1.0);
    c.n_token_types = optional_int(f, "tokenizer.ggml.token_type_count", 2);
    const std::string key = p + "pooling_type";
    const int64_t pooling = f.get_int(key).value_or(int64_t(Pooling::Mean));
    if (pooling < int64_t(Pooling::Mean) || pooling > int64_t(Pooling::Last))
        fail("'{}': metadata '{}' = {} is not a pooling Kite knows (1 mean, 2 CLS, 3 last)",
             f.name(), key, pooling);
    c.pooling = static_cast<Pooling>(pooling);
    if (f.get_bool(p + "attention.causal").value_or(false))
        fail("'{}': metadata '{}attention.causal' is set; Kite's encoders attend both ways",
             f.name(), p);
}

}  // namespace

ModelConfig read_model_config(const GgufFile& f) {
    ModelConfig c;
    std::optional<std::string_view> arch = f.get_string("general.architecture");
    if (!arch) fail("'{}': metadata 'general.architecture' is missing", f.name());
    c.architecture = *arch;
    c.arch = find_architecture(c.architecture);
    if (!c.arch)
        fail("'{}': unknown architecture '{}' (supported: {})", f.name(), c.architecture,
             architecture_names());
    c.name = f.get_string("general.name").value_or("");

    const std::string p = c.architecture + ".";
    c.n_layers = required_int(f, p + "block_count");
    if (c.n_layers > kMaxLayers)
        fail("'{}': metadata '{}block_count' = {} is more layers than any model has (at most {})",
             f.name(), p, c.n_layers, kMaxLayers);
    c.n_embd = required_int(f, p + "embedding_length");
    c.n_ff = required_int(f, p + "feed_forward_length");
    c.n_heads = required_int(f, p + "attention.head_count");
    c.n_kv_heads = optional_int(f, p + "attention.head_count_kv", c.n_heads);
    c.n_ctx_train = required_int(f, p + "context_length");
    if (c.n_heads % c.n_kv_heads != 0)
        fail(
            "'{}': metadata '{}attention.head_count' = {} is not a multiple of "
            "'{}attention.head_count_kv' = {}",
            f.name(), p, c.n_heads, p, c.n_kv_heads);
    if (!f.get_int(p + "attention.key_length") && c.n_embd % c.n_heads != 0)
        fail("'{}': metadata '{}attention.head_count' = {} does not divide the width {}", f.name(),
             p, c.n_heads, c.n_embd);
    c.head_dim = optional_int(f, p + "attention.key_length", c.n_embd / c.n_heads);
    if (optional_int(f, p + "attention.value_length", c.head_dim) != c.head_dim)
        fail("'{}': metadata '{}attention.value_length' differs from the key length {}", f.name(),
             p, c.head_dim);
    c.n_rot = optional_int(f, p + "rope.dimension_count", c.head_dim);
    if (c.n_rot > c.head_dim || c.n_rot % 2 != 0)
        fail(
            "'{}': metadata '{}rope.dimension_count' = {} must be even and at most the head "
            "dimension {}",
            f.name(), p, c.n_rot, c.head_dim);
    c.rope_freq_base = optional_float(f, p + "rope.freq_base", 10000.0, 1e12);
    c.rms_norm_eps = optional_float(f, p + "attention.layer_norm_rms_epsilon", 1e-5, 1.0);
    c.attention_scale = optional_float(f, p + "attention.scale",
                                       1.0 / std::sqrt(static_cast<double>(c.head_dim)), 1e3);
    if (auto tokens = f.find("tokenizer.ggml.tokens"))
        c.n_vocab = static_cast<int64_t>(tokens->count);
    c.n_vocab = optional_int(f, p + "vocab_size", c.n_vocab);
    read_layer_attention(f, p, c);
    read_encoder(f, p, c);
    return c;
}

}  // namespace kite
