#include "tools/benchmark.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include <fmt/format.h>

#include "core/error.h"
#include "engine/engine.h"
#include "kv/kv_cache.h"

namespace kite {

namespace {

using Clock = std::chrono::steady_clock;

// Longest forward pass of a prompt, as llama-bench's default micro-batch (-ub 512).
constexpr int64_t kPromptChunk = 512;

double seconds_since(Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
}

// Token ids spread over the vocabulary, different for each sequence (the content does not
// change the work, only keeps the runs from looking alike).
std::vector<int32_t> synthetic_prompt(int64_t n, int64_t seq, int64_t n_vocab) {
    std::vector<int32_t> tokens(n);
    uint64_t x = 0x9e3779b97f4a7c15ull * static_cast<uint64_t>(seq + 1);
    for (int32_t& t : tokens) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        t = static_cast<int32_t>((x >> 33) % static_cast<uint64_t>(n_vocab));
    }
    return tokens;
}

GenerationParams greedy(int64_t max_tokens, bool keep_cache) {
    GenerationParams p;
    p.sampling.temperature = 0;
    p.max_tokens = max_tokens;
    p.ignore_eos = true;
    p.keep_cache = keep_cache;
    return p;
}

EngineConfig engine_config(const BenchOptions& o, int64_t context, int64_t n_seqs,
                           int64_t batch_tokens, bool speculate = false) {
    EngineConfig c;
    if (speculate) c.speculation = o.speculation;
    c.threads = o.threads;
    c.context_length = context;
    c.max_sequences = n_seqs;
    c.kv_type = o.kv_type;
    c.max_batch_tokens = batch_tokens;
    c.prefix_caching = false;  // every repetition must do its prefill again
    return c;
}

// One prompt, prefilled in passes of at most kPromptChunk tokens (the last also samples one
// token).
double time_prefill(Engine& e, const std::vector<int32_t>& prompt) {
    const int64_t id = e.submit(prompt, greedy(1, false));
    const auto start = Clock::now();
    while (e.has_work()) e.step();
    const double s = seconds_since(start);
    e.release(id);
    return s;
}

// B sequences decode n tokens in lock step. The prompts are prefilled first (untimed); each
// sequence then gets one more token, so all of them start the timed decode together:
// prompt S, sampled token, extra token -> S + 2 cached tokens, then n passes of B tokens
// (fewer when speculating).
double time_decode(Engine& e, int64_t n_seqs, int64_t prompt_len, int64_t n, int64_t n_vocab) {
    std::vector<int64_t> ids;
    for (int64_t b = 0; b < n_seqs; ++b)
        ids.push_back(e.submit(synthetic_prompt(prompt_len, b, n_vocab), greedy(1, true)));
    while (e.has_work()) e.step();
    for (int64_t id : ids) e.extend(id, {e.sequence(id).tokens.front()}, greedy(n + 1, false));
    e.step();  // the two pending tokens of every sequence, and the first sampled one
    int64_t generated = 0;
    const auto start = Clock::now();
    while (e.has_work()) generated += static_cast<int64_t>(e.step().size());
    const double s = seconds_since(start);
    for (int64_t id : ids) e.release(id);
    if (generated != n_seqs * n)
        fail("benchmark: expected {} tokens in lock step, got {}", n_seqs * n, generated);
    return s;
}

// One sequence from a given prompt, which must stay as it is for its continuation to be the
// one the text asks for (no extra token): the prefill and the first sampled token are
// untimed, then n tokens.
double time_decode_from(Engine& e, const std::vector<int32_t>& prompt, int64_t n) {
    const int64_t id = e.submit(prompt, greedy(n + 1, false));
    while (e.step().empty()) {
    }
    int64_t generated = 0;
    const auto start = Clock::now();
    while (e.has_work()) generated += static_cast<int64_t>(e.step().size());
    const double s = seconds_since(start);
    e.release(id);
    if (generated != n) fail("benchmark: expected {} tokens, got {}", n, generated);
    return s;
}

double time_generation(Engine& e, int64_t n_seqs, const std::vector<int32_t>& prompt,
                       int64_t prompt_len, int64_t n, int64_t n_vocab) {
    return prompt.empty() ? time_decode(e, n_seqs, prompt_len, n, n_vocab)
                          : time_decode_from(e, prompt, n);
}

BenchRow finish_row(BenchRow r) {
    mean_stddev(r.samples_ts, r.avg_ts, r.stddev_ts);
    return r;
}

}  // namespace

