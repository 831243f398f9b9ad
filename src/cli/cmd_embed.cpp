// `kite embed`: one embedding vector per input (each TEXT argument, or each line of a file)
// from an encoder model, pooled as the file says (or as --pooling says; a generative model
// pools its final hidden state that way) and L2-normalised; --dimensions keeps the
// first N values (Matryoshka) and normalises again.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/engine_options.h"
#include "core/error.h"
#include "core/normalize.h"
#include "model/model.h"
#include "model/pooling.h"
#include "tokenizer/tokenizer.h"

namespace kite::cli {

namespace {

struct EmbedOptions {
    std::string model;
    std::vector<std::string> texts;
    std::string file;
    std::optional<int64_t> dimensions;  // all of them when not given
    std::string format = "json";
    std::string pooling;  // empty: the model's own (an encoder's file says)
    int threads = 0;
};

// --pooling as a Pooling; None (the model's own) when not given.
Pooling pooling_option(const std::string& name) {
    if (name.empty()) return Pooling::None;
    const std::optional<Pooling> p = pooling_from_name(name);
    if (!p) fail("--pooling '{}' is not a pooling (mean, cls or last)", name);
    return *p;
}

// One input per line; an empty line would have no vector, so it is an error.
std::vector<std::string> read_lines(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) fail("cannot read '{}'", path);
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) {
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (line.empty())
            fail("line {} of '{}' is empty (one text per line)", lines.size() + 1, path);
        lines.push_back(line);
    }
    return lines;
}

void print_vector(const float* v, int64_t n, const std::string& format) {
    const bool json = format == "json";
    std::string line = json ? "[" : "";
    for (int64_t i = 0; i < n; ++i)
        line += fmt::format("{}{:.7g}", i == 0 ? "" : json ? "," : "\t", v[i]);
    line += json ? "]\n" : "\n";
    std::fwrite(line.data(), 1, line.size(), stdout);
}

void run_embed(const EmbedOptions& o) {
    if (o.format != "json" && o.format != "tsv")
        fail("-o '{}' is not an output format (json or tsv)", o.format);
    const std::vector<std::string> texts = o.file.empty() ? o.texts : read_lines(o.file);
    if (texts.empty()) fail("nothing to embed (give TEXT arguments or -f FILE)");
    const Pooling pooling = pooling_option(o.pooling);
    LoadedModel m = load_model(o.model, true);
    const ModelConfig& c = m.model->config();
    if (!m.model->can_embed() && pooling == Pooling::None)
        fail(
            "'{}' is a generative model ({}); give --pooling mean or last to embed with its "
            "final hidden state",
            m.model->file().name(), c.architecture);
    const int64_t dims = o.dimensions.value_or(c.n_embd);
    if (dims < 1 || dims > c.n_embd)
        fail("--dimensions {} is out of range (1 to {})", dims, c.n_embd);

    std::vector<std::vector<int32_t>> inputs;
    int64_t n_tokens = 0;
    for (const std::string& text : texts) {
        if (text.empty()) fail("input {} is empty", inputs.size() + 1);
        inputs.push_back(m.tokenizer->encode(text, true, false));
        const auto n = int64_t(inputs.back().size());
        if (n > c.n_ctx_train)
            fail("input {} has {} tokens, more than the model's context of {}", inputs.size(), n,
                 c.n_ctx_train);
        n_tokens += n;
    }
    ThreadPool pool(o.threads > 0 ? o.threads : ThreadPool::default_threads());
    const auto start = std::chrono::steady_clock::now();
    std::vector<float> vectors = m.model->embed(inputs, pool, pooling);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    for (size_t i = 0; i < inputs.size(); ++i) {
        float* v = &vectors[i * size_t(c.n_embd)];
        normalize_l2(v, dims);
        print_vector(v, dims, o.format);
    }
    fmt::print(stderr, "embedded {} inputs, {} tokens in {:.3f} s ({:.1f} tokens/s)\n",
               inputs.size(), n_tokens, seconds, double(n_tokens) / seconds);
}

}  // namespace

void add_embed_command(CLI::App& app) {
    auto* cmd = app.add_subcommand(
        "embed", "Embedding vectors of texts (an embedding model, or a generative one pooled)");
    auto o = std::make_shared<EmbedOptions>();
    cmd->add_option("-m,--model", o->model, "GGUF embedding model (e.g. nomic-embed-v1.5)");
    cmd->add_option("-t,--threads", o->threads, "Threads (default: the physical cores)")
        ->check(CLI::PositiveNumber);
    auto* texts = cmd->add_option("text", o->texts, "Texts to embed, one vector each");
    auto* file = cmd->add_option("-f,--file", o->file, "Embed each line of this file instead");
    texts->excludes(file);
    cmd->add_option("--dimensions", o->dimensions,
                    "Keep the first N values and normalise again (Matryoshka)");
    cmd->add_option("-o,--output", o->format, "json (an array per line) or tsv");
    cmd->add_option("--pooling", o->pooling,
                    "mean, cls or last (default: the embedding model's; a generative model needs "
                    "one)");
    cmd->callback([o, texts, file] {
        if (!*texts && !*file) throw CLI::RequiredError("TEXT or --file");
        run_embed(*o);
    });
}

}  // namespace kite::cli
