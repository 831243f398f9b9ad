#include "kv/window_table.h"

namespace kite {

int64_t blocks_to_slide(const KvWindow& w, int64_t block_size, int64_t position,
                        const WindowState& s) {
    const bool first = s.evicted == 0 && w.evicted(position, block_size) > 0;
    return first ? w.sink_blocks(block_size) : 0;
}

bool slide_window(const KvWindow& w, int64_t block_size, int64_t position,
                  std::vector<int32_t>& table, WindowState& s, BlockPool& pool) {
    const int64_t target = w.evicted(position, block_size);
    if (target == s.evicted) return true;
    const int64_t n_sink = w.sink_blocks(block_size);
    if (pool.n_free() < blocks_to_slide(w, block_size, position, s)) return false;
    // Blocks [n_sink, n_sink + gone) of the table leave: on the first slide, the sequence's
    // own blocks from the one after the sinks' to the window's first; later, the oldest
    // window blocks.
    int64_t gone = (target + w.sinks) / block_size - (s.evicted + w.sinks) / block_size;
    if (s.evicted == 0) {
        gone = (target + w.sinks) / block_size - n_sink;
        for (int64_t i = 0; i < n_sink; ++i) {
            s.sink_sources.push_back(table[i]);
            table[i] = pool.allocate();
        }
    }
    const auto begin = table.begin() + n_sink;
    for (auto it = begin; it != begin + gone; ++it) pool.release(*it);
    table.erase(begin, begin + gone);
    s.evicted = target;
    s.sinks_stale = w.sinks > 0;
    return true;
}

void release_window(WindowState& s, BlockPool& pool) {
    for (int32_t block : s.sink_sources) pool.release(block);
    s.sink_sources.clear();  // keeps its capacity for the next slide
    s.evicted = 0;
    s.sinks_stale = false;
}

}  // namespace kite
