// A draft model: a smaller model with the target's vocabulary guesses the next tokens by
// greedy decoding. Its guesses are deterministic, so the point-mass acceptance keeps the
// output exactly the target's (sampling/speculative_acceptance.h).
//
// It has its own paged KV cache. Per sequence it remembers the tokens its cache holds; on
// each proposal it rolls back to the longest common prefix with the sequence's verified
// tokens (rejected guesses leave), runs what is new, then decodes up to K tokens. All
// sequences of a step share each forward pass: one pass catches up and yields every
// sequence's first guess, each further pass one more guess per sequence, until K or a guess
// the draft model is unsure of (SpeculationConfig::draft_p_min), which is the draft's last.
#pragma once

#include <unordered_map>

#include "engine/drafter.h"
#include "kv/block_pool.h"
#include "kv/kv_cache.h"
#include "model/model.h"

namespace kite {

// Blocks of the draft model's cache: the engine's, and past them, per sequence, room for
// guesses that run up to draft_max - 1 tokens past its verified ones (which the engine's
// cache never holds for long).
int64_t draft_cache_blocks(int64_t engine_blocks, int64_t max_sequences, int64_t block_size,
                           int64_t draft_max);

class ModelDrafter : public Drafter {
  public:
    // Throws kite::Error when `draft`'s vocabulary is not the target's.
    // Reads the config's draft_max, draft_p_min and draft_vocab.
    ModelDrafter(const Model& draft, const DrafterContext& context,
                 const SpeculationConfig& config);

    void propose(std::span<const DraftRequest> requests) override;
    void release(int64_t seq_id) override;
    int64_t blocks_used() const override { return blocks_.n_used(); }
    size_t cache_bytes() const override { return kv_.bytes(); }
    bool caught_up() const override { return caught_up_; }
    const KvCache& kv_cache() const { return kv_; }
    const RunState& run_state() const { return state_; }

  private:
    // What the draft cache holds for one sequence.
    struct Cached {
        std::vector<int32_t> tokens;  // their keys and values are in the cache
        std::vector<int32_t> block_table;
        // The most verified tokens the sequence can have at its next proposal when every step
        // in between asks for one: a step verifies at most its guesses and one token more.
        int64_t steady_bound = 0;
    };
    // A request in flight: the tokens to run are the verified ones, then the guesses.
    struct Work {
        const DraftRequest* request;
        Cached* cached;
        int64_t n_fed = 0;    // tokens of this pass
        bool unsure = false;  // the draft model's last guess fell below p_min: no more
        int32_t token_at(int64_t i) const;
        int64_t n_known() const;
        bool done() const;
    };

    bool prepare(const DraftRequest& r, Cached& c);
    void run_pass();
    void drop_blocks_past(Cached& c, int64_t n_tokens);

    const Model& model_;
    ThreadPool& pool_;
    int64_t block_size_;
    int64_t max_batch_tokens_;
    float log_p_min_;
    int64_t vocab_;  // guesses are among token ids 0 .. vocab_ - 1
    KvCache kv_;
    BlockPool blocks_;
    RunState state_;
    Batch batch_;
    std::unordered_map<int64_t, Cached> cached_;
    std::vector<Work> work_;
    bool caught_up_ = false;
};

}  // namespace kite
