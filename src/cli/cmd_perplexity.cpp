// `kite perplexity`: perplexity of a model on a text file, as llama.cpp's perplexity tool
// computes it (non-overlapping windows, second half of each scored), with its ± estimate;
// with --stream or --kv-window, of the text read as one stream (every token scored), through
// the whole cache or attention sinks and a sliding window.
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/engine_options.h"
#include "core/error.h"
#include "engine/calibration_text.h"
#include "tools/perplexity.h"

namespace kite::cli {

namespace {

struct PerplexityCliOptions {
    EngineOptions engine;
    std::string file;
    int64_t chunks = -1;
    bool stream = false;
    int64_t stream_tokens = -1;
};

// The text's tokens as llama-perplexity -f reads them, so that each window holds the same tokens
// as llama.cpp's: one trailing newline dropped, control-token text not parsed, and BOS first
// where the model adds one (the windows are cut from that, and each one's first token becomes
// BOS). Tokenized without BOS, every window would start one text token later than llama.cpp's.
std::vector<int32_t> text_tokens(const Tokenizer& tokenizer, std::string text) {
    if (!text.empty() && text.back() == '\n') text.pop_back();
    std::vector<int32_t> tokens = tokenizer.encode(text, false, false);
    if (tokenizer.adds_bos()) tokens.insert(tokens.begin(), tokenizer.bos());
    return tokens;
}

void run_stream(const PerplexityCliOptions& o, const LoadedModel& m, std::vector<int32_t> tokens,
                ThreadPool& pool) {
    if (o.stream_tokens > 0 && static_cast<int64_t>(tokens.size()) > o.stream_tokens)
        tokens.resize(static_cast<size_t>(o.stream_tokens));
    StreamPerplexityOptions so;
    so.window = o.engine.window();
    so.context = o.engine.context;
    so.n_batch = o.engine.max_batch_tokens;
    so.bos = m.tokenizer->adds_bos() ? m.tokenizer->bos() : -1;
    so.kv_type = o.engine.kv_type.types();
    so.calibration_tokens = calibration_tokens(*m.tokenizer);
    constexpr int64_t kBlock = 16;  // stream_perplexity's block size
    const auto n = static_cast<int64_t>(tokens.size());
    o.engine.check_kv_budget(m.model->config(),
                             so.window.enabled() ? so.window.peak_blocks(kBlock) * kBlock : n,
                             so.window.enabled() ? "its KV window needs" : "the stream needs");
    const std::string cache =
        so.window.enabled() ? fmt::format("window {} + {} sinks", so.window.window, so.window.sinks)
                            : "whole cache";
    int64_t next_report = 0;
    const StreamPerplexityResult r =
        stream_perplexity(*m.model, tokens, so, pool, [&](int64_t scored, double ppl) {
            // Said once the stream runs, so that a stream that cannot is one error line.
            if (next_report == 0)
                fmt::print(stderr, "{} tokens as one stream, {}\n", tokens.size(), cache);
            if (scored < next_report) return;
            next_report = scored + 512;
            fmt::print("[{}]{:.4f},", scored, ppl);
            std::fflush(stdout);
        });
    fmt::print("\nFinal estimate: PPL = {:.4f} +/- {:.5f} ({} tokens scored, {} evicted)\n", r.ppl,
               r.ppl_error, r.n_scored, r.n_evicted);
}

void run_perplexity(const PerplexityCliOptions& o) {
    std::ifstream in(o.file, std::ios::binary);
    if (!in) fail("cannot read '{}'", o.file);
    std::stringstream ss;
    ss << in.rdbuf();
    (void)o.engine.window();  // bad window flags stop it before the model loads
    LoadedModel m = load_model(o.engine.model);
    const std::vector<int32_t> tokens = text_tokens(*m.tokenizer, ss.str());
    ThreadPool pool(o.engine.threads > 0 ? o.engine.threads : ThreadPool::default_threads());
    if (o.stream || o.engine.window().enabled()) return run_stream(o, m, tokens, pool);
    PerplexityOptions po;
    po.n_ctx = o.engine.context > 0 ? o.engine.context : 512;
    po.n_batch = std::min(po.n_ctx, o.engine.max_batch_tokens);
    po.bos = m.tokenizer->adds_bos() ? m.tokenizer->bos() : -1;
    po.kv_type = o.engine.kv_type.types();
    po.calibration_tokens = calibration_tokens(*m.tokenizer);
    po.max_windows = o.chunks;
    o.engine.check_kv_budget(m.model->config(), po.n_ctx, "one window of -c needs");
    if (static_cast<int64_t>(tokens.size()) < po.n_ctx)
        fail("the text has {} tokens, fewer than one window of {}", tokens.size(), po.n_ctx);
    const int64_t n_whole = static_cast<int64_t>(tokens.size()) / po.n_ctx;
    PerplexityResult r = perplexity(*m.model, tokens, po, pool, [&](int64_t w, double ppl) {
        // Said once the windows run, so that options they refuse are one error line.
        if (w == 0)
            fmt::print(stderr, "{} tokens, {} windows of {}\n", tokens.size(),
                       o.chunks < 0 ? n_whole : std::min(n_whole, o.chunks), po.n_ctx);
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
    cmd->add_flag("--stream", o->stream,
                  "Read the text as one stream, scoring every token (implied by --kv-window)");
    cmd->add_option("--stream-tokens", o->stream_tokens,
                    "With --stream: read only the first N tokens (default: all)")
        ->check(CLI::PositiveNumber);
    cmd->callback([o] { run_perplexity(*o); });
}

}  // namespace kite::cli
