// `kite plan`: how many sequences of a context fit in a memory budget, or the memory for B
// of them, from the weights' resident size (the mapped file), the run state of one forward
// pass and M_kv = 2 * b * B * L * H_kv * s * d_h in the KV type's real bytes. With a KV window
// a sequence holds at most its window's peak blocks however long it runs, so s is that, not
// the context; with a draft model its file, cache and run state count too. The arithmetic
// is engine/memory_plan.h's, on the configuration `kite serve` builds from the same flags,
// so the numbers are what serve allocates.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/engine_options.h"
#include "cli/flag_checks.h"
#include "core/error.h"
#include "engine/draft_vocabulary.h"
#include "engine/memory_plan.h"
#include "gguf/gguf_file.h"
#include "model/model_config.h"
#include "model/weights.h"

namespace kite::cli {

namespace {

struct PlanOptions {
    EngineOptions engine;
    SpeculationOptions spec;
    std::string budget;  // --mem: how many sequences fit in it
    int64_t max_seqs = 16;
};

// A model's file and configuration, read without loading its weights, and the bytes they
// will hold loaded.
struct ModelFile {
    std::string path;
    std::unique_ptr<GgufFile> file;
    ModelConfig config;
    size_t weight_bytes = 0;
};

ModelFile open_model(const std::string& flag) {
    ModelFile m;
    m.path = resolve_model_path(flag);
    m.file = GgufFile::open(m.path);
    m.config = read_model_config(*m.file);
    m.weight_bytes = resident_weight_bytes(*m.file, m.config);
    return m;
}

// What a plan is of: the model, its KV window, and the draft model, refused as kite serve
// refuses it (a file that does not open, a vocabulary that is not the model's).
struct Planned {
    ModelFile model;
    KvWindow window;
    SpeculationConfig speculation;
    std::optional<ModelFile> draft;