void mean_stddev(const std::vector<double>& v, double& mean, double& stddev) {
    mean = stddev = 0;
    if (v.empty()) return;
    for (double x : v) mean += x;
    mean /= static_cast<double>(v.size());
    if (v.size() < 2) return;
    double ss = 0;
    for (double x : v) ss += (x - mean) * (x - mean);
    stddev = std::sqrt(ss / static_cast<double>(v.size() - 1));
}

std::vector<BenchRow> run_benchmark(const Model& model, const Tokenizer& tokenizer,
                                    const BenchOptions& o,
                                    const std::function<void(const std::string&)>& progress) {
    if (o.reps < 1) fail("-r must be at least 1");
    if (o.n_prompt < 0 || o.n_gen < 0) fail("-p and -n must not be negative");
    if (o.tg_prompt < 1 || o.batch_prompt < 1) fail("the prompts before generation need a token");
    for (int64_t b : o.batches)
        if (b < 1 || b > 1024) fail("batch size {} is out of range (1..1024)", b);
    const int64_t n_vocab = model.config().n_vocab;
    const double kv_b = kv_bytes_per_element(o.kv_type);
    const ModelCost cost = model_cost(model.file(), model.config());
    auto say = [&](const std::string& test) {
        if (progress) progress(test);
    };
    std::vector<BenchRow> rows;

    if (o.n_prompt > 0) {
        BenchRow r;
        r.test = fmt::format("pp{}", o.n_prompt);
        r.n_prompt = o.n_prompt;
        const int64_t chunk = std::min(o.n_prompt, kPromptChunk);
        r.per_token = cost.prefill(o.n_prompt, chunk, kv_b) / static_cast<double>(o.n_prompt);
        say(r.test);
        Engine e(model, tokenizer, engine_config(o, o.n_prompt + 8, 1, chunk));
        const std::vector<int32_t> prompt = synthetic_prompt(o.n_prompt, 0, n_vocab);
        time_prefill(e, prompt);  // warm-up
        for (int i = 0; i < o.reps; ++i)
            r.samples_ts.push_back(static_cast<double>(o.n_prompt) / time_prefill(e, prompt));
        rows.push_back(finish_row(r));
    }

    if (o.n_gen == 0) return rows;
    struct GenTest {
        std::string name;
        int64_t n_seqs, prompt_len;
        std::vector<int32_t> prompt;  // empty: synthetic
    };
    const int64_t tg_prompt =
        o.tg_tokens.empty() ? o.tg_prompt : static_cast<int64_t>(o.tg_tokens.size());
    const bool speculate = o.speculation.drafter != DrafterKind::None;
    const std::string spec_suffix = speculate ? "+spec" : "";
    std::vector<GenTest> tests{
        {fmt::format("tg{}{}", o.n_gen, spec_suffix), 1, tg_prompt, o.tg_tokens}};
    for (int64_t b : o.batches)
        tests.push_back({fmt::format("{}x({}+{}){}", b, o.batch_prompt, o.n_gen, spec_suffix),
                         b,
                         o.batch_prompt,
                         {}});
    bool warm = false;
    for (const GenTest& t : tests) {
        BenchRow r;
        r.test = t.name;
        r.n_prompt = t.prompt_len;
        r.n_gen = o.n_gen;
        r.n_seqs = t.n_seqs;
        const double tokens = static_cast<double>(t.n_seqs * o.n_gen);
        r.per_token = cost.decode(t.n_seqs, o.n_gen, t.prompt_len + 2, kv_b) / tokens;
        say(r.test);
        Engine e(model, tokenizer,
                 engine_config(o, t.prompt_len + o.n_gen + 8, t.n_seqs,
                               std::max<int64_t>(512, 2 * t.n_seqs), speculate));
        if (!warm)
            time_generation(e, 1, t.prompt, t.prompt_len, std::min<int64_t>(o.n_gen, 16), n_vocab);
        warm = true;
        const Engine::Stats before = e.stats();
        for (int i = 0; i < o.reps; ++i)
            r.samples_ts.push_back(
                tokens / time_generation(e, t.n_seqs, t.prompt, t.prompt_len, o.n_gen, n_vocab));
        r.drafted = e.stats().drafted_tokens - before.drafted_tokens;
        r.accepted = e.stats().accepted_tokens - before.accepted_tokens;
        rows.push_back(finish_row(r));
    }
    return rows;
}

}  // namespace kite
