// `kite info`: what a model file holds, what its KV cache costs per token, and the memory a
// run of it is expected to hold at its peak.
#include <cstdio>
#include <map>
#include <memory>

#include <fmt/format.h>

#include "cli/commands.h"
#include "engine/engine.h"
#include "engine/memory_plan.h"
#include "gguf/gguf_file.h"
#include "kv/kv_cache.h"
#include "model/model_config.h"
#include "model/weights.h"

namespace kite::cli {

namespace {

// Bits per weight, as llama.cpp's BPW: data bytes over elements.
double bits_per_weight(uint64_t bytes, uint64_t elements) {
    return elements ? 8.0 * double(bytes) / double(elements) : 0;
}

std::string human_bytes(uint64_t n) {
    if (n >= (uint64_t{1} << 30)) return fmt::format("{:.2f} GiB", n / double(uint64_t{1} << 30));
    if (n >= (uint64_t{1} << 20)) return fmt::format("{:.2f} MiB", n / double(1 << 20));
    if (n >= 1024) return fmt::format("{:.1f} KiB", n / 1024.0);
    return fmt::format("{} B", n);
}

// A run's resident set at its peak: the weights once, packed (packing drops the file's pages of
// each range as it is packed; the token embedding is read in place), the activations a full step
// writes (one logits row, as kite run) and the KV cache as tokens are written, from its
// first token's huge pages.
void print_peak_resident(const GgufFile& file, const ModelConfig& c, const KvCacheShape& shape) {
    const EngineConfig defaults;
    const size_t weights = resident_weight_bytes(file, c);
    const size_t activations = run_state_bytes(c, defaults.max_batch_tokens, 1);
    const size_t full_kv =
        KvCache::bytes_per_token(shape, defaults.kv_type) * static_cast<size_t>(c.n_ctx_train);
    const size_t short_kv = KvCache::first_token_bytes(shape, defaults.kv_type, c.n_ctx_train);
    fmt::print(
        "peak resident:   {} for a short run, {} at the full context: weights {} (packed at "
        "load, never two copies), activations {} for a {}-token step, the {} KV cache as "
        "tokens are written (from {})\n",
        human_bytes(weights + activations + short_kv), human_bytes(weights + activations + full_kv),
        human_bytes(weights), human_bytes(activations), defaults.max_batch_tokens,
        kv_types_name(defaults.kv_type), human_bytes(short_kv));
}

void print_info(const std::string& path, bool show_metadata) {
    std::unique_ptr<GgufFile> file = GgufFile::open(path);
    ModelConfig c = read_model_config(*file);

    uint64_t n_params = 0, n_bytes = 0;
    struct TypeTotal {
        uint64_t tensors = 0, bytes = 0, elements = 0;
    };
    std::map<std::string, TypeTotal> by_type;
    for (const GgufTensor& t : file->tensors()) {
        n_params += t.n_elements;
        n_bytes += t.n_bytes;
        TypeTotal& tt = by_type[tensor_type_name(t.type_id)];
        tt.tensors++;
        tt.bytes += t.n_bytes;
        tt.elements += t.n_elements;
    }

    fmt::print("file:            {}\n", path);
    fmt::print("gguf version:    {} ({} tensors, {} metadata keys, {})\n", file->version(),
               file->tensors().size(), file->metadata().size(), human_bytes(file->file_size()));
    fmt::print("name:            {}\n", c.name.empty() ? "(none)" : c.name);
    fmt::print("architecture:    {}\n", c.architecture);
    fmt::print("parameters:      {} ({:.1f} M)\n", n_params, n_params / 1e6);
    fmt::print("layers:          {}\n", c.n_layers);
    fmt::print("width:           {} (feed-forward {})\n", c.n_embd, c.n_ff);
    fmt::print("heads:           {} query, {} key/value (group size {})\n", c.n_heads, c.n_kv_heads,
               c.n_heads / c.n_kv_heads);
    fmt::print("head dim:        {} (rope dims {}, base {})\n", c.head_dim, c.n_rot,
               c.rope_freq_base);
    fmt::print("context length:  {}\n", c.n_ctx_train);
    fmt::print("vocabulary:      {}\n", c.n_vocab);
    fmt::print("tensor types:    {} in {} tensors, {:.2f} bits per weight\n", human_bytes(n_bytes),
               file->tensors().size(), bits_per_weight(n_bytes, n_params));
    for (const auto& [name, tt] : by_type)
        fmt::print(
            "  {:<8} {:>4} tensors  {:>12} bytes ({}, {:.1f}% of the weights)  {:.2f} "
            "bits/weight\n",
            name, tt.tensors, tt.bytes, human_bytes(tt.bytes),
            100.0 * double(tt.elements) / double(n_params), bits_per_weight(tt.bytes, tt.elements));
    std::string tok_model(file->get_string("tokenizer.ggml.model").value_or("(none)"));
    std::string tok_pre(file->get_string("tokenizer.ggml.pre").value_or("default"));
    fmt::print("tokenizer:       {} (pre-tokenizer {})\n", tok_model, tok_pre);
    fmt::print("chat template:   {}\n",
               file->find("tokenizer.chat_template") ? "present" : "absent");
    fmt::print("KV cache/token:  M_kv = 2 * b * L * H_kv * d_h = 2 * b * {} * {} * {}\n",
               c.n_layers, c.n_kv_heads, c.head_dim);
    // Each KV type at its real bytes: the block formats' f16 scales included.
    const KvCacheShape shape{c.n_layers, c.n_kv_heads, c.head_dim};
    for (const KvTypeInfo& t : kv_types()) {
        if (c.head_dim % t.block_values != 0) {
            fmt::print("  {:<5} (needs a head dim that is a multiple of {})\n", t.name,
                       t.block_values);
            continue;
        }
        const size_t per_token = KvCache::bytes_per_token(shape, t.type);
        fmt::print("  {:<5} {:>8} bytes/token  (b = {:g}; {} for the full {}-token context)\n",
                   t.name, per_token, kv_bytes_per_element(t.type),
                   human_bytes(per_token * static_cast<size_t>(c.n_ctx_train)), c.n_ctx_train);
    }
    print_peak_resident(*file, c, shape);
    if (show_metadata) {
        fmt::print("metadata:\n");
        for (const auto& [key, value] : file->metadata()) {
            std::string text = file->describe(value);
            if (text.size() > 120) text = text.substr(0, 117) + "...";
            for (char& ch : text)
                if (ch == '\n') ch = ' ';
            fmt::print("  {} = {}\n", key, text);
        }
    }
}

}  // namespace

void add_info_command(CLI::App& app) {
    auto* cmd = app.add_subcommand("info", "Describe a model file: shape, tensor types, KV cost");
    auto model = std::make_shared<std::string>();
    auto metadata = std::make_shared<bool>(false);
    cmd->add_option("-m,--model", *model, "GGUF model file (default: the installed default model)");
    cmd->add_flag("--metadata", *metadata, "Also list every metadata key");
    cmd->callback([model, metadata] { print_info(resolve_model_path(*model), *metadata); });
}

}  // namespace kite::cli
