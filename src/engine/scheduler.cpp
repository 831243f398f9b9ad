#include "engine/scheduler.h"

#include <algorithm>

namespace kite {

bool Scheduler::reserve(Sequence& seq, int64_t n_tokens) {
    const int64_t needed = (seq.n_computed + n_tokens + block_size_ - 1) / block_size_;
    while (static_cast<int64_t>(seq.block_table.size()) < needed) {
        const int32_t block = blocks_.allocate();
        if (block < 0) return false;
        seq.block_table.push_back(block);
    }
    return true;
}

void Scheduler::release(Sequence& seq) {
    for (int32_t block : seq.block_table) blocks_.release(block);
    seq.block_table.clear();
}

void Scheduler::schedule(const std::vector<Sequence*>& active, std::vector<ScheduledChunk>& out) {
    out.clear();
    int64_t budget = max_batch_tokens_;
    // Decodes first: a running sequence is never stalled behind someone's long prompt.
    for (Sequence* seq : active) {
        if (seq->finished() || seq->n_pending() != 1 || budget == 0) continue;
        if (reserve(*seq, 1)) out.push_back({seq, 1}), budget--;
    }
    for (Sequence* seq : active) {
        if (seq->finished() || seq->n_pending() <= 1 || budget == 0) continue;
        const int64_t n = std::min(seq->n_pending(), budget);
        if (reserve(*seq, n)) out.push_back({seq, n}), budget -= n;
    }
}

}  // namespace kite
