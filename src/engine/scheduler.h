// Chooses what each engine step computes (continuous batching):
//   1. every running decode (one token each), in admission order;
//   2. the next prefill chunks of running sequences whose prompt is not done yet;
//   3. new sequences from the waiting queue, first come first served, while fewer than
//      max_running run; a prompt whose first blocks are in the prefix cache skips them;
//   4. the draft tokens of speculating decodes (seq.draft), trimmed to what is left, so they
//      never delay the others or cause a preemption.
// All within the step's token budget and the free KV blocks. When a running sequence needs
// a block and none is free, the most recently admitted running sequence is preempted: its
// blocks are released (full ones stay in the prefix cache), its tokens are kept, and it
// goes back to the front of the waiting queue, to be recomputed when admitted again.
// A sequence with a KV window (kv/kv_window.h) frees the blocks its window has passed
// before it grows, and its chunks stop where the window slides next, so a recompute sees
// what the first computation saw.
#pragma once

#include <cstdint>
#include <deque>
#include <vector>

#include "engine/sequence.h"
#include "kv/block_pool.h"

namespace kite {

struct ScheduledChunk {
    Sequence* seq;
    int64_t n_tokens;     // tokens from seq->n_computed on: of seq->tokens, then n_draft
    int64_t n_draft = 0;  // of them, tokens of seq->draft (the first n_draft; it is trimmed)
};

class Scheduler {
  public:
    Scheduler(BlockPool& blocks, int64_t block_size, int64_t max_batch_tokens, int64_t max_running);

    // Queues a sequence (new, or a finished one given more tokens) at the end of the
    // waiting queue.
    void add(Sequence& seq);
    // Takes a sequence out of the queues and releases its blocks (cancel, or forget).
    void remove(Sequence& seq);
    // A running sequence finished: it leaves the running set; its blocks are released
    // unless kept (then they stay with it, e.g. for the next chat turn).
    void finish(Sequence& seq, bool keep_blocks);

    // Picks this step's chunks and grows their block tables to fit.
    void schedule(std::vector<ScheduledChunk>& out);
    // After the forward pass advanced seq.n_computed: offers its newly full blocks to the
    // prefix cache.
    void publish_full_blocks(Sequence& seq);

    // Returns all of a sequence's blocks to the pool.
    void release(Sequence& seq);
    // Returns the blocks past seq.n_computed tokens (those only held rejected draft tokens),
    // so the block table is what it would be had the sequence never drafted.
    void drop_blocks_past_computed(Sequence& seq);

    int64_t n_running() const { return static_cast<int64_t>(running_.size()); }
    int64_t n_waiting() const { return static_cast<int64_t>(waiting_.size()); }
    bool idle() const { return running_.empty() && waiting_.empty(); }
    // Ids of the sequences the last schedule() preempted.
    const std::vector<int64_t>& preempted() const { return preempted_; }

    struct Stats {
        int64_t preemptions = 0;
        int64_t prefix_queries = 0;  // prompt tokens looked up in the prefix cache
        int64_t prefix_hits = 0;     // of those, tokens found (their prefill skipped)
    };
    const Stats& stats() const { return stats_; }

  private:
    bool slide(Sequence& seq);  // evicts what its window has passed (kv/window_table.h)
    bool reserve(Sequence& seq, int64_t n_tokens);
    int64_t tokens_that_fit(const Sequence& seq) const;
    uint64_t block_hash(Sequence& seq, size_t block);
    int64_t take_cached_prefix(Sequence& seq);
    void preempt(Sequence& seq, std::vector<ScheduledChunk>& out, int64_t& budget);
    bool admit(Sequence& seq, std::vector<ScheduledChunk>& out, int64_t& budget);
    int64_t fit_draft(Sequence& seq, int64_t budget);
    void add_drafts(std::vector<ScheduledChunk>& out, int64_t budget);

    BlockPool& blocks_;
    int64_t block_size_;
    int64_t max_batch_tokens_;
    int64_t max_running_;
    std::vector<Sequence*> running_;  // admission order
    std::deque<Sequence*> waiting_;
    std::vector<int64_t> preempted_;
    Stats stats_;
};

}  // namespace kite
