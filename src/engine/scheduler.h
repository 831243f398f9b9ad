// Chooses what each engine step computes: every running decode first (one token each),
// then prefill chunks of waiting prompts, first come first served, within the step's
// token budget and the free KV blocks.
#pragma once

#include <cstdint>
#include <deque>
#include <vector>

#include "engine/sequence.h"
#include "kv/block_pool.h"

namespace kite {

struct ScheduledChunk {
    Sequence* seq;
    int64_t n_tokens;  // tokens of seq->tokens from seq->n_computed on
};

class Scheduler {
  public:
    Scheduler(BlockPool& blocks, int64_t block_size, int64_t max_batch_tokens)
        : blocks_(blocks), block_size_(block_size), max_batch_tokens_(max_batch_tokens) {}

    // Picks chunks from `active` (in admission order) and grows their block tables to fit.
    // A sequence that needs a block when none is free is left out of this step.
    void schedule(const std::vector<Sequence*>& active, std::vector<ScheduledChunk>& out);

    // Returns all of a sequence's blocks to the pool.
    void release(Sequence& seq);

  private:
    bool reserve(Sequence& seq, int64_t n_tokens);

    BlockPool& blocks_;
    int64_t block_size_;
    int64_t max_batch_tokens_;
};

}  // namespace kite
