// A sequence's block table under a KvWindow (kv/kv_window.h): which blocks a slide frees and
// which it allocates. The sinks' keys and values are rewritten by the caller, who knows the
// model's RoPE (engine/sink_refresh.h).
#pragma once

#include <cstdint>
#include <vector>

#include "kv/block_pool.h"
#include "kv/kv_window.h"

namespace kite {

struct WindowState {
    int64_t evicted = 0;                // tokens evicted so far
    std::vector<int32_t> sink_sources;  // the blocks the sinks were first written to
    bool sinks_stale = false;           // the sink copies must be rewritten before attention
};

// Brings `table` (blocks for the tokens before `position`) to what the token at `position`
// sees: frees the blocks the window has passed (a shared or cached one is only released)
// and, on the first slide, takes blocks for the sink copies. False, with nothing changed,
// when those cannot be allocated.
bool slide_window(const KvWindow& w, int64_t block_size, int64_t position,
                  std::vector<int32_t>& table, WindowState& s, BlockPool& pool);

// Blocks slide_window(position) allocates: the sink copies, on the first slide.
int64_t blocks_to_slide(const KvWindow& w, int64_t block_size, int64_t position,
                        const WindowState& s);

// Releases the sink sources and forgets the slides (the table is the caller's to release).
void release_window(WindowState& s, BlockPool& pool);

}  // namespace kite
