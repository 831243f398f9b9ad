#include "engine/perplexity.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

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
    KvCache kv(model.kv_shape(), o.kv_type, n_blocks, block_size);
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
            batch.sequences.push_back({0, n, start + n, table.data()});
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
    const double mean = sum / r.n_scored;
    r.ppl = std::exp(mean);
    const double var = sum_sq / r.n_scored - mean * mean;
    r.ppl_error = var > 0 && r.n_scored > 1 ? r.ppl * std::sqrt(var / (r.n_scored - 1)) : 0;
    return r;
}

}  // namespace kite
