#include "cli/engine_options.h"

#include <algorithm>
#include <cctype>
#include <random>

#include "cli/commands.h"
#include "cli/flag_checks.h"
#include "core/error.h"
#include "engine/draft_vocabulary.h"
#include "engine/memory_plan.h"

namespace kite::cli {

void EngineOptions::add_to(CLI::App& cmd) {
    cmd.add_option("-m,--model", model, "GGUF model file (default: the installed default model)");
    cmd.add_option("-t,--threads", threads, "Threads (default: physical cores)")
        ->check(CLI::Range(0, 1024));
    cmd.add_option("-c,--ctx-size", context, "Context length in tokens (default: the model's)")
        ->check(CLI::Range(int64_t{0}, int64_t{1} << 24));
    kv_type.add_to(cmd);
    cmd.add_option("--kv-mem", kv_mem,
                   "KV-cache memory budget, e.g. 256M (default: from the context)")
        ->check(size_value());
    cmd.add_option("--max-batch-tokens", max_batch_tokens, "Tokens per forward pass")
        ->check(CLI::Range(int64_t{1}, int64_t{65536}))
        ->capture_default_str();
    cmd.add_option("--kv-window", kv_window,
                   "Keep the last W tokens (and the --kv-sinks first ones) in the KV cache and "
                   "run on past the context (StreamingLLM); 0: off")
        ->check(CLI::Range(int64_t{0}, int64_t{1} << 24));
    cmd.add_option("--kv-sinks", kv_sinks,
                   "Attention sinks: first tokens kept with --kv-window (default 4)")
        ->check(CLI::Range(int64_t{0}, int64_t{1} << 24));
}

KvWindow EngineOptions::window() const {
    const int64_t w = kv_window.value_or(0), s = kv_sinks.value_or(w > 0 ? kDefaultSinks : 0);
    if (w == 0 && s > 0) fail("--kv-sinks {} needs --kv-window", s);
    if (w > 0 && w < s) fail("--kv-window {} is smaller than --kv-sinks {}", w, s);
    return {w, s};
}

void EngineOptions::check_window(const Engine& engine, const KvWindow& window) const {
    check_window(window, engine.context_length(), engine.kv_capacity_tokens(),
                 engine.kv_cache().block_size());
}

void EngineOptions::check_window(const KvWindow& window, int64_t context_length,
                                 int64_t capacity_tokens, int64_t block_size) const {
    try {
        Engine::check_window(window, context_length, capacity_tokens, block_size);
    } catch (const Error& e) {
        fail("--kv-window {} --kv-sinks {}: {}{}", window.window, window.sinks, e.what(),
             kv_mem.empty() ? "" : fmt::format(" (--kv-mem {})", kv_mem));
    }
}

void EngineOptions::check_kv_budget(const ModelConfig& model, int64_t tokens,
                                    const std::string& whose) const {
    if (kv_mem.empty()) return;
    const EngineConfig c = engine_config(model, 1);
    const KvCacheShape shape{model.n_layers, model.n_kv_heads, model.head_dim};
    const int64_t holds =
        KvCache::blocks_for_budget(shape, c.kv_type, c.block_size, c.kv_bytes) * c.block_size;
    if (tokens > holds)
        fail("--kv-mem {} holds {} tokens of KV cache, fewer than the {} {}", kv_mem, holds, tokens,
             whose);
}

EngineConfig EngineOptions::engine_config(const ModelConfig& model, int64_t max_sequences) const {
    EngineConfig c;
    c.threads = threads;
    c.context_length = context;
    c.max_sequences = max_sequences;
    c.kv_type = kv_type.types();
    c.kv_bytes = kv_mem.empty() ? 0 : parse_bytes(kv_mem);
    c.max_batch_tokens = max_batch_tokens;
    const KvCacheShape shape{model.n_layers, model.n_kv_heads, model.head_dim};
    const size_t block = KvCache::block_bytes(shape, c.kv_type, c.block_size);
    if (c.kv_bytes > 0 && c.kv_bytes < block)
        fail("--kv-mem {} holds no sequence: one KV block ({} tokens) takes {} bytes in {}", kv_mem,
             c.block_size, block, kv_types_name(c.kv_type));
    return c;
}

EngineConfig EngineOptions::serve_config(const ModelConfig& model, int64_t max_sequences) const {
    constexpr size_t kDefaultKvCap = size_t{1} << 30;
    EngineConfig c = engine_config(model, max_sequences);
    if (c.kv_bytes == 0) {
        const size_t per_seq = sequence_kv_bytes(model, c, window());
        c.kv_bytes = std::min(per_seq * static_cast<size_t>(max_sequences), kDefaultKvCap);
    }
    return c;
}

void SpeculationOptions::add_to(CLI::App& cmd) {
    cmd.add_option("--spec", drafter,
                   "Speculative decoding drafter: none; ngram (prompt lookup: guesses that "
                   "text repeats its context); draft (a smaller model, --draft-model). The "
                   "output is unchanged")
        ->check(CLI::IsMember({"none", "ngram", "draft"}))
        ->capture_default_str();
    cmd.add_option("--draft-max", draft_max,
                   fmt::format("Most tokens drafted per step, adaptive below it (default: {} "
                               "for ngram, {} for a draft model)",
                               default_draft_max(DrafterKind::Ngram),
                               default_draft_max(DrafterKind::Model)))
        ->check(CLI::Range(int64_t{1}, SpeculationConfig::kMaxDraft));
    cmd.add_flag("--draft-fixed", draft_fixed,
                 "Always draft --draft-max tokens (by default the length adapts to how many "
                 "guesses are accepted and to what a longer verify pass costs here)");
    cmd.add_option("--draft-model", draft_model,
                   "Draft model (path or name, as -m) with the model's vocabulary: implies "
                   "--spec draft");
    cmd.add_option("--draft-p-min", draft_p_min,
                   "Draft model: end a draft with the first guess it gives less than this "
                   "probability (0: always draft K)")
        ->check(CLI::Range(0.0f, 1.0f))
        ->capture_default_str();
    cmd.add_option("--draft-vocab", draft_vocab,
                   "Draft model: guess only among the first N token ids, the most frequent "
                   "(its LM head then reads N rows; the output is unchanged); 0: all")
        ->check(CLI::NonNegativeNumber)
        ->capture_default_str();
    cmd.add_option("--draft-weights", draft_weights,
                   "Draft model: q4_0 converts its larger matrices to Q4_0 at load (drafting "
                   "reads fewer bytes; the output is unchanged); file keeps the file's types")
        ->check(CLI::IsMember({"q4_0", "file"}))
        ->capture_default_str();
}

SpeculationConfig SpeculationOptions::flags() const {
    SpeculationConfig c;
    c.drafter = draft_model.empty() ? parse_drafter_kind(drafter) : DrafterKind::Model;
    c.draft_max = draft_max > 0 ? draft_max : default_draft_max(c.drafter);
    c.adaptive_length = !draft_fixed;
    c.draft_p_min = draft_p_min;
    c.draft_vocab = draft_vocab;
    if (!draft_model.empty() && drafter != "none" && drafter != "draft")
        fail("--draft-model drafts with a model; it cannot be combined with --spec {}", drafter);
    if (c.drafter == DrafterKind::Model && draft_model.empty())
        fail("--spec draft needs a draft model: give --draft-model M");
    return c;
}

SpeculationConfig SpeculationOptions::config(const Model& target,
                                             std::unique_ptr<Model>& draft) const {
    SpeculationConfig c = flags();
    if (c.drafter == DrafterKind::Model) {
        try {
            draft = Model::load(
                resolve_model_path(draft_model),
                draft_weights == "q4_0" ? std::optional(TensorType::Q4_0) : std::nullopt);
        } catch (const Error& e) {
            fail("cannot load the draft model: {}", e.what());
        }
        check_same_vocabulary(target.file(), target.config().n_vocab, draft->file(),
                              draft->config().n_vocab);
        c.draft_model = draft.get();
    }
    c.validate();
    return c;
}

std::string speculation_summary(const SpeculationOptions& o) {
    const int64_t k = o.flags().draft_max;
    const std::string length = fmt::format("K {} {}", o.draft_fixed ? "=" : "<=", k);
    if (!o.draft_model.empty()) return fmt::format("draft model {}, {}", o.draft_model, length);
    if (o.drafter == "none") return "off";
    return fmt::format("{}, {}", o.drafter, length);
}

void SamplingOptions::add_to(CLI::App& cmd, int64_t default_max_tokens) {
    GenerationParams& p = params;
    SamplingParams& s = p.sampling;
    p.max_tokens = default_max_tokens;
    s.temperature = 0.8f, s.top_k = 40, s.top_p = 0.95f, s.min_p = 0.05f;
    cmd.add_option("-n,--n-predict", p.max_tokens, "Tokens to generate, at most")
        ->capture_default_str();
    cmd.add_option("--temp", s.temperature, "Temperature; 0 = greedy")
        ->check(finite_number())
        ->capture_default_str();
    cmd.add_option("--top-k", s.top_k, "Keep the k most likely tokens; 0 = off")
        ->capture_default_str();
    cmd.add_option("--top-p", s.top_p, "Nucleus sampling threshold; 1 = off")
        ->check(finite_number())
        ->capture_default_str();
    cmd.add_option("--min-p", s.min_p, "Drop tokens below min-p * p(best); 0 = off")
        ->check(finite_number())
        ->capture_default_str();
    cmd.add_option("--repeat-penalty", s.repetition_penalty, "Repetition penalty; 1 = off")
        ->check(finite_number())
        ->capture_default_str();
    cmd.add_option("--presence-penalty", s.presence_penalty, "Presence penalty; 0 = off")
        ->check(finite_number());
    cmd.add_option("--frequency-penalty", s.frequency_penalty, "Frequency penalty; 0 = off")
        ->check(finite_number());
    cmd.add_option("--repeat-last-n", s.penalty_last_n,
                   "Tokens the penalties look back on; 0 = none, -1 = all")
        ->capture_default_str();
    cmd.add_option("--dry-multiplier", s.dry_multiplier,
                   "DRY: penalty on tokens that continue a repeat; 0 = off")
        ->check(finite_number())
        ->capture_default_str();
    cmd.add_option("--dry-base", s.dry_base, "DRY: the penalty's growth per repeated token")
        ->check(finite_number())
        ->capture_default_str();
    cmd.add_option("--dry-allowed-length", s.dry_allowed_length,
                   "DRY: repeats this long go unpenalised")
        ->capture_default_str();
    cmd.add_option("--dry-penalty-last-n", s.dry_penalty_last_n,
                   "DRY: tokens looked back on; 0 = none, -1 = all")
        ->capture_default_str();
    cmd.add_option(
        "--dry-sequence-breaker", s.dry_sequence_breakers,
        "DRY: a string that ends a repeat (repeatable; replaces the defaults \\n : \" *)");
    cmd.add_option("--seed", s.seed, "Random seed (default: random)")
        ->check(seed_value())
        ->each([this](const std::string&) { seed_given = true; });
    cmd.add_option("--stop", p.stop, "Stop before this text (repeatable)");
    cmd.add_flag("--ignore-eos", p.ignore_eos, "Keep generating past end-of-text tokens");
}

GenerationParams SamplingOptions::resolve() const {
    GenerationParams p = params;
    if (!seed_given) p.sampling.seed = std::random_device{}();
    return p;
}

LoadedModel load_model(const std::string& model_flag, bool encoder_ok) {
    LoadedModel m;
    const std::string path = resolve_model_path(model_flag);
    m.model = Model::load(path);
    if (m.model->can_embed() && !encoder_ok)
        fail("'{}' is an embedding model ({}); it cannot generate text (use kite embed)", path,
             m.model->config().architecture);
    m.tokenizer = Tokenizer::from_gguf(m.model->file());
    return m;
}

size_t parse_bytes(const std::string& text) {
    size_t end = 0;
    double value = 0;
    try {
        value = std::stod(text, &end);
    } catch (const std::exception&) {
        fail("'{}' is not a size (expected e.g. 512M or 2G)", text);
    }
    std::string unit = text.substr(end);
    for (char& c : unit) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    double scale = 1;
    if (unit == "K" || unit == "KB" || unit == "KIB")
        scale = 1024.0;
    else if (unit == "M" || unit == "MB" || unit == "MIB")
        scale = 1024.0 * 1024;
    else if (unit == "G" || unit == "GB" || unit == "GIB")
        scale = 1024.0 * 1024 * 1024;
    else if (!unit.empty())
        fail("'{}' is not a size (expected e.g. 512M or 2G)", text);
    if (value <= 0 || value * scale > 1e15) fail("size '{}' is out of range", text);
    return static_cast<size_t>(value * scale);
}

}  // namespace kite::cli
