#include "engine/engine.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "core/error.h"
#include "engine/calibration_text.h"
#include "engine/draft_length.h"
#include "engine/memory_plan.h"
#include "engine/sink_refresh.h"
#include "engine/token_constraint.h"
#include "model/key_calibration_run.h"
#include "sampling/speculative_acceptance.h"

namespace kite {

// A sequence with what only the engine needs: its sampler, its output constraint, its text
// stream, its stops and how much it drafts.
struct Engine::Active {
    Active(const Tokenizer& tokenizer, const GenerationParams& p, int32_t n_vocab,
           const SpeculationConfig& spec, std::shared_ptr<const std::vector<uint8_t>> dry_breakers)
        : params(p),
          sampler(p.sampling, n_vocab, std::move(dry_breakers)),
          decoder(tokenizer, false),
          draft_length(spec.draft_max, spec.adaptive_length) {
        start_turn();
    }
    // A new turn starts its constraint from the beginning (null: unconstrained).
    void start_turn() {
        constraint.reset();
        if (params.constraint) constraint = std::make_unique<TokenConstraint>(params.constraint);
    }
    Sequence seq;
    GenerationParams params;
    Sampler sampler;
    std::unique_ptr<TokenConstraint> constraint;
    StreamingDecoder decoder;
    std::string held;  // decoded text not yet emitted: it may be the start of a stop string
    DraftLength draft_length;
};

Engine::Engine(const Model& model, const Tokenizer& tokenizer, const EngineConfig& config)
    : model_(model),
      tokenizer_(tokenizer),
      config_(config),
      context_length_(config.context_length > 0 ? config.context_length
                                                : model.config().n_ctx_train),
      pool_(config.threads > 0 ? config.threads : ThreadPool::default_threads()),
      step_cost_(config.max_batch_tokens),
      dry_breakers_(tokenizer) {
    if (config_.max_sequences < 1) fail("the engine needs room for at least one sequence");
    if (config_.max_batch_tokens < 1) fail("--max-batch-tokens must be at least 1");
    // Refuse a context the model cannot take, or one that memory cannot hold, before allocating.
    check_memory_plan(plan_memory(model.config(), model.weight_bytes(), config_), model.config(),
                      available_memory_bytes());
    const KvCacheShape shape = model.kv_shape();
    const int64_t blocks_per_seq = (context_length_ + config_.block_size - 1) / config_.block_size;
    int64_t n_blocks = blocks_per_seq * config_.max_sequences;
    if (config_.kv_bytes > 0) {
        n_blocks = KvCache::blocks_for_budget(shape, config_.kv_type, config_.block_size,
                                              config_.kv_bytes);
        if (n_blocks < 1) fail("a KV-cache budget of {} bytes holds no block", config_.kv_bytes);
    }
    const CalibrationTokens calibration = calibration_tokens(tokenizer);
    kv_ = std::make_unique<KvCache>(shape, config_.kv_type, n_blocks, config_.block_size,
                                    key_calibration(model, config_.kv_type, calibration, pool_));
    blocks_ = std::make_unique<BlockPool>(n_blocks, config_.prefix_caching);
    scheduler_ = std::make_unique<Scheduler>(*blocks_, config_.block_size, config_.max_batch_tokens,
                                             config_.max_sequences);
    // Logits rows: one per sequence in a step, at most one per batch token.
    state_ = std::make_unique<RunState>(model.config(), config_.max_batch_tokens,
                                        config_.max_batch_tokens);
    batch_.tokens.reserve(config_.max_batch_tokens);
    drafter_ = make_drafter(config_.speculation,
                            {&model, &pool_, n_blocks, config_.block_size, config_.max_batch_tokens,
                             config_.max_sequences, config_.kv_type, &calibration});
    draft_requests_.reserve(static_cast<size_t>(config_.max_sequences));
}

Engine::~Engine() = default;

Engine::Active& Engine::active(int64_t seq_id) const {
    auto it = sequences_.find(seq_id);
    if (it == sequences_.end()) fail("unknown sequence {}", seq_id);
    return *it->second;
}

const Sequence& Engine::sequence(int64_t seq_id) const {
    return active(seq_id).seq;
}

static void check_params(const GenerationParams& p, int32_t n_vocab) {
    p.sampling.validate(n_vocab);
    if (p.max_tokens <= 0)
        fail("the number of tokens to generate must be positive, got {}", p.max_tokens);
    for (const std::string& s : p.stop)
        if (s.empty()) fail("a stop string must not be empty");
}

void Engine::check_constraint(const GenerationParams& p) const {
    if (p.constraint && p.constraint->vocab->bytes.size() != tokenizer_.n_vocab())
        fail(
            "the output constraint was compiled for a vocabulary of {} tokens, not this "
            "model's {}",
            p.constraint->vocab->bytes.size(), tokenizer_.n_vocab());
}

static void check_tokens(const std::vector<int32_t>& tokens, int32_t n_vocab) {
    for (int32_t t : tokens)
        if (t < 0 || t >= n_vocab)
            fail("token id {} is outside the vocabulary (0..{})", t, n_vocab - 1);
}

// A sequence holds at most `most` tokens (Engine::most_cached); one that could never fit in
// the whole KV cache is refused now instead of waiting forever.
static void check_capacity(int64_t n_tokens, int64_t max_tokens, int64_t most, int64_t capacity) {
    if (most > capacity)
        fail(
            "the request needs up to {} tokens of KV cache ({} in the prompt + {} to generate)"
            ", more than the whole cache holds ({} tokens)",
            most, n_tokens, max_tokens, capacity);
}

void Engine::check_window(const KvWindow& w) const {
    check_window(w, context_length_, kv_capacity_tokens(), config_.block_size);
}

void Engine::check_window(const KvWindow& w, int64_t context_length, int64_t capacity_tokens,
                          int64_t block_size) {
    if (w.window < 0 || w.sinks < 0) fail("a KV window and its sinks cannot be negative");
    if (!w.enabled()) {
        if (w.sinks > 0) fail("attention sinks need a KV window");
        return;
    }
    if (w.window < w.sinks)
        fail("a KV window of {} tokens is smaller than its {} sinks", w.window, w.sinks);
    // Positions within the cache stay below what the context allows.
    if (w.window + w.sinks > context_length)
        fail("a KV window of {} tokens with {} sinks does not fit in the context of {} tokens",
             w.window, w.sinks, context_length);
    const int64_t needed = w.peak_blocks(block_size) * block_size;
    if (needed > capacity_tokens)
        fail(
            "a KV window of {} tokens with {} sinks needs up to {} tokens of KV cache, more "
            "than the whole cache holds ({} tokens)",
            w.window, w.sinks, needed, capacity_tokens);
}

KvWindow Engine::widest_window(int64_t sinks) const {
    // The peak exceeds the window by a few blocks at most.
    for (int64_t w = context_length_ - sinks; w >= std::max<int64_t>(sinks, 1); --w) {
        const KvWindow window{w, sinks};
        if (window.peak_blocks(config_.block_size) * config_.block_size <= kv_capacity_tokens())
            return window;
    }
    return {};
}

int64_t Engine::most_cached(int64_t n_tokens, const GenerationParams& params) const {
    const KvWindow& w = params.kv_window;
    if (!w.enabled()) return std::min(n_tokens + params.max_tokens, context_length_);
    return std::min(n_tokens + params.max_tokens,
                    w.peak_blocks(config_.block_size) * config_.block_size);
}

void Engine::validate(const std::vector<int32_t>& prompt, const GenerationParams& params) const {
    const auto n_vocab = static_cast<int32_t>(model_.config().n_vocab);
    if (prompt.empty()) fail("the prompt is empty");
    check_window(params.kv_window);
    // A window lets a prompt run past the context, like the output.
    if (!params.kv_window.enabled() && static_cast<int64_t>(prompt.size()) >= context_length_)
        fail("the prompt has {} tokens, which does not leave room in the context of {} tokens",
             prompt.size(), context_length_);
    check_tokens(prompt, n_vocab);
    check_params(params, n_vocab);
    check_constraint(params);
    check_capacity(static_cast<int64_t>(prompt.size()), params.max_tokens,
                   most_cached(static_cast<int64_t>(prompt.size()), params), kv_capacity_tokens());
}

// Reserves all a sequence can grow to in this turn, so decode steps do not allocate (a
// windowed sequence's tokens past the context grow as a vector does).
static void reserve_turn(Sequence& s, int64_t max_tokens, int64_t context_length,
                         int64_t block_size) {
    const int64_t n = static_cast<int64_t>(s.tokens.size());
    const auto most = static_cast<size_t>(std::min(n + max_tokens, std::max(n, context_length)));
    const size_t blocks = (most + block_size - 1) / block_size;
    s.tokens.reserve(most);
    s.block_table.reserve(blocks);
    s.block_hashes.reserve(blocks);
    s.window_state.sink_sources.reserve(static_cast<size_t>(s.window.sink_blocks(block_size)));
}

// The DRY breaker flags a sampler needs (none when DRY is off).
std::shared_ptr<const std::vector<uint8_t>> Engine::breakers_for(const SamplingParams& s) {
    return s.dry_on() ? dry_breakers_.flags(s.dry_sequence_breakers) : nullptr;
}

int64_t Engine::submit(const std::vector<int32_t>& prompt, const GenerationParams& params) {
    validate(prompt, params);
    const auto n_vocab = static_cast<int32_t>(model_.config().n_vocab);
    auto a = std::make_unique<Active>(tokenizer_, params, n_vocab, config_.speculation,
                                      breakers_for(params.sampling));
    a->seq.id = next_id_++;
    a->seq.tokens = prompt;
    a->seq.n_prompt = static_cast<int64_t>(prompt.size());
    a->seq.window = params.kv_window;
    reserve_turn(a->seq, params.max_tokens, context_length_, config_.block_size);
    scheduler_->add(a->seq);
    const int64_t id = a->seq.id;
    sequences_.emplace(id, std::move(a));
    return id;
}

void Engine::extend(int64_t seq_id, const std::vector<int32_t>& tokens,
                    const GenerationParams& params) {
    Active& a = active(seq_id);
    if (!a.seq.finished()) fail("sequence {} is still running", seq_id);
    if (tokens.empty()) fail("nothing to add to sequence {}", seq_id);
    const auto n_vocab = static_cast<int32_t>(model_.config().n_vocab);
    check_tokens(tokens, n_vocab);
    check_params(params, n_vocab);
    check_constraint(params);
    check_window(params.kv_window);
    if (a.seq.window_state.evicted > 0 && params.kv_window != a.seq.window)
        fail("sequence {} has evicted tokens: its KV window cannot change", seq_id);
    const auto n_tokens = static_cast<int64_t>(a.seq.tokens.size() + tokens.size());
    if (!params.kv_window.enabled() && n_tokens >= context_length_)
        fail("the conversation would exceed the context of {} tokens", context_length_);
    check_capacity(n_tokens, params.max_tokens, most_cached(n_tokens, params),
                   kv_capacity_tokens());
    a.seq.window = params.kv_window;
    a.seq.tokens.insert(a.seq.tokens.end(), tokens.begin(), tokens.end());
    a.seq.n_prompt = static_cast<int64_t>(a.seq.tokens.size());
    a.seq.n_generated = 0;
    a.seq.finish = FinishReason::None;
    a.params = params;
    a.sampler = Sampler(params.sampling, n_vocab, breakers_for(params.sampling));
    a.start_turn();
    a.decoder.reset();
    a.held.clear();
    reserve_turn(a.seq, params.max_tokens, context_length_, config_.block_size);
    scheduler_->add(a.seq);
}

void Engine::release(int64_t seq_id) {
    Active& a = active(seq_id);
    scheduler_->remove(a.seq);
    if (drafter_) drafter_->release(seq_id);
    sequences_.erase(seq_id);
}

bool Engine::has_work() const {
    return !scheduler_->idle();
}

// A sequence with one token to compute next, the one sampled last.
static bool decoding(const Sequence& s) {
    return !s.finished() && s.n_generated > 0 && s.n_pending() == 1;
}

// Asks the drafter for the next tokens of every decoding sequence that speculates, within
// what it may still generate (one token always comes from the model itself) and the context.
// Each sequence's length is chosen knowing what the step's pass holds already: every
// decoding sequence's token, and the drafts of the sequences before it.
void Engine::propose_drafts() {
    if (!drafter_) return;
    draft_requests_.clear();
    StepPlan plan;
    for (auto& [id, a] : sequences_) plan.tokens += decoding(a->seq);
    plan.yield = static_cast<double>(plan.tokens);
    for (auto& [id, a] : sequences_) {
        Sequence& s = a->seq;
        s.draft.clear();
        if (!decoding(s) || !a->params.speculative) continue;
        const int64_t room = std::min(a->params.max_tokens - s.n_generated - 1,
                                      context_length_ - static_cast<int64_t>(s.tokens.size()));
        const int64_t n = a->draft_length.next(step_cost_, plan, room);
        if (n > 0) draft_requests_.push_back({s.id, s.tokens, n, &s.draft});
    }
    if (!draft_requests_.empty()) drafter_->propose(draft_requests_);
}

void Engine::build_batch() {
    batch_.clear();
    for (const ScheduledChunk& c : scheduled_) {
        Sequence& s = *c.seq;
        const int64_t n_verified = c.n_tokens - c.n_draft;
        const int64_t block = config_.block_size, start = s.cache_position(s.n_computed, block);
        BatchSequence bs;
        bs.query_start = static_cast<int64_t>(batch_.tokens.size());
        bs.query_len = c.n_tokens;
        bs.context_len = start + c.n_tokens;
        bs.block_table = s.block_table.data();
        bs.first = s.window.first_cached(s.window_state.evicted, block);
        bs.rope_offset = s.n_computed - start;
        for (int64_t i = 0; i < c.n_tokens; ++i) {
            const int64_t pos = s.n_computed + i, at = start + i;
            batch_.tokens.push_back(i < n_verified ? s.tokens[pos] : s.draft[i - n_verified]);
            batch_.positions.push_back(at);
            batch_.slots.push_back(int64_t{s.block_table[at / block]} * block + at % block);
        }
        // Logits only where a token will be sampled: the last token of a finished prompt, and
        // each draft token (its row verifies the next draft token, or gives the bonus token).
        if (s.n_computed + n_verified == static_cast<int64_t>(s.tokens.size()))
            for (int64_t i = n_verified - 1; i < c.n_tokens; ++i)
                batch_.logits_rows.push_back(bs.query_start + i);
        batch_.sequences.push_back(bs);
    }
}

// Emits the part of the held text that cannot be the start of a stop string.
static size_t safe_prefix(const std::string& held, const std::vector<std::string>& stops) {
    size_t keep = 0;
    for (const std::string& stop : stops)
        for (size_t n = std::min(stop.size() - 1, held.size()); n > keep; --n)
            if (held.compare(held.size() - n, n, stop, 0, n) == 0) {
                keep = n;
                break;
            }
    return held.size() - keep;
}

void Engine::finish_text(Active& a, int32_t token, TokenEvent& ev) {
    Sequence& s = a.seq;
    if (!a.params.ignore_eos && tokenizer_.is_end_of_generation(token)) {
        ev.text = a.held + a.decoder.finish();
        // An output its constraint closed to fit the budget was cut short: say so.
        s.finish = a.constraint && a.constraint->closing() ? FinishReason::MaxTokens
                                                           : FinishReason::EndOfText;
        return;
    }
    a.held += a.decoder.push(token);
    for (const std::string& stop : a.params.stop) {
        size_t at = a.held.find(stop);
        if (at != std::string::npos) {
            ev.text = a.held.substr(0, at);
            s.finish = FinishReason::StopString;
            return;
        }
    }
    if (s.n_generated >= a.params.max_tokens) s.finish = FinishReason::MaxTokens;
    if (!s.window.enabled() && static_cast<int64_t>(s.tokens.size()) >= context_length_)
        s.finish = FinishReason::ContextFull;
    if (s.finished()) a.held += a.decoder.finish();
    const size_t n = s.finished() ? a.held.size() : safe_prefix(a.held, a.params.stop);
    ev.text = a.held.substr(0, n);
    a.held.erase(0, n);
}

namespace {

// Branch-free, so it vectorises: a logits row is read once more, a few microseconds.
bool all_finite(std::span<const float> row) {
    uint32_t bad = 0;
    for (float x : row) {
        uint32_t bits;
        std::memcpy(&bits, &x, sizeof bits);
        bad |= (bits & 0x7f800000u) == 0x7f800000u;
    }
    return bad == 0;
}

}  // namespace

void Engine::emit(Active& a, int32_t token, std::span<const float> row_logits) {
    Sequence& s = a.seq;
    s.tokens.push_back(token);
    s.n_generated++;
    stats_.generated_tokens++;
    TokenEvent& ev = events_.emplace_back();
    ev.seq_id = s.id;
    ev.token = token;
    if (a.params.logprobs >= 0) {
        // The sampler left the logits after bias and penalties in row_logits.
        ev.logprob = row_logits[token] - log_sum_exp(row_logits);
        ev.top_logprobs.resize(static_cast<size_t>(a.params.logprobs));
        ev.top_logprobs.resize(top_logprobs(row_logits, ev.top_logprobs).size());
    }
    finish_text(a, token, ev);
    ev.finish = s.finish;
}

// The tokens the sequence may still emit, this one included: max_tokens, and the context
// unless a window slides.
int64_t Engine::tokens_left(const Active& a) const {
    const Sequence& s = a.seq;
    const int64_t left = a.params.max_tokens - s.n_generated;
    if (s.window.enabled()) return left;
    return std::min(left, context_length_ - static_cast<int64_t>(s.tokens.size()));
}

// Samples the token after the verified ones from the first of `rows`; with a draft, row i
// follows draft[0..i), so while the sampler keeps drafting's guesses the next row applies,
// and the first disagreement (its replacement token) or the last row (a bonus token) ends
// the step. Returns the number of draft tokens kept.
int64_t Engine::sample_tokens(Active& a, const ScheduledChunk& c, const float* rows) {
    Sequence& s = a.seq;
    const int64_t n_vocab = model_.config().n_vocab;
    int64_t accepted = 0;
    for (int64_t i = 0; i <= c.n_draft; ++i) {
        std::span<float> row(const_cast<float*>(rows) + i * n_vocab, n_vocab);
        // Sampling from NaN would pick an arbitrary token, and a constraint that allows
        // nothing leaves nothing to pick: either stops this sequence with an error.
        if (!all_finite(row))
            s.finish = FinishReason::NonFinite;
        else if (a.constraint && !a.constraint->mask_logits(row, a.params.sampling.logit_bias))
            s.finish = FinishReason::NoAllowedToken;
        if (s.finished()) {
            TokenEvent& ev = events_.emplace_back();
            ev.seq_id = s.id;
            ev.finish = s.finish;
            break;
        }
        // s.tokens holds the tokens accepted so far, so the penalties see them.
        DraftVerdict v = i < c.n_draft ? verify_draft_token(a.sampler, row, s.tokens, s.draft[i])
                                       : DraftVerdict{a.sampler.sample(row, s.tokens), false};
        if (a.constraint && !a.constraint->accept_within(v.token, tokens_left(a))) {
            // After this token the output could not be closed in the tokens left: it takes
            // the shortest way to its end instead, so it still parses.
            if (a.constraint->close(row, a.params.sampling.logit_bias))
                v = {a.sampler.sample(row, s.tokens), false};
            a.constraint->accept(v.token);
        }
        emit(a, v.token, row);
        if (!v.accepted) break;
        accepted++;
        if (s.finished()) break;
        s.n_computed++;  // its keys and values, written in this pass, are now verified
    }
    if (c.n_draft > 0) {
        stats_.drafted_tokens += c.n_draft;
        stats_.accepted_tokens += accepted;
        a.draft_length.update(c.n_draft, accepted);
    }
    s.draft.clear();
    return accepted;
}

void Engine::after_forward(const float* logits) {
    const int64_t n_vocab = model_.config().n_vocab;
    size_t row = 0;
    for (const ScheduledChunk& c : scheduled_) {
        Sequence& s = *c.seq;
        s.n_computed += c.n_tokens - c.n_draft;
        if (s.n_computed == static_cast<int64_t>(s.tokens.size())) {  // not a prompt chunk
            sample_tokens(active(s.id), c, logits + row * n_vocab);
            row += static_cast<size_t>(c.n_draft) + 1;
        }
        // Rejected draft tokens leave the cache: their blocks go back to the pool (their
        // slots in a kept block are overwritten when the position is computed again), and
        // only blocks full of verified tokens are offered to the prefix cache.
        scheduler_->drop_blocks_past_computed(s);
        scheduler_->publish_full_blocks(s);
        // A finished sequence leaves the running set; its blocks go back unless kept.
        // A sequence stopped by non-finite logits keeps nothing: its cache may hold the cause.
        if (s.finished()) {
            const bool keep = !is_error(s.finish) && active(s.id).params.keep_cache;
            scheduler_->finish(s, keep);
            if (!keep && drafter_) drafter_->release(s.id);
        }
    }
}

const std::vector<TokenEvent>& Engine::step() {
    events_.clear();
    // Drafting is part of the step's time: a draft model's passes are not free.
    const auto start = std::chrono::steady_clock::now();
    propose_drafts();
    scheduler_->schedule(scheduled_);
    // A preempted sequence is recomputed from scratch; its draft cache goes with it.
    if (drafter_)
        for (int64_t id : scheduler_->preempted()) drafter_->release(id);
    if (scheduled_.empty()) {
        // Nothing runs, so the waiting sequence cannot get a block: the rest are held by
        // finished sequences kept for their next turn (keep_cache).
        if (!scheduler_->idle())
            fail("the KV cache ({} blocks of {} tokens) is held by kept sequences; release some",
                 blocks_->n_blocks(), config_.block_size);
        return events_;
    }
    // A window that slid moved its sinks: their keys are rotated before anyone attends.
    for (const ScheduledChunk& c : scheduled_)
        refresh_sinks(model_.config(), *kv_, c.seq->window, c.seq->window_state,
                      c.seq->block_table);
    build_batch();
    const float* logits = model_.forward(batch_, *kv_, *state_, pool_);
    int64_t prompt_tokens = 0;
    for (const ScheduledChunk& c : scheduled_)
        if (c.seq->n_pending() > 1 || c.seq->n_computed < c.seq->n_prompt)
            prompt_tokens += c.n_tokens;
    after_forward(logits);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    // A draft model that caught up on a prompt or a pause did work beyond this step's size.
    if (prompt_tokens == 0 && !(drafter_ && drafter_->caught_up()))
        step_cost_.record(static_cast<int64_t>(batch_.tokens.size()), seconds);
    stats_.prompt_tokens += prompt_tokens;
    (prompt_tokens > 0 ? stats_.prompt_seconds : stats_.decode_seconds) += seconds;
    return events_;
}

}  // namespace kite
