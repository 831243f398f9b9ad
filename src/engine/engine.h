// The engine: owns the KV cache, the thread pool and the sequences, and advances every
// active sequence by one step per call, all of them through one batched forward pass.
//
//   scheduled = scheduler.schedule()   decodes first, then prefill chunks (token budget),
//                                      admission from the waiting queue, preemption
//   batch     = build_batch(scheduled) flat token arrays, slot mapping, block tables
//   logits    = model.forward(batch)
//   tokens    = sample per sequence    then stop checks and streamed text
//
// With speculative decoding (EngineConfig::speculation), each decoding sequence first asks
// the drafter for a few tokens; they ride in the same batch after its pending token, with a
// logits row each, and the sampler keeps the prefix it agrees with plus one token of its
// own, so a step can emit several tokens per sequence. Rejected positions leave the block
// table; the prefix cache only ever sees verified tokens.
//
// A sequence with a KV window (GenerationParams::kv_window, kv/kv_window.h) keeps its
// attention sinks and its last tokens and runs on past the context: the scheduler frees the
// blocks its window passes, and before the forward pass the engine rewrites the sinks the
// window moved (engine/sink_refresh.h).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/thread_pool.h"
#include "engine/drafter.h"
#include "engine/dry_breakers.h"
#include "engine/generation_params.h"
#include "engine/scheduler.h"
#include "engine/sequence.h"
#include "engine/step_cost.h"
#include "kv/block_pool.h"
#include "kv/kv_cache.h"
#include "model/model.h"
#include "sampling/logprobs.h"
#include "sampling/sampler.h"
#include "tokenizer/streaming_decoder.h"
#include "tokenizer/tokenizer.h"

namespace kite {

struct EngineConfig {
    int threads = 0;                 // 0: one per physical core
    int64_t context_length = 0;      // per sequence; 0: the model's training context
    int64_t max_sequences = 1;       // running at once (more wait); the KV cache is sized for
                                     // this many full contexts unless kv_bytes is set
    size_t kv_bytes = 0;             // KV-cache memory budget; 0: context_length * max_sequences
    KvTypes kv_type;                 // keys and values, f16 by default
    int64_t block_size = 16;         // tokens per KV block
    int64_t max_batch_tokens = 512;  // tokens per forward pass (longer prompts are chunked)
    bool prefix_caching = true;      // reuse cached KV blocks of equal prompt prefixes
    SpeculationConfig speculation;   // speculative decoding (off by default)
    // How embed() pools: None for an encoder's own pooling; a generative model embeds only
    // with one given (its final hidden state, Model::embed).
    Pooling embed_pooling = Pooling::None;
};

// What one step produced for one sequence.
struct TokenEvent {
    int64_t seq_id = 0;
    int32_t token = -1;  // the sampled token
    std::string text;    // new text it completes (stop strings are never included)
    FinishReason finish = FinishReason::None;
    // When GenerationParams::logprobs >= 0: the token's log-probability, and the
    // `logprobs` most likely tokens, most likely first.
    float logprob = 0;
    std::vector<TokenProb> top_logprobs;
};

class Engine {
  public:
    Engine(const Model& model, const Tokenizer& tokenizer, const EngineConfig& config);
    ~Engine();

    // Queues a sequence; it runs when the scheduler admits it. Throws kite::Error for an
    // empty prompt, one longer than the context, invalid parameters, or a request that could
    // never fit in the KV cache (prompt + max_tokens, up to the context, above its capacity).
    int64_t submit(const std::vector<int32_t>& prompt, const GenerationParams& params);
    // The checks submit() makes, without submitting. Reads only what never changes after
    // construction, so other threads may call it while the engine runs.
    void validate(const std::vector<int32_t>& prompt, const GenerationParams& params) const;
    // Throws kite::Error for a KV window a sequence cannot have: negative, smaller than its
    // sinks, sinks without a window, larger than the context with its sinks, or needing
    // more blocks than the whole cache holds (KvWindow::peak_blocks).
    void check_window(const KvWindow& window) const;
    // The same check for an engine of `context_length` tokens and `capacity_tokens` of KV
    // cache in blocks of `block_size`, before there is one (`kite plan`).
    static void check_window(const KvWindow& window, int64_t context_length,
                             int64_t capacity_tokens, int64_t block_size);
    // The widest window with `sinks` sinks that check_window accepts (off when none is).
    KvWindow widest_window(int64_t sinks) const;
    // The most tokens a sequence of `n_tokens` with `params` holds in the cache at once.
    int64_t most_cached(int64_t n_tokens, const GenerationParams& params) const;

