#include "engine/scheduler.h"

#include <algorithm>

namespace kite {

Scheduler::Scheduler(BlockPool& blocks, int64_t block_size, int64_t max_batch_tokens,
                     int64_t max_running)
    : blocks_(blocks),
      block_size_(block_size),
      max_batch_tokens_(max_batch_tokens),
      max_running_(max_running) {
    preempted_.reserve(static_cast<size_t>(max_running));  // so steps do not allocate
}

void Scheduler::add(Sequence& seq) {
    waiting_.push_back(&seq);
}

void Scheduler::remove(Sequence& seq) {
    running_.erase(std::remove(running_.begin(), running_.end(), &seq), running_.end());
    waiting_.erase(std::remove(waiting_.begin(), waiting_.end(), &seq), waiting_.end());
    release(seq);
}

void Scheduler::finish(Sequence& seq, bool keep_blocks) {
    running_.erase(std::remove(running_.begin(), running_.end(), &seq), running_.end());
    if (!keep_blocks) release(seq);
}

void Scheduler::release(Sequence& seq) {
    for (int32_t block : seq.block_table) blocks_.release(block);
    seq.block_table.clear();
    seq.n_published = 0;
    release_window(seq.window_state, blocks_);
}

void Scheduler::drop_blocks_past_computed(Sequence& seq) {
    const int64_t end = seq.cache_position(seq.n_computed, block_size_);
    const auto keep = static_cast<size_t>((end + block_size_ - 1) / block_size_);
    while (seq.block_table.size() > keep) {
        blocks_.release(seq.block_table.back());
        seq.block_table.pop_back();
    }
}

bool Scheduler::slide(Sequence& seq) {
    return slide_window(seq.window, block_size_, seq.n_computed, seq.block_table, seq.window_state,
                        blocks_);
}

bool Scheduler::reserve(Sequence& seq, int64_t n_tokens) {
    if (!slide(seq)) return false;
    const int64_t end = seq.cache_position(seq.n_computed, block_size_) + n_tokens;
    const int64_t needed = (end + block_size_ - 1) / block_size_;
    while (static_cast<int64_t>(seq.block_table.size()) < needed) {
        const int32_t block = blocks_.allocate();
        if (block < 0) return false;
        seq.block_table.push_back(block);
    }
    return true;
}

// A chunk ends where the sequence's window slides next: all its tokens see the same cache.
int64_t Scheduler::tokens_that_fit(const Sequence& seq) const {
    const int64_t blocks = static_cast<int64_t>(seq.block_table.size()) + blocks_.n_free();
    return std::min(blocks * block_size_ - seq.cache_position(seq.n_computed, block_size_),
                    seq.window.tokens_until_slide(seq.n_computed, block_size_));
}

uint64_t Scheduler::block_hash(Sequence& seq, size_t block) {
    while (seq.block_hashes.size() <= block) {
        const size_t i = seq.block_hashes.size();
        const uint64_t parent = i == 0 ? PrefixCache::kRootHash : seq.block_hashes[i - 1];
        const std::span<const int32_t> tokens(seq.tokens.data() + i * block_size_,
                                              static_cast<size_t>(block_size_));
        seq.block_hashes.push_back(PrefixCache::chain_hash(parent, tokens));
    }
    return seq.block_hashes[block];
}

// Once a window has evicted, new blocks hold keys and values computed without the evicted
// tokens: they are not what the same prefix gives anyone else, so they are never offered.
void Scheduler::publish_full_blocks(Sequence& seq) {
    if (!blocks_.prefix_caching() || seq.window_state.evicted > 0) return;
    const int64_t full = seq.n_computed / block_size_;
    for (; seq.n_published < full; ++seq.n_published)
        blocks_.publish(seq.block_table[seq.n_published], block_hash(seq, seq.n_published));
}

// A sequence without blocks takes the cached blocks its tokens start with. The last token
// is always left to compute: its logits give the next token. A windowed sequence takes none
// past its first slide: a block there, cached by a sequence that kept everything, holds
// what its tokens give with the whole prefix, not what the window gives.
int64_t Scheduler::take_cached_prefix(Sequence& seq) {
    if (!blocks_.prefix_caching()) return 0;
    int64_t max_blocks = (static_cast<int64_t>(seq.tokens.size()) - 1) / block_size_;
    if (seq.window.enabled())
        max_blocks = std::min(max_blocks, seq.window.first_slide(block_size_) / block_size_);
    int64_t hit = 0;
    for (; hit < max_blocks; ++hit) {
        const int32_t block = blocks_.acquire_cached(block_hash(seq, hit));
        if (block < 0) break;
        seq.block_table.push_back(block);
    }
    seq.n_computed = hit * block_size_;
    seq.n_published = hit;
    return seq.n_computed;
}

void Scheduler::preempt(Sequence& seq, std::vector<ScheduledChunk>& out, int64_t& budget) {
    auto it = std::find_if(out.begin(), out.end(),
                           [&](const ScheduledChunk& c) { return c.seq == &seq; });
    if (it != out.end()) {
        budget += it->n_tokens;
        out.erase(it);
    }
    running_.erase(std::remove(running_.begin(), running_.end(), &seq), running_.end());
    release(seq);
    seq.n_computed = 0;
    seq.draft.clear();
    waiting_.push_front(&seq);  // victims go newest first, so the oldest ends up in front
    preempted_.push_back(seq.id);
    stats_.preemptions++;
}

bool Scheduler::admit(Sequence& seq, std::vector<ScheduledChunk>& out, int64_t& budget) {
    const bool fresh = seq.block_table.empty();  // a kept (chat) sequence brings its blocks
    const int64_t hit = fresh ? take_cached_prefix(seq) : 0;
    const int64_t n = slide(seq) ? std::min({seq.n_pending(), budget, tokens_that_fit(seq)}) : 0;
    if (n <= 0) {
        if (fresh) release(seq), seq.n_computed = 0;
        return false;
    }
    reserve(seq, n);
    if (fresh && blocks_.prefix_caching()) {
        stats_.prefix_queries += static_cast<int64_t>(seq.tokens.size());
        stats_.prefix_hits += hit;
    }
    running_.push_back(&seq);
    out.push_back({&seq, n});
    budget -= n;
    return true;
}

// Trims a decoding sequence's draft to the budget left and the free blocks, and reserves
// blocks for what remains (the pending token's block is already reserved).
int64_t Scheduler::fit_draft(Sequence& seq, int64_t budget) {
    const int64_t n = std::min({static_cast<int64_t>(seq.draft.size()), budget,
                                std::max<int64_t>(0, tokens_that_fit(seq) - 1)});
    seq.draft.resize(static_cast<size_t>(n));
    reserve(seq, 1 + n);
    return n;
}

void Scheduler::schedule(std::vector<ScheduledChunk>& out) {
    out.clear();
    preempted_.clear();
    int64_t budget = max_batch_tokens_;
    const int64_t preemptions_before = stats_.preemptions;
    // Decodes first: a running sequence is never stalled behind someone's long prompt.
    for (size_t i = 0; i < running_.size() && budget > 0; ++i) {
        Sequence* seq = running_[i];
        if (seq->n_pending() != 1) continue;
        bool scheduled = true;
        while (!reserve(*seq, 1)) {
            Sequence* victim = running_.back();
            preempt(*victim, out, budget);
            if (victim == seq) {
                scheduled = false;
                break;
            }
        }
        if (scheduled) out.push_back({seq, 1}), budget--;
    }
    // Then the next chunks of prompts being prefilled.
    for (size_t i = 0; i < running_.size() && budget > 0; ++i) {
        Sequence* seq = running_[i];
        if (seq->n_pending() <= 1) continue;
        int64_t n = 0;
        bool scheduled = true;
        while (!slide(*seq) ||
               (n = std::min({seq->n_pending(), budget, tokens_that_fit(*seq)})) <= 0) {
            Sequence* victim = running_.back();
            preempt(*victim, out, budget);
            if (victim == seq) {
                scheduled = false;
                break;
            }
        }
        if (!scheduled) break;
        reserve(*seq, n);
        out.push_back({seq, n});
        budget -= n;
    }
    // New sequences, first come first served; none in a step that had to preempt.
    if (stats_.preemptions == preemptions_before) {
        while (budget > 0 && !waiting_.empty() && n_running() < max_running_) {
            if (!admit(*waiting_.front(), out, budget)) break;
            waiting_.pop_front();
        }
    }
    add_drafts(out, budget);
}

// Draft tokens come last, on what the budget and the free blocks leave over, so speculation
// never delays a prefill or an admission and never preempts anyone.
void Scheduler::add_drafts(std::vector<ScheduledChunk>& out, int64_t budget) {
    for (ScheduledChunk& c : out) {
        Sequence& seq = *c.seq;
        if (seq.draft.empty() || c.n_tokens != 1 || seq.n_pending() != 1) continue;
        const int64_t n = fit_draft(seq, budget);
        c.n_tokens += n;
        c.n_draft = n;
        budget -= n;
    }
}

}  // namespace kite
