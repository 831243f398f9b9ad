// After a sequence's KV window slides (kv/kv_window.h), its attention sinks move: their
// copies at the start of the block table are rewritten from the blocks the sinks were first
// written to, their keys rotated by the tokens evicted so far, each layer with its own RoPE.
#pragma once

#include <vector>

#include "kv/kv_cache.h"
#include "kv/window_table.h"
#include "model/model_config.h"

namespace kite {

// Does nothing unless s.sinks_stale; clears it.
void refresh_sinks(const ModelConfig& model, KvCache& kv, const KvWindow& w, WindowState& s,
                   const std::vector<int32_t>& block_table);

}  // namespace kite
