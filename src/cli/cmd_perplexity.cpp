// `kite perplexity`: perplexity of a model on a text file, as llama.cpp's perplexity tool
// computes it (non-overlapping windows, second half of each scored), with its ± estimate.
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/engine_options.h"
#include "core/error.h"
#include "engine/perplexity.h"

namespace kite::cli {

namespace {

struct PerplexityCliOptions {
    EngineOptions engine;
    std::string file;
    int64_t chunks = -1;
};

void run_perplexity(const PerplexityCliOptions& o) {
    std::ifstream in(o.file, std::ios::binary);
    if (!in) fail("cannot read '{}'", o.file);
    std::stringstream ss;
    ss << in.rdbuf();
    LoadedModel m = load_model(o.engine.model);
    const std::vector<int32_t> tokens = m.tokenizer->encode(ss.str(), false, false);
    PerplexityOptions po;
    po.n_ctx = o.engine.context > 0 ? o.engine.context : 512;
    po.n_batch = std::min(po.n_ctx, o.engine.max_batch_tokens);
    po.bos = m.tokenizer->adds_bos() ? m.tokenizer->bos() : -1;
    po.kv_type = o.engine.engine_config(1).kv_type;
    po.max_windows = o.chunks;
    if (static_cast<int64_t>(tokens.size()) < po.n_ctx)
        fail("the text has {} tokens, fewer than one window of {}", tokens.size(), po.n_ctx);
    ThreadPool pool(o.engine.threads > 0 ? o.engine.threads : ThreadPool::default_threads());
    const int64_t n_whole = static_cast<int64_t>(tokens.size()) / po.n_ctx;
    fmt::print(stderr, "{} tokens, {} windows of {}\n", tokens.size(),
               o.chunks < 0 ? n_whole : std::min(n_whole, o.chunks), po.n_ctx);
    PerplexityResult r = perplexity(*m.model, tokens, po, pool, [](int64_t w, double ppl) {
        fmt::print("[{}]{:.4f},", w + 1, ppl);
        std::fflush(stdout);
    });
    fmt::print("\nFinal estimate: PPL = {:.4f} +/- {:.5f}\n", r.ppl, r.ppl_error);
}

}  // namespace

void add_perplexity_command(CLI::App& app) {
    auto* cmd = app.add_subcommand("perplexity", "Perplexity of the model on a text file");
    auto o = std::make_shared<PerplexityCliOptions>();
    o->engine.add_to(*cmd);
    cmd->add_option("-f,--file", o->file, "Text file")->required();
    cmd->add_option("--chunks", o->chunks, "Score only the first N windows (default: all)")
        ->check(CLI::PositiveNumber);
    cmd->callback([o] { run_perplexity(*o); });
}

}  // namespace kite::cli
