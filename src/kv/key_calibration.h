// Keys stored centred and scaled per channel, so that 8 or 4 bits per value keep what the
// attention scores need. Some models' keys (Qwen2's, with their large K biases) hold a few
// channels far larger than the rest, mostly the same in every token: one block scale per 32
// values must span them, and the other channels round to nothing (q8_0 keys cost Qwen2.5-Coder
// 0.5B +6.6% perplexity, q4_0 keys +630%).
//
// Per layer and KV channel j, a key is stored as k'_j = (k_j - mean_j) * scale_j and its
// queries are multiplied by 1 / scale_j, which leaves every score exact but for q . mean, the
// same for every position a query reads, so softmax drops it. Both come from a short
// calibration run (model/key_calibration_run.h):
//   mean_j  = E[k_j],
//   scale_j = (E[q_j^2] / Var[k_j])^(1/4),
// which minimises the variance of the score error sum_j q_j e_j when one block scale spans
// channels of equal magnitude (SmoothQuant's balance with alpha = 1/2, on the channels' spread
// rather than their peaks): channels whose queries are large get more of the levels.
//
// The key at a sequence's position 0 is another matter: whatever the token, it is far from
// the others (the attention sink: most heads put most of their weight on it), so it spends
// its block scales on its own size, and the rounding of the one key that most weights fall on
// moves them all. It is stored as its difference from the calibrated first-position key,
//   k'_j = (k_j - mean_j - first_j) * scale_j,   first_j = E[k_j at position 0] - mean_j,
// which is small, and attention adds q . first back to its score alone (PagedKvRows::
// first_key). Over 56k tokens of text, this took Qwen2.5-Coder-0.5B's q4_0 perplexity cost
// from +3.6% to +1.9% (bench/RESULTS.md).
#pragma once

#include <cstdint>
#include <vector>

namespace kite {

struct KeyCalibration {
    int64_t width = 0;               // KV channels per layer: n_kv_heads * head_dim
    std::vector<float> mean;         // [layer][width]
    std::vector<float> scale;        // [layer][width]
    std::vector<float> query_scale;  // [layer][width]: 1 / scale
    std::vector<float> first;        // [layer][width]: E[k at position 0] - mean

    bool empty() const { return width == 0; }
    const float* query_scale_of(int64_t layer) const { return query_scale.data() + layer * width; }
    // One token's keys of `layer` (width values) as they are stored, in place (`first_position`:
    // the token is at its sequence's position 0); undo turns them back.
    void apply(int64_t layer, bool first_position, float* k) const;
    void undo(int64_t layer, bool first_position, float* k) const;
    // The first-position key's part that position 0 does not store, as stored keys are
    // (centred and scaled, not rotated).
    std::vector<float> stored_first(int64_t layer) const;
};

// Sums of keys and queries over the tokens of a calibration run.
class KeyStatistics {
  public:
    KeyStatistics(int64_t n_layers, int64_t n_heads, int64_t n_kv_heads, int64_t head_dim);

    // One token's queries (n_heads * head_dim) and keys (n_kv_heads * head_dim) in `layer`,
    // after RoPE: as attention sees them. Tokens at position 0 also count towards the
    // first-position key.
    void add(int64_t layer, int64_t position, const float* q, const float* k);

    // kite::Error before any token was added.
    KeyCalibration calibration() const;

  private:
    int64_t n_layers_, n_heads_, n_kv_heads_, head_dim_, width_;
    std::vector<int64_t> tokens_, firsts_;                         // [layer]
    std::vector<double> k_sum_, k_sum_sq_, q_sum_sq_, first_sum_;  // [layer][width]
};

}  // namespace kite
