#include "kv/kv_window.h"

#include <algorithm>
#include <limits>

namespace kite {

int64_t KvWindow::first_window_block(int64_t position, int64_t block_size) const {
    return std::max<int64_t>(0, position - window + 1) / block_size;
}

int64_t KvWindow::evicted(int64_t position, int64_t block_size) const {
    if (!enabled()) return 0;
    return std::max<int64_t>(0, first_window_block(position, block_size) * block_size - sinks);
}

// The window moves on one block at a time; the first move that evicts anything is the one
// whose window starts past the sinks' last block.
int64_t KvWindow::tokens_until_slide(int64_t position, int64_t block_size) const {
    if (!enabled()) return std::numeric_limits<int64_t>::max() / 4;
    const int64_t next =
        std::max(first_window_block(position, block_size) + 1, sinks / block_size + 1);
    return next * block_size + window - 1 - position;
}

int64_t KvWindow::first_slide(int64_t block_size) const {
    return (sinks / block_size + 1) * block_size + window - 1;
}

int64_t KvWindow::first_cached(int64_t n_evicted, int64_t block_size) const {
    return n_evicted > 0 ? sink_blocks(block_size) * block_size - sinks : 0;
}

int64_t KvWindow::rope_offset(int64_t n_evicted, int64_t block_size) const {
    return n_evicted > 0 ? n_evicted + sinks - sink_blocks(block_size) * block_size : 0;
}

int64_t KvWindow::peak_blocks(int64_t block_size) const {
    const int64_t bs = block_size, n_sink = sink_blocks(bs);
    const int64_t first = first_slide(bs);
    const int64_t before = (first + bs - 1) / bs + n_sink;
    // The widest window: the last token before the next slide, from any window start b.
    const int64_t b = first_window_block(first, bs);
    const int64_t last = (b + 1) * bs + window - 2;
    const int64_t after = 2 * n_sink + last / bs - b + 1;
    return std::max(before, after);
}

}  // namespace kite