    PlannedDraft planned_draft() const {
        return draft ? PlannedDraft{&draft->config, draft->weight_bytes} : PlannedDraft{};
    }
};

Planned read_planned(const PlanOptions& o) {
    Planned p{open_model(o.engine.model), o.engine.window(), o.spec.flags(), std::nullopt};
    if (o.spec.draft_model.empty()) return p;
    try {
        p.draft = open_model(o.spec.draft_model);
    } catch (const Error& e) {
        fail("cannot load the draft model: {}", e.what());
    }
    check_same_vocabulary(*p.model.file, p.model.config.n_vocab, *p.draft->file,
                          p.draft->config.n_vocab);
    return p;
}

// The configuration kite serve builds for `sequences` with these flags.
EngineConfig serve_config(const EngineOptions& e, const Planned& p, int64_t sequences) {
    EngineConfig c = e.serve_config(p.model.config, sequences);
    c.speculation = p.speculation;
    return c;
}

// The plan of a configuration, refused as the engine would refuse it: a context past the
// model's, a window that does not fit in the context or the cache.
MemoryPlan plan_for(const PlanOptions& o, const Planned& p, const EngineConfig& config) {
    const MemoryPlan plan =
        plan_memory(p.model.config, p.model.weight_bytes, config, p.planned_draft());
    check_memory_plan(plan, p.model.config, SIZE_MAX);
    o.engine.check_window(p.window, plan.context_length, plan.kv_blocks * config.block_size,
                          config.block_size);
    return plan;
}

double mib(size_t bytes) {
    return static_cast<double>(bytes) / (1024.0 * 1024);
}

std::string serve_flags(const PlanOptions& o, const Planned& p) {
    const KvTypeOptions& t = o.engine.kv_type;
    std::string flags = "--kv-type " + t.both;
    if (!t.keys.empty()) flags += " --kv-type-k " + t.keys;
    if (!t.values.empty()) flags += " --kv-type-v " + t.values;
    if (p.window.enabled())
        flags += fmt::format(" --kv-window {} --kv-sinks {}", p.window.window, p.window.sinks);
    if (p.draft)
        flags += fmt::format(" --draft-model {} --draft-max {}", o.spec.draft_model,
                             p.speculation.draft_max);
    return flags;
}

void print_model(const char* label, const ModelFile& m) {
    fmt::print("{:<12}{} ({})\n", label, m.path,
               m.config.name.empty() ? m.config.architecture : m.config.name);
}

// s, what one sequence holds: its context, or with a window the window's peak, however long
// it runs.
void print_sequence(const Planned& p, const EngineConfig& config, const MemoryPlan& plan) {
    const int64_t blocks = sequence_kv_blocks(p.model.config, config, p.window);
    const size_t bytes = sequence_kv_bytes(p.model.config, config, p.window);
    fmt::print("s:          {} tokens per sequence ({} blocks of {}: {} bytes of KV each)",
               p.window.enabled() ? blocks * config.block_size : plan.context_length, blocks,
               config.block_size, bytes);
    if (p.window.enabled())
        fmt::print(
            ": a KV window of {} + {} sinks at its peak (window blocks, sink blocks and their "
            "re-rotated copies), however far past the context of {} it runs",
            p.window.window, p.window.sinks, plan.context_length);
    fmt::print("\n");
}

// The terms every answer is made of.
void print_terms(const Planned& p, const EngineConfig& config, const MemoryPlan& plan) {
    const ModelConfig& c = p.model.config;
    print_model("model:", p.model);
    const double b = kv_bytes_per_element(config.kv_type);
    const KvCacheShape shape{c.n_layers, c.n_kv_heads, c.head_dim};
    fmt::print("KV type:    {} (b = {:g} bytes per value, block scales included)\n",
               kv_types_name(config.kv_type), b);
    fmt::print("M_kv:       2*b*B*L*H_kv*s*d_h = 2*{:g}*B*{}*{}*s*{} = {} bytes per token * B*s\n",
               b, c.n_layers, c.n_kv_heads, c.head_dim,
               KvCache::bytes_per_token(shape, config.kv_type));
    print_sequence(p, config, plan);
    fmt::print("weights:    W = {} bytes ({:.1f} MiB, the file with its matrices packed)\n",
               plan.weight_bytes, mib(plan.weight_bytes));
    fmt::print("run state:  R = {} bytes ({:.1f} MiB, one pass of {} tokens)\n",
               plan.run_state_bytes, mib(plan.run_state_bytes), config.max_batch_tokens);
    if (!p.draft) return;
    const ModelConfig& d = p.draft->config;
    print_model("draft:", *p.draft);
    fmt::print(
        "draft W:    W_d = {} bytes ({:.1f} MiB, the mapped file); its KV: 2*{:g}*{}*{}*{} "
        "= {} bytes per token\n",
        plan.draft_weight_bytes, mib(plan.draft_weight_bytes), b, d.n_layers, d.n_kv_heads,
        d.head_dim,
        KvCache::bytes_per_token({d.n_layers, d.n_kv_heads, d.head_dim}, config.kv_type));
}

void print_allocation(const MemoryPlan& p, const EngineConfig& config) {
    fmt::print("KV cache:   {} blocks, {} bytes ({:.1f} MiB)\n", p.kv_blocks, p.kv_bytes,
               mib(p.kv_bytes));
    if (p.draft_weight_bytes > 0) {
        fmt::print(
            "draft KV:   KV_d = {} blocks (the KV cache's {} and {} for guesses, --draft-max {}), "
            "{} bytes ({:.1f} MiB)\n",
            p.draft_kv_blocks, p.kv_blocks, p.draft_kv_blocks - p.kv_blocks,
            config.speculation.draft_max, p.draft_kv_bytes, mib(p.draft_kv_bytes));
        fmt::print("draft run:  R_d = {} bytes ({:.1f} MiB, the draft model's run state)\n",
                   p.draft_run_state_bytes, mib(p.draft_run_state_bytes));
    }
    fmt::print("total:      W + R + KV{} = {} bytes ({:.1f} MiB)\n",
               p.draft_weight_bytes > 0 ? " + W_d + R_d + KV_d" : "", p.total_bytes(),
               mib(p.total_bytes()));
}

// The reverse of a budget: the memory for B sequences, as serve sizes it.
void plan_sequences(const PlanOptions& o, const Planned& p) {
    const EngineConfig config = serve_config(o.engine, p, o.max_seqs);
    const MemoryPlan plan = plan_for(o, p, config);
    print_terms(p, config, plan);
    const int64_t per_seq = sequence_kv_blocks(p.model.config, config, p.window);
    fmt::print(
        "B:          {} sequences: M_kv = {} bytes", o.max_seqs,
        static_cast<size_t>(o.max_seqs) * sequence_kv_bytes(p.model.config, config, p.window));
    fmt::print("{}\n", o.engine.kv_mem.empty() && plan.kv_blocks < o.max_seqs * per_seq
                           ? " (kite serve caps the KV cache at 1 GiB without --kv-mem)"
                           : "");
    print_allocation(plan, config);
}

std::string what_fits(const Planned& p, const MemoryPlan& plan) {
    if (!p.window.enabled()) return fmt::format("of {} tokens", plan.context_length);
    return fmt::format("with a KV window of {} + {} sinks, of any length", p.window.window,
                       p.window.sinks);
}

void plan_budget(const PlanOptions& o, const Planned& p) {
    const size_t budget = parse_bytes(o.budget);
    // The answer gives serve a --kv-mem of B times one sequence's KV bytes (so a --kv-mem
    // given here does not count).
    EngineOptions without = o.engine;
    without.kv_mem.clear();
    const size_t per_seq = sequence_kv_bytes(p.model.config, serve_config(without, p, 1), p.window);
    const auto kv_mem = [&](int64_t n) { return std::to_string(static_cast<size_t>(n) * per_seq); };
    const auto config_for = [&](int64_t n) {
        EngineOptions e = without;
        e.kv_mem = kv_mem(n);
        return serve_config(e, p, n);
    };
    const EngineConfig one = config_for(1);
    const MemoryPlan single = plan_for(o, p, one);
    const int64_t fit = sequences_that_fit(p.model.config, p.model.weight_bytes, one, budget,
                                           p.window, p.planned_draft());
    if (fit < 1)
        fail("--mem {}: a budget of {} bytes holds no sequence {}: one needs {} bytes ({})",
             o.budget, budget, what_fits(p, single), single.total_bytes(),
             p.draft ? "the weights, run states and KV caches of the model and the draft model"
                     : "the weights, the run state and its KV cache");
    print_terms(p, one, single);
    fmt::print("budget:     {} bytes ({:.1f} MiB)\n", budget, mib(budget));
    if (p.draft)
        fmt::print(
            "B:          the most whose W + R + KV + W_d + R_d + KV_d fit: {} sequences {}\n", fit,
            what_fits(p, single));
    else
        fmt::print("B:          floor((budget - W - R) / {}) = {} sequences {}\n", per_seq, fit,
                   what_fits(p, single));
    // Serve holds exactly those sequences when given their KV bytes.
    const EngineConfig config = config_for(fit);
    print_allocation(plan_for(o, p, config), config);
    fmt::print("serve with: kite serve -c {} --max-seqs {} {} --kv-mem {} --max-batch-tokens {}\n",
               single.context_length, fit, serve_flags(o, p), kv_mem(fit),
               o.engine.max_batch_tokens);
}

}  // namespace

void add_plan_command(CLI::App& app) {
    auto* cmd = app.add_subcommand(
        "plan", "Sequences that fit in a memory budget, or the memory for B sequences");
    auto o = std::make_shared<PlanOptions>();
    o->engine.add_to(*cmd);
    o->spec.add_to(*cmd);
    cmd->add_option("--mem", o->budget,
                    "Memory budget, e.g. 4G: how many sequences of -c tokens fit in it")
        ->check(size_value());
    cmd->add_option("--max-seqs", o->max_seqs,
                    "Without --mem: the memory for this many sequences, as kite serve sizes it")
        ->check(CLI::Range(int64_t{1}, int64_t{1024}))
        ->capture_default_str();
    cmd->callback([o] {
        const Planned p = read_planned(*o);
        o->budget.empty() ? plan_sequences(*o, p) : plan_budget(*o, p);
    });
}

}  // namespace kite::cli