    // Continues a finished sequence that was kept (params.keep_cache): `tokens` follow what
    // it has, and only they are run through the model (e.g. the next chat turn).
    void extend(int64_t seq_id, const std::vector<int32_t>& tokens, const GenerationParams& params);

    // Frees a sequence's KV blocks and forgets it (also cancels a running or waiting one).
    void release(int64_t seq_id);

    // Replaces the drafter the configuration named (null turns speculation off); for a
    // drafter the configuration cannot name, e.g. one a test controls.
    void set_drafter(std::unique_ptr<Drafter> drafter) { drafter_ = std::move(drafter); }
    // Null without speculation.
    const Drafter* drafter() const { return drafter_.get(); }

    // Pooled vectors, one of embedding_size() per input (Model::embed, pooled as
    // EngineConfig::embed_pooling says), on the engine's threads: only from the thread that
    // runs step(). Throws kite::Error.
    std::vector<float> embed(std::span<const std::vector<int32_t>> inputs) {
        return model_.embed(inputs, pool_, config_.embed_pooling);
    }
    // An encoder, or a generative model given a pooling.
    bool can_embed() const { return model_.can_embed() || config_.embed_pooling != Pooling::None; }
    int64_t embedding_size() const { return model_.config().n_embd; }

    bool has_work() const;
    // One engine step; the events are valid until the next call.
    const std::vector<TokenEvent>& step();

    const Sequence& sequence(int64_t seq_id) const;
    int64_t context_length() const { return context_length_; }
    const KvCache& kv_cache() const { return *kv_; }
    const BlockPool& block_pool() const { return *blocks_; }
    const Scheduler& scheduler() const { return *scheduler_; }
    // Tokens the KV cache holds in all (blocks * block size).
    int64_t kv_capacity_tokens() const { return blocks_->n_blocks() * config_.block_size; }
    int threads() const { return pool_.size(); }

    // Totals for timing reports.
    struct Stats {
        int64_t prompt_tokens = 0;     // tokens run in prefill chunks
        int64_t generated_tokens = 0;  // tokens sampled
        double prompt_seconds = 0;     // time in steps that ran prefill chunks
        double decode_seconds = 0;     // time in steps that were decode-only
        int64_t drafted_tokens = 0;    // draft tokens verified (speculative decoding)
        int64_t accepted_tokens = 0;   // of those, tokens the model kept
    };
    const Stats& stats() const { return stats_; }

  private:
    struct Active;
    Active& active(int64_t seq_id) const;
    void check_constraint(const GenerationParams& params) const;
    std::shared_ptr<const std::vector<uint8_t>> breakers_for(const SamplingParams& s);
    void propose_drafts();
    void build_batch();
    void after_forward(const float* logits);
    int64_t tokens_left(const Active& a) const;
    int64_t sample_tokens(Active& a, const ScheduledChunk& c, const float* logits);
    void emit(Active& a, int32_t token, std::span<const float> row_logits);
    void finish_text(Active& a, int32_t token, TokenEvent& ev);

    const Model& model_;
    const Tokenizer& tokenizer_;
    EngineConfig config_;
    int64_t context_length_;
    ThreadPool pool_;
    std::unique_ptr<KvCache> kv_;
    std::unique_ptr<BlockPool> blocks_;
    std::unique_ptr<Scheduler> scheduler_;
    std::unique_ptr<RunState> state_;
    std::unique_ptr<Drafter> drafter_;  // null without speculation

    int64_t next_id_ = 0;
    std::unordered_map<int64_t, std::unique_ptr<Active>> sequences_;
    std::vector<ScheduledChunk> scheduled_;
    std::vector<DraftRequest> draft_requests_;
    StepCost step_cost_;  // what drafting more tokens costs, measured (adaptive K)
    DryBreakers dry_breakers_;
    Batch batch_;
    std::vector<TokenEvent> events_;
    Stats stats_;
};

}  // namespace kite
