#include "model/key_calibration_run.h"

#include <algorithm>
#include <vector>

#include "core/error.h"

namespace kite {

KeyCalibration key_calibration(const Model& model, KvTypes types, const CalibrationTokens& tokens,
                               ThreadPool& pool) {
    if (!kv_type_info(types.k).calibrated_keys) return {};
    const ModelConfig& c = model.config();
    const auto n = static_cast<int64_t>(tokens.text.size());
    const auto n_firsts = static_cast<int64_t>(tokens.firsts.size());
    if (n == 0) fail("key calibration needs at least one token");
    // Steps of a few tokens keep the run state small; one logits row per step is the least
    // a forward pass computes. The text fills the first blocks, each first token a block
    // of its own after them.
    constexpr int64_t kStep = 64, kBlock = 16;
    const int64_t text_blocks = (n + kBlock - 1) / kBlock;
    const int64_t n_blocks = text_blocks + n_firsts;
    KvCache kv(model.kv_shape(), TensorType::F32, n_blocks, kBlock);
    std::vector<int32_t> table(static_cast<size_t>(n_blocks));
    for (int64_t b = 0; b < n_blocks; ++b) table[b] = static_cast<int32_t>(b);
    KeyStatistics statistics(c.n_layers, c.n_heads, c.n_kv_heads, c.head_dim);
    RunState state(c, std::max(std::min(kStep, n), n_firsts), 1);
    state.key_statistics = &statistics;
    Batch batch;
    for (int64_t start = 0; start < n; start += kStep) {
        const int64_t count = std::min(kStep, n - start);
        batch.clear();
        for (int64_t i = start; i < start + count; ++i) {
            batch.tokens.push_back(tokens.text[i]);
            batch.positions.push_back(i);
            batch.slots.push_back(i);
        }
        batch.logits_rows.push_back(count - 1);
        batch.sequences.push_back({0, count, start + count, table.data(), 0, 0});
        model.forward(batch, kv, state, pool);
    }
    if (n_firsts > 0) {
        batch.clear();
        for (int64_t i = 0; i < n_firsts; ++i) {
            batch.tokens.push_back(tokens.firsts[i]);
            batch.positions.push_back(0);
            batch.slots.push_back((text_blocks + i) * kBlock);
            batch.sequences.push_back({i, 1, 1, table.data() + text_blocks + i, 0, 0});
        }
        batch.logits_rows.push_back(0);
        model.forward(batch, kv, state, pool);
    }
    return statistics.calibration();
}

}  // namespace kite
