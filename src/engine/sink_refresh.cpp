#include "engine/sink_refresh.h"

namespace kite {

void refresh_sinks(const ModelConfig& model, KvCache& kv, const KvWindow& w, WindowState& s,
                   const std::vector<int32_t>& block_table) {
    if (!s.sinks_stale) return;
    const int64_t bs = kv.block_size(), first = w.first_cached(s.evicted, bs);
    // Sink j was written at position j; its copy sits at cache position first + j, whose
    // RoPE position is first + j + rope_offset = j + evicted.
    for (int64_t j = 0; j < w.sinks; ++j) {
        const int64_t from = int64_t{s.sink_sources[j / bs]} * bs + j % bs;
        const int64_t at = first + j;
        const int64_t to = int64_t{block_table[at / bs]} * bs + at % bs;
        for (int64_t l = 0; l < model.n_layers; ++l)
            kv.copy_rotated(l, from, j, to, model.layers[l].rope, s.evicted);
    }
    s.sinks_stale = false;
}

}  // namespace kite
