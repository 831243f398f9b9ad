// Flags shared by the commands that run a model (run, chat, perplexity): model, threads,
// context and KV cache, and sampling.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/kv_type_option.h"
#include "engine/engine.h"
#include "engine/generation_params.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

namespace kite::cli {

struct EngineOptions {
    std::string model;
    int threads = 0;
    int64_t context = 0;
    KvTypeOptions kv_type;
    std::string kv_mem;  // e.g. "512M"; empty: sized from the context
    int64_t max_batch_tokens = 512;

    void add_to(CLI::App& cmd);
    EngineConfig engine_config(int64_t max_sequences) const;
    // What `kite serve` runs with: without --kv-mem, room for max_sequences full contexts but
    // at most 1 GiB of KV cache. `kite plan` sizes the same configuration.
    EngineConfig serve_config(const ModelConfig& model, int64_t max_sequences) const;
};

// Speculative decoding: --spec DRAFTER and --draft-max K.
struct SpeculationOptions {
    std::string drafter = "none";
    int64_t draft_max = SpeculationConfig{}.draft_max;

    void add_to(CLI::App& cmd);
    SpeculationConfig config() const;
};

struct SamplingOptions {
    GenerationParams params;
    bool seed_given = false;

    void add_to(CLI::App& cmd, int64_t default_max_tokens);
    // Fills a random seed unless --seed was given.
    GenerationParams resolve() const;
};

// A loaded model and its tokenizer.
struct LoadedModel {
    std::unique_ptr<Model> model;
    std::unique_ptr<Tokenizer> tokenizer;
};
LoadedModel load_model(const std::string& model_flag);

// "512M", "2G", "1000000" -> bytes; throws kite::Error.
size_t parse_bytes(const std::string& text);

}  // namespace kite::cli
