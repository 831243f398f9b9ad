#include "engine/model_drafter.h"

#include <algorithm>
#include <cmath>

#include "engine/draft_vocabulary.h"
#include "model/key_calibration_run.h"
#include "sampling/logprobs.h"

namespace kite {

namespace {

const Model& checked(const Model& draft, const Model& target) {
    check_same_vocabulary(target.file(), target.config().n_vocab, draft.file(),
                          draft.config().n_vocab);
    return draft;
}

}  // namespace

int64_t draft_cache_blocks(int64_t engine_blocks, int64_t max_sequences, int64_t block_size,
                           int64_t draft_max) {
    return engine_blocks + max_sequences * ((draft_max + block_size - 1) / block_size);
}

ModelDrafter::ModelDrafter(const Model& draft, const DrafterContext& context,
                           const SpeculationConfig& config)
    : model_(checked(draft, *context.target)),
      pool_(*context.pool),
      block_size_(context.block_size),
      max_batch_tokens_(std::max(context.max_batch_tokens, context.max_sequences)),
      log_p_min_(std::log(config.draft_p_min)),
      vocab_(config.draft_vocab > 0 ? std::min(config.draft_vocab, draft.config().n_vocab)
                                    : draft.config().n_vocab),
      kv_(draft.kv_shape(), context.kv_type,
          draft_cache_blocks(context.n_blocks, context.max_sequences, context.block_size,
                             config.draft_max),
          context.block_size,
          key_calibration(draft, context.kv_type, *context.calibration, *context.pool)),
      blocks_(kv_.n_blocks()),
      state_(draft.config(), max_batch_tokens_, context.max_sequences) {
    work_.reserve(static_cast<size_t>(context.max_sequences));
    batch_.logits_vocab = vocab_;
}

int32_t ModelDrafter::Work::token_at(int64_t i) const {
    const auto n_verified = static_cast<int64_t>(request->tokens.size());
    return i < n_verified ? request->tokens[i] : (*request->out)[i - n_verified];
}

int64_t ModelDrafter::Work::n_known() const {
    return static_cast<int64_t>(request->tokens.size() + request->out->size());
}

bool ModelDrafter::Work::done() const {
    return unsure || static_cast<int64_t>(request->out->size()) >= request->max_tokens;
}

void ModelDrafter::drop_blocks_past(Cached& c, int64_t n_tokens) {
    const auto keep = static_cast<size_t>((n_tokens + block_size_ - 1) / block_size_);
    while (c.block_table.size() > keep) {
        blocks_.release(c.block_table.back());
        c.block_table.pop_back();
    }
}

// Rolls the sequence's draft cache back to what it shares with the verified tokens and
// reserves blocks for the rest and the guesses; false (nothing to draft) when the cache is
// full.
bool ModelDrafter::prepare(const DraftRequest& r, Cached& c) {
    r.out->clear();
    if (r.tokens.empty() || r.max_tokens <= 0) return false;
    const size_t shared = static_cast<size_t>(
        std::mismatch(c.tokens.begin(), c.tokens.end(), r.tokens.begin(), r.tokens.end()).first -
        c.tokens.begin());
    // The last verified token always runs again: its logits give the first guess.
    const auto keep = static_cast<int64_t>(std::min(shared, r.tokens.size() - 1));
    c.tokens.resize(static_cast<size_t>(keep));
    drop_blocks_past(c, keep);
    // The last guess itself never runs through the draft model.
    const int64_t most = static_cast<int64_t>(r.tokens.size()) + r.max_tokens - 1;
    while (static_cast<int64_t>(c.block_table.size()) * block_size_ < most) {
        const int32_t block = blocks_.allocate();
        if (block < 0) {
            drop_blocks_past(c, keep);
            return false;
        }
        c.block_table.push_back(block);
    }
    return true;
}

// One forward pass over every unfinished request: the tokens its cache lacks (up to the
// token budget), with a logits row where they reach the last known token.
void ModelDrafter::run_pass() {
    batch_.clear();
    int64_t budget = max_batch_tokens_;
    int64_t rows = 0;
    for (Work& w : work_) {
        w.n_fed = 0;
        if (w.done() || budget == 0) continue;
        Cached& c = *w.cached;
        const auto start = static_cast<int64_t>(c.tokens.size());
        const int64_t pending = w.n_known() - start;
        const int64_t n = std::min(pending, budget);
        const bool wants_logits = n == pending;
        if (wants_logits && rows == state_.max_logits) continue;
        BatchSequence bs;
        bs.query_start = static_cast<int64_t>(batch_.tokens.size());
        bs.query_len = n;
        bs.context_len = start + n;
        bs.block_table = c.block_table.data();
        for (int64_t pos = start; pos < start + n; ++pos) {
            batch_.tokens.push_back(w.token_at(pos));
            batch_.positions.push_back(pos);
            batch_.slots.push_back(int64_t{c.block_table[pos / block_size_]} * block_size_ +
                                   pos % block_size_);
        }
        if (wants_logits) batch_.logits_rows.push_back(bs.query_start + n - 1), rows++;
        batch_.sequences.push_back(bs);
        w.n_fed = n;
        budget -= n;
    }
    const float* logits = model_.forward(batch_, kv_, state_, pool_);
    for (Work& w : work_) {
        if (w.n_fed == 0) continue;
        Cached& c = *w.cached;
        for (int64_t i = 0; i < w.n_fed; ++i)
            c.tokens.push_back(w.token_at(static_cast<int64_t>(c.tokens.size())));
        if (static_cast<int64_t>(c.tokens.size()) < w.n_known()) continue;  // a prompt chunk
        const std::span<const float> row(logits, static_cast<size_t>(vocab_));
        logits += vocab_;
        const auto best = std::max_element(row.begin(), row.end());
        // log p(best) = logit - log-sum-exp; the softmax itself is never needed. A guess the
        // draft model is unsure of still goes to verification, which costs one batch row,
        // but it is the draft's last: the passes after it would mostly be wasted.
        w.unsure = log_p_min_ > -INFINITY && *best - log_sum_exp(row) < log_p_min_;
        w.request->out->push_back(static_cast<int32_t>(best - row.begin()));
    }
}

void ModelDrafter::propose(std::span<const DraftRequest> requests) {
    work_.clear();
    caught_up_ = false;
    for (const DraftRequest& r : requests) {
        Cached& c = cached_[r.seq_id];
        const auto n_verified = static_cast<int64_t>(r.tokens.size());
        caught_up_ |= n_verified > c.steady_bound;
        c.steady_bound = n_verified + std::max<int64_t>(r.max_tokens, 0) + 1;
        if (prepare(r, c)) work_.push_back({&r, &c});
    }
    while (std::any_of(work_.begin(), work_.end(), [](const Work& w) { return !w.done(); }))
        run_pass();
}

void ModelDrafter::release(int64_t seq_id) {
    auto it = cached_.find(seq_id);
    if (it == cached_.end()) return;
    drop_blocks_past(it->second, 0);
    cached_.erase(it);
}

}  // namespace kite
