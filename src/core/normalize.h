// Scaling a vector to unit length (embeddings are compared by cosine, so they are L2-normalised).
#pragma once

#include <cmath>
#include <cstdint>

namespace kite {

// Scales v[0..n) to unit Euclidean length; a zero vector stays zero.
inline void normalize_l2(float* v, int64_t n) {
    double sum = 0;  // double: 768 squares of small values lose bits in float
    for (int64_t i = 0; i < n; ++i) sum += double(v[i]) * v[i];
    if (sum <= 0) return;
    const auto scale = static_cast<float>(1.0 / std::sqrt(sum));
    for (int64_t i = 0; i < n; ++i) v[i] *= scale;
}

}  // namespace kite
