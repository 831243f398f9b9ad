// `kite plan`: how many sequences of a context fit in a memory budget, or the memory for B
// of them, from the weights' resident size (the mapped file), the run state of one forward
// pass and M_kv = 2 * b * B * L * H_kv * s * d_h in the KV type's real bytes. The arithmetic
// is engine/memory_plan.h's, on the configuration `kite serve` builds from the same flags,
// so the numbers are what serve allocates.
#include <cstdint>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/engine_options.h"
#include "cli/flag_checks.h"
#include "core/error.h"
#include "engine/memory_plan.h"
#include "gguf/gguf_file.h"
#include "model/model_config.h"

namespace kite::cli {

namespace {

struct PlanOptions {
    EngineOptions engine;
    std::string budget;  // --mem: how many sequences fit in it
    int64_t max_seqs = 16;
};

double mib(size_t bytes) {
    return static_cast<double>(bytes) / (1024.0 * 1024);
}

std::string kv_flags(const EngineOptions& e) {
    std::string flags = "--kv-type " + e.kv_type.both;
    if (!e.kv_type.keys.empty()) flags += " --kv-type-k " + e.kv_type.keys;
    if (!e.kv_type.values.empty()) flags += " --kv-type-v " + e.kv_type.values;
    return flags;
}

// The terms every answer is made of.
void print_terms(const std::string& path, const ModelConfig& c, const EngineConfig& config,
                 const MemoryPlan& p) {
    fmt::print("model:      {} ({})\n", path, c.name.empty() ? c.architecture : c.name);
    const double b = kv_bytes_per_element(config.kv_type);
    const KvCacheShape shape{c.n_layers, c.n_kv_heads, c.head_dim};
    fmt::print("KV type:    {} (b = {:g} bytes per value, block scales included)\n",
               kv_types_name(config.kv_type), b);
    fmt::print("M_kv:       2*b*B*L*H_kv*s*d_h = 2*{:g}*B*{}*{}*s*{} = {} bytes per token * B*s\n",
               b, c.n_layers, c.n_kv_heads, c.head_dim,
               KvCache::bytes_per_token(shape, config.kv_type));
    fmt::print("s:          {} tokens per sequence ({} blocks of {}: {} bytes of KV each)\n",
               p.context_length, (p.context_length + config.block_size - 1) / config.block_size,
               config.block_size, sequence_kv_bytes(c, config));
    fmt::print("weights:    W = {} bytes ({:.1f} MiB, the mapped file)\n", p.weight_bytes,
               mib(p.weight_bytes));
    fmt::print("run state:  R = {} bytes ({:.1f} MiB, one pass of {} tokens)\n", p.run_state_bytes,
               mib(p.run_state_bytes), config.max_batch_tokens);
}

void print_allocation(const MemoryPlan& p) {
    fmt::print("KV cache:   {} blocks, {} bytes ({:.1f} MiB)\n", p.kv_blocks, p.kv_bytes,
               mib(p.kv_bytes));
    fmt::print("total:      W + R + KV = {} bytes ({:.1f} MiB)\n", p.total_bytes(),
               mib(p.total_bytes()));
}

void plan(const PlanOptions& o) {
    const std::string path = resolve_model_path(o.engine.model);
    const std::unique_ptr<GgufFile> file = GgufFile::open(path);
    const ModelConfig c = read_model_config(*file);
    if (o.budget.empty()) {
        // The reverse: the memory for B sequences, as serve sizes it.
        const EngineConfig config = o.engine.serve_config(c, o.max_seqs);
        const MemoryPlan p = plan_memory(c, file->file_size(), config);
        check_memory_plan(p, c, SIZE_MAX);  // the context the model takes
        print_terms(path, c, config, p);
        fmt::print("B:          {} sequences: M_kv = {} bytes", o.max_seqs,
                   static_cast<size_t>(o.max_seqs) * sequence_kv_bytes(c, config));
        fmt::print("{}\n", o.engine.kv_mem.empty() &&
                                   p.kv_blocks * config.block_size < o.max_seqs * p.context_length
                               ? " (kite serve caps the KV cache at 1 GiB without --kv-mem)"
                               : "");
        print_allocation(p);
        return;
    }
    const size_t budget = parse_bytes(o.budget);
    const EngineConfig one = o.engine.serve_config(c, 1);
    const MemoryPlan single = plan_memory(c, file->file_size(), one);
    check_memory_plan(single, c, SIZE_MAX);
    const size_t per_seq = sequence_kv_bytes(c, one);
    const int64_t fit = sequences_that_fit(c, file->file_size(), one, budget);
    if (fit < 1)
        fail(
            "a budget of {} bytes holds no sequence of {} tokens: the weights ({} bytes), run "
            "state ({}) and one sequence's KV cache ({}) need {} bytes",
            budget, single.context_length, single.weight_bytes, single.run_state_bytes, per_seq,
            single.weight_bytes + single.run_state_bytes + per_seq);
    print_terms(path, c, one, single);
    fmt::print("budget:     {} bytes ({:.1f} MiB)\n", budget, mib(budget));
    fmt::print("B:          floor((budget - W - R) / {}) = {} sequences of {} tokens\n", per_seq,
               fit, single.context_length);
    // Serve holds exactly those sequences when given their KV bytes.
    PlanOptions serve = o;
    serve.engine.kv_mem = std::to_string(static_cast<size_t>(fit) * per_seq);
    const MemoryPlan p = plan_memory(c, file->file_size(), serve.engine.serve_config(c, fit));
    print_allocation(p);
    fmt::print("serve with: kite serve -c {} --max-seqs {} {} --kv-mem {} --max-batch-tokens {}\n",
               single.context_length, fit, kv_flags(o.engine), serve.engine.kv_mem,
               o.engine.max_batch_tokens);
}

}  // namespace

void add_plan_command(CLI::App& app) {
    auto* cmd = app.add_subcommand(
        "plan", "Sequences that fit in a memory budget, or the memory for B sequences");
    auto o = std::make_shared<PlanOptions>();
    o->engine.add_to(*cmd);
    cmd->add_option("--mem", o->budget,
                    "Memory budget, e.g. 4G: how many sequences of -c tokens fit in it")
        ->check(size_value());
    cmd->add_option("--max-seqs", o->max_seqs,
                    "Without --mem: the memory for this many sequences, as kite serve sizes it")
        ->check(CLI::Range(int64_t{1}, int64_t{1024}))
        ->capture_default_str();
    cmd->callback([o] { plan(*o); });
}

}  // namespace kite::cli
