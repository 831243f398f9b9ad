#include "kv/key_calibration.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace kite {

void KeyCalibration::apply(int64_t layer, bool first_position, float* k) const {
    const int64_t base = layer * width;
    for (int64_t j = 0; j < width; ++j) {
        const float offset = mean[base + j] + (first_position ? first[base + j] : 0.0f);
        k[j] = (k[j] - offset) * scale[base + j];
    }
}

void KeyCalibration::undo(int64_t layer, bool first_position, float* k) const {
    const int64_t base = layer * width;
    for (int64_t j = 0; j < width; ++j) {
        const float offset = mean[base + j] + (first_position ? first[base + j] : 0.0f);
        k[j] = k[j] * query_scale[base + j] + offset;
    }
}

std::vector<float> KeyCalibration::stored_first(int64_t layer) const {
    std::vector<float> k(static_cast<size_t>(width));
    for (int64_t j = 0; j < width; ++j) k[j] = first[layer * width + j] * scale[layer * width + j];
    return k;
}

KeyStatistics::KeyStatistics(int64_t n_layers, int64_t n_heads, int64_t n_kv_heads,
                             int64_t head_dim)
    : n_layers_(n_layers),
      n_heads_(n_heads),
      n_kv_heads_(n_kv_heads),
      head_dim_(head_dim),
      width_(n_kv_heads * head_dim),
      tokens_(static_cast<size_t>(n_layers)),
      firsts_(tokens_.size()),
      k_sum_(static_cast<size_t>(n_layers * width_)),
      k_sum_sq_(k_sum_.size()),
      q_sum_sq_(k_sum_.size()),
      first_sum_(k_sum_.size()) {}

void KeyStatistics::add(int64_t layer, int64_t position, const float* q, const float* k) {
    const int64_t base = layer * width_, group = n_heads_ / n_kv_heads_;
    if (position == 0) {
        for (int64_t j = 0; j < width_; ++j) first_sum_[base + j] += k[j];
        firsts_[layer]++;
    }
    for (int64_t j = 0; j < width_; ++j) {
        k_sum_[base + j] += k[j];
        k_sum_sq_[base + j] += static_cast<double>(k[j]) * k[j];
    }
    // A KV channel serves the same channel of each query head in its group.
    for (int64_t h = 0; h < n_heads_; ++h)
        for (int64_t j = 0; j < head_dim_; ++j) {
            const double x = q[h * head_dim_ + j];
            q_sum_sq_[base + (h / group) * head_dim_ + j] += x * x / static_cast<double>(group);
        }
    tokens_[layer]++;
}

KeyCalibration KeyStatistics::calibration() const {
    KeyCalibration c;
    c.width = width_;
    const auto n = static_cast<size_t>(n_layers_ * width_);
    c.mean.resize(n);
    c.scale.resize(n);
    c.query_scale.resize(n);
    c.first.resize(n);
    std::vector<double> spread(static_cast<size_t>(width_)), weight(spread.size()),
        scale(spread.size());
    for (int64_t l = 0; l < n_layers_; ++l) {
        if (tokens_[l] == 0) fail("key calibration: no token reached layer {}", l);
        const auto count = static_cast<double>(tokens_[l]);
        double mean_spread = 0, mean_weight = 0;
        for (int64_t j = 0; j < width_; ++j) {
            const int64_t i = l * width_ + j;
            const double mean = k_sum_[i] / count;
            c.mean[i] = static_cast<float>(mean);
            // No first-position sample: position 0 is stored like the others.
            if (firsts_[l] > 0)
                c.first[i] = static_cast<float>(first_sum_[i] / double(firsts_[l]) - mean);
            spread[j] = std::max(0.0, k_sum_sq_[i] / count - mean * mean);
            weight[j] = q_sum_sq_[i] / count;
            mean_spread += spread[j] / static_cast<double>(width_);
            mean_weight += weight[j] / static_cast<double>(width_);
        }
        // A channel that never varies, or that no query reads, must not get an unbounded
        // scale: each term has a floor of a millionth of its layer's mean.
        double log_sum = 0;
        for (int64_t j = 0; j < width_; ++j) {
            scale[j] = std::pow(
                (weight[j] + 1e-6 * mean_weight + 1e-30) / (spread[j] + 1e-6 * mean_spread + 1e-30),
                0.25);
            log_sum += std::log(scale[j]);
        }
        // Scaled to a geometric mean of 1: only the ratios between channels matter.
        const double norm = std::exp(-log_sum / static_cast<double>(width_));
        for (int64_t j = 0; j < width_; ++j) {
            const int64_t i = l * width_ + j;
            c.scale[i] = static_cast<float>(scale[j] * norm);
            c.query_scale[i] = 1.0f / c.scale[i];
        }
    }
    return c;
}

}  // namespace kite
