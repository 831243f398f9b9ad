// Flags shared by the commands that run a model (run, chat, perplexity): model, threads,
// context and KV cache, and sampling.
#pragma once

#include <memory>
#include <optional>
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
    std::optional<int64_t> kv_window;  // --kv-window; unset: off (kite chat: on when full)
    std::optional<int64_t> kv_sinks;   // --kv-sinks; unset: kDefaultSinks

    // StreamingLLM's 4, which its paper found enough.
    static constexpr int64_t kDefaultSinks = 4;

    void add_to(CLI::App& cmd);
    // The KV window of --kv-window and --kv-sinks (off without --kv-window, or with 0).
    // Throws kite::Error for --kv-sinks without a window or a window smaller than its sinks.
    KvWindow window() const;
    // Throws kite::Error, naming --kv-mem, for a budget that holds no KV block of `model`.
    EngineConfig engine_config(const ModelConfig& model, int64_t max_sequences) const;
    // What `kite serve` runs with: without --kv-mem, room for max_sequences sequences (full
    // contexts, or with --kv-window the most a windowed sequence holds) but at most 1 GiB of
    // KV cache. `kite plan` sizes the same configuration. Throws kite::Error for bad window
    // flags, as window() does.
    EngineConfig serve_config(const ModelConfig& model, int64_t max_sequences) const;

    // Engine::check_window with the flags named: "--kv-window W --kv-sinks S: ..." (and
    // --kv-mem when it sized the cache).
    void check_window(const Engine& engine, const KvWindow& window) const;
    // The same for the cache a plan sizes (Engine::check_window's static form).
    void check_window(const KvWindow& window, int64_t context_length, int64_t capacity_tokens,
                      int64_t block_size) const;
    // Throws kite::Error naming --kv-mem when its budget holds fewer than `tokens` tokens of
    // `model`'s KV cache (whole blocks); `whose` ends the line: "the 129 <whose>".
    void check_kv_budget(const ModelConfig& model, int64_t tokens, const std::string& whose) const;
};

// Speculative decoding: --spec DRAFTER, --draft-max K, --draft-model M, --draft-p-min P,
// --draft-vocab N and --draft-weights.
struct SpeculationOptions {
    std::string drafter = "none";
    int64_t draft_max = 0;     // 0: the drafter's default_draft_max
    bool draft_fixed = false;  // every draft draft_max long, not adapted
    std::string draft_model;   // implies --spec draft
    float draft_p_min = SpeculationConfig::kDefaultDraftPMin;
    int64_t draft_vocab = SpeculationConfig::kDefaultDraftVocab;
    // q4_0: the draft model's matrices of larger types become Q4_0 at load. A draft pass of
    // Qwen2.5-Coder-0.5B (Q5_0 and a Q8_0 LM head) then reads 27% fewer bytes; its guesses
    // change little (bench/RESULTS.md), and the output is the target's either way.
    std::string draft_weights = "q4_0";

    void add_to(CLI::App& cmd);
    // The flags' configuration without the draft model (`kite plan` reads only its file).
    // Throws kite::Error for --spec draft without --draft-model, or --draft-model with
    // another --spec.
    SpeculationConfig flags() const;
    // The configuration; loads the draft model into `draft` when there is one (it must
    // outlive the engine) and checks that it can draft for `target`, so a bad one stops
    // the command before it prints anything. Throws kite::Error.
    SpeculationConfig config(const Model& target, std::unique_ptr<Model>& draft) const;
};

// "off", "ngram, K <= 4" or "draft model M, K <= 4", for start-up lines.
std::string speculation_summary(const SpeculationOptions& o);

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
// `encoder_ok`: an embedding model is wanted too (kite embed, kite serve); else it is an error.
LoadedModel load_model(const std::string& model_flag, bool encoder_ok = false);

// "512M", "2G", "1000000" -> bytes; throws kite::Error.
size_t parse_bytes(const std::string& text);

}  // namespace kite::cli
