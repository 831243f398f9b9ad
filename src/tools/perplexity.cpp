#include "tools/perplexity.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "engine/sink_refresh.h"
#include "kv/window_table.h"
#include "model/key_calibration_run.h"

namespace kite {

namespace {

struct Nll {
    double nll = 0;
    int32_t argmax = 0;
};

// -log p(target) from a row of logits, computed stably, and the row's argmax.
Nll score_row(const float* logits, int64_t n_vocab, int32_t target) {
    const float* best = std::max_element(logits, logits + n_vocab);
    double sum = 0;
    for (int64_t i = 0; i < n_vocab; ++i) sum += std::exp(double(logits[i]) - *best);
    return {std::log(sum) + *best - logits[target], static_cast<int32_t>(best - logits)};
}

// The mean negative log-likelihood's perplexity and its error, from the sums over n tokens.
void finish(double sum, double sum_sq, int64_t n, double& ppl, double& ppl_error) {
    const double mean = sum / n;
    ppl = std::exp(mean);
    const double var = sum_sq / n - mean * mean;
    ppl_error = var > 0 && n > 1 ? ppl * std::sqrt(var / (n - 1)) : 0;
}

}  // namespace

PerplexityResult perplexity(const Model& model, const std::vector<int32_t>& tokens,
                            const PerplexityOptions& o, ThreadPool& pool,
                            const std::function<void(int64_t, double)>& progress) {
    const int64_t n_ctx = o.n_ctx, n_vocab = model.config().n_vocab;
    if (n_ctx < 4) fail("the perplexity context must be at least 4 tokens");
    const int64_t n_whole = static_cast<int64_t>(tokens.size()) / n_ctx;
    if (n_whole == 0)
        fail("the text has {} tokens, fewer than one window of {}", tokens.size(), n_ctx);
    const int64_t n_windows = o.max_windows < 0 ? n_whole : std::min(n_whole, o.max_windows);
    const int64_t n_batch = std::min(o.n_batch, n_ctx);

    const int64_t block_size = 16;
    const int64_t n_blocks = (n_ctx + block_size - 1) / block_size;
    KvCache kv(model.kv_shape(), o.kv_type, n_blocks, block_size,
               key_calibration(model, o.kv_type, o.calibration_tokens, pool));
    std::vector<int32_t> table(n_blocks);
    for (int64_t b = 0; b < n_blocks; ++b) table[b] = static_cast<int32_t>(b);
    RunState state(model.config(), n_batch, n_batch);
    Batch batch;

    PerplexityResult r;
    double sum = 0, sum_sq = 0;
    const int64_t first = n_ctx / 2;
    for (int64_t w = 0; w < n_windows; ++w) {
        const int32_t* window = tokens.data() + w * n_ctx;
        // Each window starts from an empty cache: its positions restart at 0.
        for (int64_t start = 0; start < n_ctx; start += n_batch) {
            const int64_t n = std::min(n_batch, n_ctx - start);
            batch.clear();
            for (int64_t i = 0; i < n; ++i) {
                const int64_t pos = start + i;
                batch.tokens.push_back(pos == 0 && o.bos >= 0 ? o.bos : window[pos]);
                batch.positions.push_back(pos);
                batch.slots.push_back(pos);
                batch.logits_rows.push_back(i);
            }
            batch.sequences.push_back({0, n, start + n, table.data(), 0, 0});
            const float* logits = model.forward(batch, kv, state, pool);
            for (int64_t i = 0; i < n; ++i) {
                const int64_t pos = start + i;
                if (pos >= n_ctx - 1) break;
                const Nll s = score_row(logits + i * n_vocab, n_vocab, window[pos + 1]);
                r.argmax.push_back(s.argmax);
                if (pos < first) continue;
                sum += s.nll, sum_sq += s.nll * s.nll;
                r.n_scored++;
            }
        }
        r.n_windows = w + 1;
        if (progress) progress(w, std::exp(sum / r.n_scored));
    }
    finish(sum, sum_sq, r.n_scored, r.ppl, r.ppl_error);
    return r;
}

StreamPerplexityResult stream_perplexity(const Model& model, const std::vector<int32_t>& tokens,
                                         const StreamPerplexityOptions& o, ThreadPool& pool,
                                         const std::function<void(int64_t, double)>& progress) {
    const ModelConfig& c = model.config();
    const auto n = static_cast<int64_t>(tokens.size());
    const int64_t context = o.context > 0 ? o.context : c.n_ctx_train, bs = 16;
    const KvWindow& w = o.window;
    if (n < 2) fail("the text has {} tokens; a stream needs at least 2", n);
    if (!w.enabled() && n > context)
        fail("the text has {} tokens, more than the context of {}: give a KV window", n, context);
    if (w.enabled() && (w.window < w.sinks || w.window + w.sinks > context))
        fail("a KV window of {} tokens with {} sinks does not fit in the context of {}", w.window,
             w.sinks, context);
    const int64_t n_blocks = w.enabled() ? w.peak_blocks(bs) : (n + bs - 1) / bs;
    KvCache kv(model.kv_shape(), o.kv_type, n_blocks, bs,
               key_calibration(model, o.kv_type, o.calibration_tokens, pool));
    BlockPool blocks(n_blocks);
    std::vector<int32_t> table;
    WindowState state;
    RunState run(c, o.n_batch, o.n_batch);
    Batch batch;

    StreamPerplexityResult r;
    double sum = 0, sum_sq = 0;
    for (int64_t pos = 0; pos < n - 1;) {
        if (!slide_window(w, bs, pos, table, state, blocks))
            fail("the KV window ran out of blocks");
        refresh_sinks(c, kv, w, state, table);
        const int64_t count = std::min({o.n_batch, n - 1 - pos, w.tokens_until_slide(pos, bs)});
        const int64_t offset = w.rope_offset(state.evicted, bs), start = pos - offset;
        while (static_cast<int64_t>(table.size()) * bs < start + count)
            table.push_back(blocks.allocate());
        batch.clear();
        for (int64_t i = 0; i < count; ++i) {
            const int64_t at = start + i;
            batch.tokens.push_back(pos + i == 0 && o.bos >= 0 ? o.bos : tokens[pos + i]);
            batch.positions.push_back(at);
            batch.slots.push_back(int64_t{table[at / bs]} * bs + at % bs);
            batch.logits_rows.push_back(i);
        }
        batch.sequences.push_back(
            {0, count, start + count, table.data(), w.first_cached(state.evicted, bs), offset});
        const float* logits = model.forward(batch, kv, run, pool);
        for (int64_t i = 0; i < count; ++i) {
            const double nll =
                score_row(logits + i * c.n_vocab, c.n_vocab, tokens[pos + i + 1]).nll;
            sum += nll, sum_sq += nll * nll;
        }
        pos += count;
        r.n_scored = pos;
        if (progress) progress(r.n_scored, std::exp(sum / r.n_scored));
    }
    r.n_evicted = state.evicted;
    finish(sum, sum_sq, r.n_scored, r.ppl, r.ppl_error);
    return r;
}

}  // namespace kite
