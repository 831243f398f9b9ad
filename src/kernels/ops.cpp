#include "kernels/ops.h"

#include <cmath>

namespace kite {

void rms_norm(const float* x, const float* weight, float* out, int64_t n, float eps) {
    double sum = 0;  // double: a long row of squares loses bits in float
    for (int64_t i = 0; i < n; ++i) sum += double(x[i]) * x[i];
    const float scale = 1.0f / std::sqrt(static_cast<float>(sum / n) + eps);
    for (int64_t i = 0; i < n; ++i) out[i] = x[i] * scale * weight[i];
}

void rope(float* head, int64_t n_rot, int64_t position, float freq_base, RopeStyle style) {
    const float theta_scale = std::pow(freq_base, -2.0f / static_cast<float>(n_rot));
    float theta = static_cast<float>(position);
    for (int64_t i = 0; i < n_rot / 2; ++i) {
        const float c = std::cos(theta), s = std::sin(theta);
        const int64_t a = style == RopeStyle::Interleaved ? 2 * i : i;
        const int64_t b = style == RopeStyle::Interleaved ? 2 * i + 1 : i + n_rot / 2;
        const float x0 = head[a], x1 = head[b];
        head[a] = x0 * c - x1 * s;
        head[b] = x0 * s + x1 * c;
        theta *= theta_scale;
    }
}

void swiglu(float* gate, const float* up, int64_t n) {
    for (int64_t i = 0; i < n; ++i) gate[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
}

void add_in_place(float* x, const float* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) x[i] += y[i];
}

}  // namespace kite
